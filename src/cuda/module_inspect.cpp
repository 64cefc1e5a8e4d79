// sk_module_inspect on the CUDA backend: a module read as a device of the spec's architecture
// reads it, and each kernel it declares taken as sk_module_get_kernel takes it, without a GPU:
// launch facts, device API, and for PTX its rewrites; a kernel that cannot be taken says why,
// and which launch facts to give where nothing else refuses it.
#include <string_view>
#include <unordered_set>

#include "common/error.hpp"
#include "common/json_writer.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/kernel_facts_json.hpp"
#include "cuda/module_set.hpp"
#include "cuda/open.hpp"

namespace sk::cuda {
namespace {

const char *kind_name(InputKind k) {
  switch (k) {
    case InputKind::Cubin: return "cubin";
    case InputKind::Ptx: return "ptx";
    case InputKind::LtoIr: return "lto-ir";
  }
  return "unknown";
}

}  // namespace

sk_status inspect_cuda_module(const char *spec, const void *image, size_t size, std::string *json) {
  CudaSpec parsed;
  if (sk_status st = parse_cuda_spec(spec, &parsed); st != SK_OK) return st;
  if (parsed.arch.empty())
    return fail(SK_ERR_INVALID_ARGUMENT,
                "sk_module_inspect: device spec \"%s\" names no architecture; without a GPU give it (arch=sm_XY)",
                spec);
  std::shared_ptr<const CudaModule> m;
  const std::string label = backend::memory_image_label(size);
  CudaModuleCache objects;  // an archive's members, read for this call alone
  if (const std::vector<backend::ModuleImage> images{{label, image, size}}; is_module_set(images)) {
    if (sk_status st = load_module_set(images, parsed.arch, objects, "sk_module_inspect", &m); st != SK_OK)
      return st;
  } else if (sk_status st = load_cuda_module(image, size, label, &m, parsed.arch); st != SK_OK) {
    return st;
  }
  std::vector<std::string> names;
  for (const KernelMetadata &k : m->declared_kernels()) names.push_back(k.name);
  if (m->ptx) {
    std::unordered_set<std::string_view> seen;  // views of the module's names, which stay put
    for (const KernelMetadata &k : m->declared_kernels()) seen.insert(k.name);
    for (const PtxKernel &k : m->ptx->kernels)
      if (seen.insert(k.name).second) names.push_back(k.name);
  }
  JsonWriter j;
  j.begin_object();
  j.key("module").value(m->label);
  j.key("kind").value(m->library ? "library" : m->set ? "archive" : kind_name(m->kind));
  j.key("arch").value(parsed.arch);
  if (m->set) {  // its members of device code, each a module; its kernels say which and what they link
    j.key("objects").begin_array();
    for (const auto &o : m->set->objects) j.value(o->label);
    j.end_array();
  }
  // An LTO-IR module's __global__ kernels are read from the PTX its IR links to (a library's
  // from several, whose facts each kernel's own say).
  const std::shared_ptr<const CudaModule> one_part = m->ptx_units.size() == 1 ? m->ptx_unit(0) : nullptr;
  if (const CudaModule *read = m->ptx ? m.get() : one_part.get()) {
    j.key("ptx").begin_object();
    write_ptx_module_facts(j, *read->ptx);
    j.end_object();
  }
  j.key("kernels").begin_array();
  for (const std::string &name : names) {
    std::shared_ptr<CudaKernel> k;
    j.begin_object();
    if (make_cuda_kernel(m, name.c_str(), backend::KernelRequest{}, "sk_module_get_kernel", &k) == SK_OK) {
      write_kernel_facts(j, *k);
    } else {
      // Refused for want of launch facts its binary does not say: which, and what it would be
      // with stand-ins for them (nothing else refuses it).
      const std::string refusal = last_error();
      backend::KernelRequest stand_ins;
      stand_ins.stand_ins = true;
      if (make_cuda_kernel(m, name.c_str(), stand_ins, "sk_module_get_kernel", &k) == SK_OK &&
          !k->stand_ins.empty()) {
        write_kernel_facts(j, *k);
        j.key("needs").begin_array();
        for (const std::string &field : k->stand_ins) j.value(field);
        j.end_array();
      } else {
        j.key("name").value(name);
      }
      j.key("error").value(refusal);
    }
    j.end_object();
  }
  j.end_array();
  j.end_object();
  *json = j.str();
  return SK_OK;
}

}  // namespace sk::cuda
