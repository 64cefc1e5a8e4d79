#include "cuda/superkernel_build.hpp"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "common/error.hpp"
#include "cuda/disk_cache.hpp"
#include "cuda/nvjitlink.hpp"

namespace sk::cuda {
namespace {

// Linked cubins by XXH3-128 of their key material (link_material). Bounded: super kernels are
// built once per scope, so a plain size cap is enough to keep a long-running process from growing.
constexpr size_t kCacheCap = 256;

struct CacheEntry {
  std::string material;  // compared on a hit: a hash match alone is not trusted
  std::shared_ptr<const std::vector<uint8_t>> cubin;
};

std::mutex g_cache_mutex;
std::map<LinkKey, CacheEntry> &cache() {
  static std::map<LinkKey, CacheEntry> c;
  return c;
}
std::atomic<uint64_t> g_links{0};

// Everything that decides the linked cubin: libsk's version (it writes the entry and reads the
// result), nvJitLink's options, and each input's kind, label and content hash, the entry's
// PTX in full.
std::string link_material(const std::vector<LinkInput> &inputs, const std::vector<const CudaModule *> &modules,
                          const std::string &arch, uint32_t max_registers) {
  std::string m = std::string("libsk ") + sk_version_string() + "\n";
  for (const std::string &o : NvJitLink::link_options(inputs, arch, max_registers)) m += o + "\n";
  for (const CudaModule *mod : modules) {
    char h[64];
    std::snprintf(h, sizeof h, "%d %016llx%016llx ", (int)mod->kind, (unsigned long long)mod->hash_hi,
                  (unsigned long long)mod->hash_lo);
    m += h + mod->label + "\n";
  }
  m.append(static_cast<const char *>(inputs[0].data), inputs[0].size);
  return m;
}

LinkKey link_key(const std::string &material) {
  const XXH128_hash_t h = XXH3_128bits(material.data(), material.size());
  return {h.low64, h.high64};
}

}  // namespace

uint32_t entry_register_cap(const std::vector<std::shared_ptr<CudaKernel>> &kernels) {
  uint32_t most = kEntryRegisterFloor;
  for (const auto &k : kernels) {
    if (!k->registers) return 0;  // LTO-IR: compiled in the link, its needs are unknown
    most = std::max(most, k->registers);
  }
  return most;
}

size_t param_space_bytes(int driver_version) { return driver_version >= 12010 ? 32764 : 4096; }

sk_status agree_on_threads(const std::string &name, const std::vector<std::shared_ptr<CudaKernel>> &kernels,
                           const std::vector<std::string> &step_names, uint32_t *threads) {
  if (kernels.empty()) return fail(SK_ERR_STATE, "super kernel '%s' has no sub-kernels", name.c_str());
  for (size_t i = 1; i < kernels.size(); ++i)
    if (kernels[i]->threads != kernels[0]->threads)
      return fail(SK_ERR_INCOMPATIBLE,
                  "super kernel '%s': sub-kernels must agree on threads per block, but '%s' (step 0) runs %u and "
                  "'%s' (step %zu) runs %u (SK_KERNEL_CUDA's threads)",
                  name.c_str(), step_names[0].c_str(), kernels[0]->threads, step_names[i].c_str(), i,
                  kernels[i]->threads);
  *threads = kernels[0]->threads;
  return SK_OK;
}

sk_status make_entry_spec(const BuildRequest &req, uint32_t threads, EntrySpec *out) {
  const Plan &plan = *req.plan;
  EntrySpec spec;
  spec.arch = req.arch;
  spec.threads = threads;
  spec.timeout_ns = req.timeout_ns;
  spec.id = req.id;
  spec.arg_slots = (uint32_t)req.arg_slots;
  for (const auto &k : req.kernels) spec.dynamic_shared = std::max(spec.dynamic_shared, k->dynamic_shared);
  spec.args = req.force_buffer || 8 * req.arg_slots + kParamReserved > req.param_bytes ? ArgSource::Buffer
                                                                                       : ArgSource::Params;
  uint32_t slot = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &ps = plan.steps[i];
    const CudaKernel &k = *req.kernels[i];
    if (is_mixed(ps.kernel.kind))
      return fail(SK_ERR_UNSUPPORTED,
                  "super kernel '%s': kernel %zu '%s' is a mixed (%s) kernel; CUDA devices have one core type",
                  req.name.c_str(), i, ps.kernel.name.c_str(), kernel_kind_name(ps.kernel.kind));
    EntryStep s;
    s.symbol = k.symbol;
    s.signature = k.signature;
    s.block_dim = ps.kernel.block_dim;
    s.cores = ps.units;
    s.first = ps.first_unit;
    s.wait_in_kernel = ps.wait_in_kernel;
    s.arrive_in_kernel = ps.arrive_in_kernel;
    s.gm_flush = ps.cache.per_access_flush;
    s.dcci_before = ps.cache.flush_before;
    s.dcci_after = ps.cache.flush_after;
    s.arg_base = slot;
    slot += (uint32_t)k.signature.size();
    // Without stream fusion a step waits for the one before it (which waited for its own
    // predecessor: the chain orders them all) and the scope events' steps; with it, for its
    // stream predecessor and the events' steps only.
    std::vector<uint32_t> deps = ps.after;
    if (plan.streams) {
      if (ps.pred >= 0) deps.push_back((uint32_t)ps.pred);
    } else if (i > 0) {
      deps.push_back((uint32_t)(i - 1));
    }
    for (uint32_t d : deps) {
      if (d >= i)
        return fail(SK_ERR_STATE, "super kernel '%s': step %zu waits for step %u, which does not come before it",
                    req.name.c_str(), i, d);
      bool seen = false;
      for (uint32_t e : s.deps) seen |= e == d;
      if (!seen) s.deps.push_back(d);
    }
    spec.steps.push_back(std::move(s));
  }
  *out = std::move(spec);
  return SK_OK;
}

