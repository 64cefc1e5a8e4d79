#include "cuda/kernel_facts_json.hpp"

#include "common/device_api_usage.hpp"

namespace sk::cuda {

void write_dims(JsonWriter &j, const char *key, const uint32_t d[3]) {
  if (!d[0]) return;
  j.key(key).begin_array();
  for (int i = 0; i < 3; ++i) j.value(uint64_t{d[i]});
  j.end_array();
}

void write_kernel_facts(JsonWriter &j, const CudaKernel &k) {
  j.key("name").value(k.symbol);
  j.key("module").value(k.module->label);
  if (!k.links.empty()) {  // the objects of its set it is linked with
    j.key("linked_with").begin_array();
    for (const auto &l : k.links) j.value(l->label);
    j.end_array();
  }
  j.key("signature").value(signature_to_string(k.signature));
  if (k.plain) j.key("plain_launch").value(true);
  j.key("threads").value(uint64_t{k.threads});
  j.key("threads_from").value(k.threads_from);
  write_dims(j, "block", k.block);
  j.key("static_shared_bytes").value(uint64_t{k.static_shared});
  j.key("dynamic_shared_bytes").value(uint64_t{k.dynamic_shared});
  if (!k.dynamic_shared_from.empty()) j.key("dynamic_shared_from").value(k.dynamic_shared_from);
  write_dims(j, "cluster", k.cluster);
  if (!k.cluster_from.empty()) j.key("cluster_from").value(k.cluster_from);
  j.key("device_api").begin_array();
  for (const char *name : device_api_names(k.usage)) j.value(name);
  j.end_array();
  if (!k.ptx) return;
  const PtxKernel &p = *k.ptx;
  j.key("ptx").begin_object();
  j.key("entry").value(p.entry);
  write_dims(j, "reqntid", p.reqntid);
  write_dims(j, "maxntid", p.maxntid);
  if (p.min_blocks_per_sm) j.key("min_blocks_per_sm").value(uint64_t{p.min_blocks_per_sm});
  if (p.max_registers) j.key("max_registers").value(uint64_t{p.max_registers});
  j.key("rewrites").begin_array();
  for (const std::string &r : p.rewrites) j.value(r);
  j.end_array();
  j.end_object();
}

void write_ptx_module_facts(JsonWriter &j, const PtxModule &m) {
  j.key("version").value(m.version);
  j.key("target").value(m.target);
  j.key("link_arch").value(m.link_arch);
  j.key("rewrites").begin_array();
  for (const std::string &r : m.rewrites) j.value(r);
  j.end_array();
}

}  // namespace sk::cuda
