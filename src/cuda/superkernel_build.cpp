#include "cuda/superkernel_build.hpp"

#include <xxhash.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "core/error.hpp"
#include "cuda/nvjitlink.hpp"

namespace sk::cuda {
namespace {

// Linked cubins by XXH3-128 of (PTX, module hashes, arch). Bounded: super kernels are built
// once per scope, so a plain size cap is enough to keep a long-running process from growing.
constexpr size_t kCacheCap = 256;

struct CacheKey {
  uint64_t lo, hi;
  bool operator<(const CacheKey &o) const { return lo != o.lo ? lo < o.lo : hi < o.hi; }
};

std::mutex g_cache_mutex;
std::map<CacheKey, std::shared_ptr<const std::vector<uint8_t>>> &cache() {
  static std::map<CacheKey, std::shared_ptr<const std::vector<uint8_t>>> c;
  return c;
}

CacheKey cache_key(const std::string &ptx, const std::vector<const CudaModule *> &modules, const std::string &arch) {
  XXH3_state_t *state = XXH3_createState();
  if (!state) throw std::bad_alloc();
  XXH3_128bits_reset(state);
  XXH3_128bits_update(state, arch.data(), arch.size());
  XXH3_128bits_update(state, ptx.data(), ptx.size());
  for (const CudaModule *m : modules) {
    const uint64_t h[2] = {m->hash_lo, m->hash_hi};
    XXH3_128bits_update(state, h, sizeof h);
  }
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return {h.low64, h.high64};
}

}  // namespace

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
  spec.args = req.force_buffer || 8 * req.arg_slots > kParamSlotBytes ? ArgSource::Buffer : ArgSource::Params;
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
  img.entry = spec.entry_name;
  img.threads = threads;
  img.args = spec.args;

  // Each module once, in first-use order.
  std::vector<const CudaModule *> modules;
  for (const auto &k : req.kernels) {
    bool seen = false;
    for (const CudaModule *m : modules) seen |= m == k->module.get();
    if (!seen) modules.push_back(k->module.get());
  }
  // A cubin holds SASS for one architecture: say so before nvJitLink says "bad input".
  const unsigned target = (unsigned)std::strtoul(req.arch.c_str() + (req.arch.rfind("sm_", 0) == 0 ? 3 : 0), nullptr, 10);
  for (const CudaModule *m : modules)
    if (m->kind == InputKind::Cubin && m->cubin.sm && m->cubin.sm != target)
      return fail(SK_ERR_INCOMPATIBLE,
                  "super kernel '%s': %s holds SASS for sm_%u, but the target is %s; rebuild it with -arch=%s "
                  "or ship LTO-IR (nvcc -dc -dlto -ltoir)",
                  req.name.c_str(), m->label.c_str(), m->cubin.sm, req.arch.c_str(), req.arch.c_str());
  const CacheKey key = cache_key(img.ptx, modules, req.arch);
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (auto it = cache().find(key); it != cache().end()) {
      img.cubin = it->second;
      img.cached = true;
    }
  }
  if (!img.cubin) {
    std::shared_ptr<const NvJitLink> linker;
    if (sk_status st = NvJitLink::get(&linker); st != SK_OK) {
      prefix_error("super kernel '" + req.name + "'");
      return st;
    }
    std::vector<LinkInput> inputs;
    inputs.push_back({InputKind::Ptx, img.ptx.data(), img.ptx.size(), req.name + " (generated entry)"});
    for (const CudaModule *m : modules) inputs.push_back({m->kind, m->bytes.data(), m->bytes.size(), m->label});
    auto cubin = std::make_shared<std::vector<uint8_t>>();
    if (sk_status st = linker->link(inputs, req.arch, "super kernel '" + req.name + "'", cubin.get()); st != SK_OK)
      return st;
    img.cubin = std::move(cubin);
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (cache().size() >= kCacheCap) cache().clear();
    cache().emplace(key, img.cubin);
  }
  if (sk_status st = elf::parse_cubin(img.cubin->data(), img.cubin->size(), "linked super kernel '" + req.name + "'",
                                      &img.info);
      st != SK_OK)
    return st;
  const elf::CubinFunction *entry = img.info.find(img.entry);
  if (!entry || !entry->entry)
    return fail(SK_ERR_DEVICE, "super kernel '%s': the linked cubin has no entry '%s'", req.name.c_str(),
                img.entry.c_str());
  *out = std::move(img);
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

}  // namespace sk::cuda