sk_status build_superkernel(const BuildRequest &req, BuiltImage *out) {
  std::vector<std::string> names;
  for (const PlanStep &ps : req.plan->steps) names.push_back(ps.kernel.name);
  uint32_t threads = 0;
  if (sk_status st = agree_on_threads(req.name, req.kernels, names, &threads); st != SK_OK) return st;
  EntrySpec spec;
  if (sk_status st = make_entry_spec(req, threads, &spec); st != SK_OK) return st;
  BuiltImage img;
  img.ptx = generate_entry_ptx(spec);
  img.table = step_table(spec);
  img.entry = spec.entry_name;
  img.threads = threads;
  img.args = spec.args;
  img.dynamic_shared = entry_dynamic_shared(spec);

  // Each module once, in first-use order.
  std::vector<const CudaModule *> modules;
  for (const auto &k : req.kernels) {
    bool seen = false;
    for (const CudaModule *m : modules) seen |= m == k->module.get();
    if (!seen) modules.push_back(k->module.get());
  }
  // A cubin holds SASS for one architecture: say so before nvJitLink says "bad input".
  const unsigned target =
      (unsigned)std::strtoul(req.arch.c_str() + (req.arch.rfind("sm_", 0) == 0 ? 3 : 0), nullptr, 10);
  for (const CudaModule *m : modules)
    if (m->kind == InputKind::Cubin && m->cubin.sm && m->cubin.sm != target)
      return fail(SK_ERR_INCOMPATIBLE,
                  "super kernel '%s': %s holds SASS for sm_%u, but the target is %s; rebuild it with -arch=%s "
                  "or ship LTO-IR (nvcc -dc -dlto -ltoir)",
                  req.name.c_str(), m->label.c_str(), m->cubin.sm, req.arch.c_str(), req.arch.c_str());
  std::vector<LinkInput> inputs;
  inputs.push_back({InputKind::Ptx, img.ptx.data(), img.ptx.size(), req.name + " (generated entry)"});
  for (const CudaModule *m : modules) inputs.push_back({m->kind, m->bytes.data(), m->bytes.size(), m->label});
  const uint32_t max_registers = entry_register_cap(req.kernels);
  std::string material = link_material(inputs, modules, req.arch, max_registers);
  const LinkKey key = link_key(material);
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (auto it = cache().find(key); it != cache().end() && it->second.material == material) {
      img.cubin = it->second.cubin;
      img.cached = true;
    }
  }
  const bool in_memory = img.cubin != nullptr;
  // Another process may have linked it: the disk cache checks its file against the key.
  if (!img.cubin) {
    auto cubin = std::make_shared<std::vector<uint8_t>>();
    if (disk_cache_load(key, cubin.get())) {
      img.cubin = std::move(cubin);
      img.cached = true;
    }
  }
  if (!img.cubin) {
    std::shared_ptr<const NvJitLink> linker;
    if (sk_status st = NvJitLink::get(&linker); st != SK_OK) {
      prefix_error("super kernel '" + req.name + "'");
      return st;
    }
    auto cubin = std::make_shared<std::vector<uint8_t>>();
    if (sk_status st = linker->link(inputs, req.arch, "super kernel '" + req.name + "'", cubin.get(), max_registers);
        st != SK_OK)
      return st;
    ++g_links;
    disk_cache_store(key, *cubin);
    img.cubin = std::move(cubin);
  }
  if (!in_memory) {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (cache().size() >= kCacheCap) cache().clear();
    cache().insert_or_assign(key, CacheEntry{std::move(material), img.cubin});
  }
  if (sk_status st = elf::parse_cubin(img.cubin->data(), img.cubin->size(), "linked super kernel '" + req.name + "'",
                                      &img.info);
      st != SK_OK)
    return st;
  const elf::CubinFunction *entry = img.info.find(img.entry);
  if (!entry || !entry->entry)
    return fail(SK_ERR_DEVICE, "super kernel '%s': the linked cubin has no entry '%s'", req.name.c_str(),
                img.entry.c_str());
  img.static_shared = entry->shared_bytes;
  *out = std::move(img);
  return SK_OK;
}

sk_status replanned_table(const BuildRequest &req, const BuiltImage &linked, std::vector<uint32_t> *table) {
  EntrySpec spec;
  if (sk_status st = make_entry_spec(req, linked.threads, &spec); st != SK_OK) return st;
  std::vector<uint32_t> t = step_table(spec);
  if (generate_entry_ptx(spec) != linked.ptx || t.size() != linked.table.size())
    return fail(SK_ERR_STATE, "super kernel '%s': the re-planned steps need another entry than the one linked",
                req.name.c_str());
  *table = std::move(t);
  return SK_OK;
}

void clear_link_cache() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  cache().clear();
}

size_t link_cache_size() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  return cache().size();
}

uint64_t link_count() { return g_links.load(); }

}  // namespace sk::cuda
