#include "cuda/superkernel_build.hpp"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "common/error.hpp"
#include "cuda/disk_cache.hpp"
#include "cuda/nvjitlink.hpp"
#include "cuda/ptx_join.hpp"
#include "cuda/ptx_prune.hpp"
#include "cuda/ptx_special_registers.hpp"
#include "elf/cubin_shared_overlay.hpp"
#include "elf/fatbin.hpp"

namespace sk::cuda {
namespace {

// Linked cubins by XXH3-128 of their key material (link_material). Bounded: super kernels are
// built once per scope, so a plain size cap is enough to keep a long-running process from growing.
constexpr size_t kCacheCap = 256;

// Where a plain launch of a kernel without static __shared__ variables starts its dynamic
// shared memory (past sm_80+'s 1 KiB reservation): the sub-kernels' base in a super kernel too.
constexpr uint32_t kDynamicSharedAlign = 1024;

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
// result), nvJitLink's options, and each input's kind, label and the content hash of the bytes
// linked (a cubin's after its shared overlay rewrite), the entry's PTX in full.
std::string link_material(const std::vector<LinkInput> &inputs, const std::string &arch, uint32_t max_registers) {
  std::string m = std::string("libsk ") + sk_version_string() + "\n";
  for (const std::string &o : NvJitLink::link_options(inputs, arch, max_registers)) m += o + "\n";
  for (size_t i = 1; i < inputs.size(); ++i) {
    const XXH128_hash_t h = XXH3_128bits(inputs[i].data, inputs[i].size);
    char text[64];
    std::snprintf(text, sizeof text, "%d %016llx%016llx ", (int)inputs[i].kind, (unsigned long long)h.high64,
                  (unsigned long long)h.low64);
    m += text + inputs[i].label + "\n";
  }
  m.append(static_cast<const char *>(inputs[0].data), inputs[0].size);
  return m;
}

// Each module of the kernels once, in first-use order, each after the objects of its set it
// links (CudaKernel::links).
std::vector<const CudaModule *> linked_modules(const std::vector<std::shared_ptr<CudaKernel>> &kernels) {
  std::vector<const CudaModule *> modules;
  auto add = [&](const CudaModule *m) {
    if (std::find(modules.begin(), modules.end(), m) == modules.end()) modules.push_back(m);
  };
  for (const auto &k : kernels) {
    for (const std::shared_ptr<const CudaModule> &l : k->links) add(l.get());
    add(k->module.get());
  }
  return modules;
}

// The modules whose static __shared__ variables the overlay lays out, in link order: the cubins
// and the PTX modules (their call graphs in the cubin reader's form). A cubin for sm_100 and
// later also carries its symbols and relocations in a second form (.nv.merc.symtab,
// .nv.merc.rela.*) that the overlay rewrite leaves as they were; linked beside PTX that names
// the overlay, nvJitLink 13.0 (and nvlink) lays out that form's variables at full size besides
// the overlay. There a PTX module's variables stay in place beside a cubin's.
std::vector<const elf::Cubin *> overlay_graphs(const std::vector<const CudaModule *> &modules,
                                               const std::string &arch) {
  const bool cubins =
      std::any_of(modules.begin(), modules.end(), [](const CudaModule *m) { return m->kind == InputKind::Cubin; });
  bool specific = false;
  const bool ptx_joins = !cubins || elf::arch_number(arch, &specific) < 100;
  std::vector<const elf::Cubin *> graphs;
  for (const CudaModule *m : modules)
    if (m->kind == InputKind::Cubin || (m->ptx && ptx_joins)) graphs.push_back(m->ptx ? &m->ptx->graph : &m->cubin);
  return graphs;
}

// Where a module's call graph stands among the overlay's, or none.
std::optional<uint32_t> overlay_index(const std::vector<const elf::Cubin *> &graphs, const CudaModule *m) {
  const auto at = std::find(graphs.begin(), graphs.end(), m->ptx ? &m->ptx->graph : &m->cubin);
  if (at == graphs.end()) return std::nullopt;
  return (uint32_t)(at - graphs.begin());
}

// The shared overlay of a link: the movable variables laid out for the sub-kernels' call trees
// (none moves in a link with LTO-IR, whose calls are not known before the link).
elf::SharedOverlayLayout overlay_layout(const std::vector<const CudaModule *> &modules, const BuildRequest &req) {
  const std::vector<const elf::Cubin *> graphs = overlay_graphs(modules, req.arch);
  std::set<std::string_view> followed;  // the global functions of the call graphs laid out
  for (const elf::Cubin *g : graphs)
    for (const elf::CubinFunction &f : g->functions)
      if (!f.local) followed.insert(f.name);
  bool lto = false;
  for (const CudaModule *m : modules) {
    lto |= m->kind == InputKind::LtoIr;
    // A call into another module from code compiled in the link: the layout follows it into
    // the module of the link that defines the callee (a module of several objects); a callee
    // it cannot see, or a caller whose graph it does not lay out, may meet variables unseen.
    if (!m->ptx || !m->ptx->calls_outside) continue;
    lto |= !overlay_index(graphs, m);
    for (const elf::CubinFunction &f : m->ptx->graph.functions)
      for (const std::string &callee : f.externs) lto |= !library_function(callee) && !followed.count(callee);
  }
  std::vector<elf::OverlayRoot> roots;
  std::set<std::pair<uint32_t, std::string>> seen;
  for (const auto &k : req.kernels)
    if (const std::optional<uint32_t> g = overlay_index(graphs, k->module.get()))  // else LTO-IR
      if (seen.insert({*g, k->symbol}).second) roots.push_back({*g, k->symbol});
  return elf::layout_shared_overlay(graphs, roots, lto);
}

// The architecture to link for: the device's, or its arch-specific variant (sm_90a) when a PTX
// module targets it, which the device's other code links into.
std::string link_arch(const std::string &arch, const std::vector<const CudaModule *> &modules) {
  for (const CudaModule *m : modules)
    if (m->ptx && m->ptx->link_arch != arch) return m->ptx->link_arch;
  return arch;
}

LinkKey link_key(const std::string &material) {
  const XXH128_hash_t h = XXH3_128bits(material.data(), material.size());
  return {h.low64, h.high64};
}

// Which sub-kernels' static shared memory fills a block, for the link's "too much shared data":
// the largest three (one after another, their variables share the overlay; what does not fit is
// one call tree's, or what stays in place).
std::string static_shared_of(const BuildRequest &req) {
  std::vector<const CudaKernel *> distinct;
  for (const auto &k : req.kernels)
    if (std::find(distinct.begin(), distinct.end(), k.get()) == distinct.end()) distinct.push_back(k.get());
  std::stable_sort(distinct.begin(), distinct.end(),
                   [](const CudaKernel *a, const CudaKernel *b) { return a->static_shared > b->static_shared; });
  std::string out = "the static __shared__ variables of its sub-kernels fill a block's 48 KiB: ";
  for (size_t i = 0; i < distinct.size() && i < 3 && distinct[i]->static_shared; ++i)
    out += (i ? ", '" : "'") + distinct[i]->symbol + "' " + std::to_string(distinct[i]->static_shared) + " bytes";
  return out;
}

// Links the entry `img->ptx` with `modules` (their bytes `rewritten` where a cubin's shared
// overlay moved variables or a PTX module was cut), or finds the cubin in the caches, and reads
// it back.
sk_status link_entry(const BuildRequest &req, const std::string &arch,
                     const std::vector<const CudaModule *> &modules,
                     const std::vector<std::vector<uint8_t>> &rewritten, BuiltImage *img) {
  img->cubin.reset();
  img->cached = false;
  std::vector<LinkInput> inputs;
  inputs.push_back({InputKind::Ptx, img->ptx.data(), img->ptx.size(), req.name + " (generated entry)"});
  for (size_t i = 0; i < modules.size(); ++i) {
    const std::vector<uint8_t> &bytes = rewritten[i].empty() ? modules[i]->bytes : rewritten[i];
    inputs.push_back({modules[i]->kind, bytes.data(), bytes.size(), modules[i]->label});
  }
  const RegisterCaps caps = register_caps(req.kernels, req.plan ? req.plan->options.max_registers : std::nullopt);
  const uint32_t max_registers = caps.link, maxnreg_start = caps.entry_start;
  std::string material = link_material(inputs, arch, max_registers);
  if (maxnreg_start)
    material += "entry .maxnreg from " + std::to_string(maxnreg_start) + ", raised as the link asks\n";
  const LinkKey key = link_key(material);
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (auto it = cache().find(key); it != cache().end() && it->second.material == material) {
      img->cubin = it->second.cubin;
      img->cached = true;
    }
  }
  const bool in_memory = img->cubin != nullptr;
  // Another process may have linked it: the disk cache checks its file against the key.
  if (!img->cubin) {
    auto cubin = std::make_shared<std::vector<uint8_t>>();
    if (disk_cache_load(key, cubin.get())) {
      img->cubin = std::move(cubin);
      img->cached = true;
    }
  }
  if (!img->cubin) {
    std::shared_ptr<const NvJitLink> linker;
    if (sk_status st = NvJitLink::get(&linker); st != SK_OK) {
      prefix_error("super kernel '" + req.name + "'");
      return st;
    }
    auto cubin = std::make_shared<std::vector<uint8_t>>();
    // PTX sub-kernels compile freely in their modules; the entry's .maxnreg caps libsk's own code
    // at the most they need, which a link under too low a cap names (registers_the_link_asks).
    sk_status st = SK_OK;
    std::string capped;
    for (uint32_t maxnreg = maxnreg_start;;) {
      capped = maxnreg ? with_entry_maxnreg(img->ptx, maxnreg) : img->ptx;
      inputs[0].data = capped.data();
      inputs[0].size = capped.size();
      st = linker->link(inputs, arch, "super kernel '" + req.name + "'", cubin.get(), max_registers);
      if (st == SK_OK || !maxnreg) break;
      const uint32_t need = registers_the_link_asks(last_error());
      maxnreg = need > maxnreg && need <= 255 ? need : 0;  // else linked as without the cap, which decides
    }
    if (st != SK_OK) {
      if (std::strstr(last_error(), "too much shared data")) {
        const std::string error = last_error();
        fail(st, "%s (%s)", error.c_str(), static_shared_of(req).c_str());
      }
      // A cap the caller gave that an instruction cannot compile under (wgmma needs 90 or so).
      if (req.plan && req.plan->options.max_registers && std::strstr(last_error(), "Insufficient registers")) {
        const std::string error = last_error();
        return fail(st, "%s (the scope option max-registers=%u caps the link)", error.c_str(), max_registers);
      }
      // PTX written for a newer ISA than nvJitLink's may use what the lowered version lacks.
      std::string lowered;
      for (const CudaModule *m : modules)
        if (m->ptx && !m->ptx->rewrites.empty())
          lowered += (lowered.empty() ? "" : "; ") + m->label + ": " + m->ptx->rewrites.front();
      if (!lowered.empty()) {
        const std::string error = last_error();
        fail(st, "%s (%s: the PTX may use what that version lacks; a newer nvJitLink compiles it as written)",
             error.c_str(), lowered.c_str());
      }
      return st;
    }
    ++g_links;
    disk_cache_store(key, *cubin);
    img->cubin = std::move(cubin);
  }
  if (!in_memory) {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (cache().size() >= kCacheCap) cache().clear();
    cache().insert_or_assign(key, CacheEntry{std::move(material), img->cubin});
  }
  if (sk_status st = elf::parse_cubin(img->cubin->data(), img->cubin->size(),
                                      "linked super kernel '" + req.name + "'", &img->info);
      st != SK_OK)
    return st;
  const elf::CubinFunction *entry = img->info.find(img->entry);
  if (!entry || !entry->entry)
    return fail(SK_ERR_DEVICE, "super kernel '%s': the linked cubin has no entry '%s'", req.name.c_str(),
                img->entry.c_str());
  img->static_shared = entry->shared_bytes;
  // The cap the link had: its -maxrregcount, or the entry's .maxnreg (255 in a cubin: none).
  img->register_cap = max_registers ? max_registers : entry->max_registers < 255 ? entry->max_registers : 0;
  return SK_OK;
}

// With PTX sub-kernels alone, the entry as linked (its shared padding included) and the
// modules' rewritten texts as one program for the driver's JIT.
void join_program(const BuildRequest &req, const std::string &arch, const std::vector<const CudaModule *> &modules,
                  const std::vector<std::vector<uint8_t>> &rewritten, BuiltImage *img) {
  for (const CudaModule *m : modules)
    if (m->kind != InputKind::Ptx || !m->ptx) return;
  const ScopeOptions &options = req.plan->options;
  if (!options.whole_program) {
    img->why_linked = "the scope option whole-program=0";
    return;
  }
  // Compiled whole, a warp that gives registers back would run the later steps with them
  // (and ptxas takes minutes and gigabytes over such a program).
  for (const auto &k : req.kernels)
    if (k->ptx && k->ptx->trades_registers) {
      img->why_linked = "'" + k->symbol + "' reallocates registers between warps (setmaxnreg), which compiled as " +
                        "one program would hold for the steps after it";
      return;
    }
  // ptxas leaves -maxrregcount (the JIT's CU_JIT_MAX_REGISTERS) aside for an entry with
  // .reqntid, as libsk's has; its .maxnreg caps all that the program compiles into it.
  img->program_register_cap = options.max_registers.value_or(0);
  const std::string entry =
      img->program_register_cap ? with_entry_maxnreg(img->ptx, img->program_register_cap) : img->ptx;
  std::vector<PtxPart> parts{{entry, req.name + " (generated entry)"}};
  for (size_t i = 0; i < modules.size(); ++i)  // the texts end with the NUL nvJitLink reads
    parts.push_back(
        {std::string_view((const char *)rewritten[i].data(), rewritten[i].size() - 1), modules[i]->label});
  if (!join_ptx(parts, arch, &img->program_ptx, &img->why_linked)) {
    img->program_ptx.clear();
    img->program_register_cap = 0;
    img->why_linked = "its PTX cannot be one program: " + img->why_linked;
  }
}

}  // namespace

RegisterCaps register_caps(const std::vector<std::shared_ptr<CudaKernel>> &kernels, std::optional<uint32_t> option) {
  if (option) return {*option, 0};
  uint32_t most = kEntryRegisterFloor;
  bool unknown = false, lto = false;  // counts not known before the link: PTX, LTO-IR
  for (const auto &k : kernels) {
    unknown = unknown || !k->registers;
    lto = lto || (k->module && k->module->kind == InputKind::LtoIr);
    most = std::max(most, k->registers);
  }
  if (!unknown) return {most, 0};
  return {0, lto ? 0 : most};
}

std::string with_entry_maxnreg(const std::string &entry_ptx, uint32_t n) {
  const size_t at = entry_ptx.find("\n  .reqntid ");
  if (at == std::string::npos) return entry_ptx;
  const size_t end = entry_ptx.find('\n', at + 1);
  return entry_ptx.substr(0, end + 1) + "  .maxnreg " + std::to_string(n) + "\n" + entry_ptx.substr(end + 1);
}

uint32_t registers_the_link_asks(const char *error) {
  static constexpr char kAsk[] = "with regcount of ";
  uint32_t most = 0;
  for (const char *p = std::strstr(error, kAsk); p; p = std::strstr(p, kAsk)) {
    p += sizeof kAsk - 1;
    most = std::max(most, (uint32_t)std::strtoul(p, nullptr, 10));
  }
  return most;
}

size_t param_space_bytes(int driver_version) { return driver_version >= 12010 ? 32764 : 4096; }

sk_status block_threads(const std::string &name, const std::vector<std::shared_ptr<CudaKernel>> &kernels,
                        const std::vector<std::string> &step_names, uint32_t *threads) {
  if (kernels.empty()) return fail(SK_ERR_STATE, "super kernel '%s' has no sub-kernels", name.c_str());
  size_t widest = 0;
  for (size_t i = 1; i < kernels.size(); ++i)
    if (kernels[i]->threads > kernels[widest]->threads) widest = i;
  const uint32_t block = kernels[widest]->threads;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const CudaKernel &k = *kernels[i];
    if (k.threads == block) continue;
    std::string why;
    if (!k.ptx)
      why = "its barriers (a cubin's or LTO-IR's code) wait for every thread of the block; load its PTX";
    else if (k.threads % 32)
      why = "a part of a warp cannot be left out";
    else
      why = k.ptx->narrow_refusal;
    if (!why.empty())
      return fail(
          SK_ERR_INCOMPATIBLE,
          "super kernel '%s': '%s' (step %zu) runs %u threads per block, fewer than the %u of '%s' (step %zu), "
          "and cannot run on the first %u threads of a block of %u: %s",
          name.c_str(), step_names[i].c_str(), i, k.threads, block, step_names[widest].c_str(), widest, k.threads,
          block, why.c_str());
  }
  *threads = block;
  return SK_OK;
}

std::vector<uint32_t> step_arg_bases(const std::vector<std::shared_ptr<CudaKernel>> &kernels) {
  std::vector<uint32_t> bases;
  size_t slot = 0;
  for (const auto &k : kernels) {
    const size_t align = signature_slot_align(k->signature);
    slot = (slot + align - 1) / align * align;
    bases.push_back((uint32_t)slot);
    slot += signature_slots(k->signature);
  }
  bases.push_back((uint32_t)slot);
  return bases;
}

sk_status make_entry_spec(const BuildRequest &req, uint32_t threads, EntrySpec *out,
                          elf::SharedOverlayLayout *overlay) {
  const Plan &plan = *req.plan;
  EntrySpec spec;
  const std::vector<const CudaModule *> modules = linked_modules(req.kernels);
  elf::SharedOverlayLayout layout = overlay_layout(modules, req);
  spec.shared_overlay_bytes = layout.bytes;
  spec.shared_overlay_align = layout.align;
  spec.arch = link_arch(req.arch, modules);
  spec.threads = threads;
  spec.timeout_ns = req.timeout_ns;
  spec.id = req.id;
  const std::vector<uint32_t> bases = step_arg_bases(req.kernels);
  spec.arg_slots = bases.back();
  for (const auto &k : req.kernels) spec.dynamic_shared = std::max(spec.dynamic_shared, k->dynamic_shared);
  spec.args = req.force_buffer || 8 * size_t{spec.arg_slots} + kParamReserved > req.param_bytes ? ArgSource::Buffer
                                                                                                : ArgSource::Params;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &ps = plan.steps[i];
    const CudaKernel &k = *req.kernels[i];
    if (is_mixed(ps.kernel.kind))
      return fail(SK_ERR_UNSUPPORTED,
                  "super kernel '%s': kernel %zu '%s' is a mixed (%s) kernel; CUDA devices have one core type",
                  req.name.c_str(), i, ps.kernel.name.c_str(), kernel_kind_name(ps.kernel.kind));
    EntryStep s;
    s.symbol = k.module && k.module->ptx ? narrow_call_name(*k.module->ptx, k.symbol, k.threads, threads) : k.symbol;
    s.signature = k.signature;
    s.block_dim = ps.kernel.block_dim;
    s.grid = ps.kernel.grid;
    s.cores = ps.units;
    s.first = ps.first_unit;
    s.wait_in_kernel = ps.wait_in_kernel;
    s.arrive_in_kernel = ps.arrive_in_kernel;
    s.gm_flush = ps.cache.per_access_flush;
    s.dcci_before = ps.cache.flush_before;
    s.dcci_after = ps.cache.flush_after;
    s.arg_base = bases[i];
    s.threads = k.threads;
    s.arg_refs = ps.kernel.arg_refs;
    if (k.ptx) s.by_address = k.ptx->by_address;
    if (k.ptx && k.ptx->reads_block_shape) {  // the caller's shape, else .reqntid's, else one dimension
      const uint32_t *shape = k.block[0] ? k.block : k.ptx->reqntid;
      s.block_shape[0] = shape[0] ? shape[0] : k.threads;
      s.block_shape[1] = shape[0] ? shape[1] : 1;
      s.block_shape[2] = shape[0] ? shape[2] : 1;
    }
    s.arrives = ps.arrives;
    // Without stream fusion a step waits for the one before it (which waited for its own
    // predecessor: the chain orders them all) and the scope events' steps; with it, for its
    // stream predecessor and the events' steps only. A block-local step waits for neither: its
    // block of the predecessor ran in this block of the grid, before the step's block barrier.
    std::vector<uint32_t> deps = ps.after;
    if (!ps.block_local && plan.streams) {
      if (ps.pred >= 0) deps.push_back((uint32_t)ps.pred);
    } else if (!ps.block_local && i > 0) {
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
  // A step no later one waits for counts no arrival, and so ends at one block barrier: only
  // a wait reads its counter (the next run and the next launch are ordered by __sk_next's
  // barrier and by the stream).
  std::vector<bool> awaited(spec.steps.size(), false);
  for (const EntryStep &s : spec.steps)
    for (uint32_t d : s.deps) awaited[d] = true;
  for (size_t i = 0; i < spec.steps.size(); ++i)
    if (!awaited[i]) spec.steps[i].arrives = false;
  *out = std::move(spec);
  if (overlay) *overlay = std::move(layout);
  return SK_OK;
}

sk_status build_superkernel(const BuildRequest &req, BuiltImage *out) {
  std::vector<std::string> names;
  for (const PlanStep &ps : req.plan->steps) names.push_back(ps.kernel.name);
  uint32_t threads = 0;
  if (sk_status st = block_threads(req.name, req.kernels, names, &threads); st != SK_OK) return st;
  EntrySpec spec;
  elf::SharedOverlayLayout overlay;
  if (sk_status st = make_entry_spec(req, threads, &spec, &overlay); st != SK_OK) return st;
  BuiltImage img;
  img.ptx = generate_entry_ptx(spec);
  img.table = step_table(spec);
  img.entry = spec.entry_name;
  img.threads = threads;
  img.args = spec.args;
  img.dynamic_shared = entry_dynamic_shared(spec);

  const std::vector<const CudaModule *> modules = linked_modules(req.kernels);
  // A cubin holds SASS for one architecture: say so before nvJitLink says "bad input".
  bool specific = false;
  const unsigned target = elf::arch_number(req.arch, &specific);
  for (const CudaModule *m : modules)
    if (m->kind == InputKind::Cubin && m->cubin.sm && m->cubin.sm != target)
      return fail(SK_ERR_INCOMPATIBLE,
                  "super kernel '%s': %s holds SASS for sm_%u, but the target is %s; rebuild it with -arch=%s "
                  "or ship LTO-IR (nvcc -dc -dlto -ltoir)",
                  req.name.c_str(), m->label.c_str(), m->cubin.sm, req.arch.c_str(), req.arch.c_str());
  // One function defined by two cubins: nvJitLink refuses the link with an internal error that
  // names neither the function nor the cubins.
  std::map<std::string_view, const CudaModule *> defined;
  for (const CudaModule *m : modules)
    for (const elf::CubinFunction &f : m->cubin.functions)
      if (!f.local && !f.weak)
        if (auto [it, fresh] = defined.emplace(f.name, m); !fresh)
          return fail(SK_ERR_INCOMPATIBLE,
                      "super kernel '%s': function '%s' is defined by %s and by %s; a link holds one definition "
                      "of each function (make one static, rename it, or fuse kernels of one of the two)",
                      req.name.c_str(), f.name.c_str(), it->second->label.c_str(), m->label.c_str());
  // An LTO-IR module's __global__ kernels are its IR compiled: linked beside the IR, every
  // function and variable of it would be defined twice (two copies of a __device__ variable).
  for (const CudaModule *m : modules)
    for (size_t i = 0; i < m->ptx_units.size(); ++i)
      if (const std::shared_ptr<const CudaModule> part = m->ptx_unit_if_read(i);
          part && m->kind == InputKind::LtoIr &&
          std::find(modules.begin(), modules.end(), part.get()) != modules.end()) {
        auto of = [&](const CudaModule *owner) {
          return std::find_if(req.kernels.begin(), req.kernels.end(),
                              [&](const auto &k) { return k->module.get() == owner; })
              ->get()
              ->symbol;
        };
        return fail(SK_ERR_INCOMPATIBLE,
                    "super kernel '%s': '%s' of %s is linked as its LTO-IR and '%s' as the PTX that IR compiles to "
                    "(a __global__ kernel): one link cannot hold both, each defines the module's functions and "
                    "variables; fuse them in two super kernels, or load the module's PTX, which holds both kinds "
                    "(nvcc -ptx -rdc=true, or the host object of nvcc -dc -dlto, which keeps PTX beside the IR)",
                    req.name.c_str(), of(m).c_str(), m->label.c_str(), of(part.get()).c_str());
      }
  // The cubins and PTX modules with their static __shared__ variables moved into the entry's
  // overlay, the PTX cut to what the kernels reach (NUL-terminated: nvJitLink reads PTX as a C
  // string).
  std::vector<std::vector<uint8_t>> rewritten(modules.size());
  const std::vector<const elf::Cubin *> graphs = overlay_graphs(modules, req.arch);
  // Each PTX module's kernels the link takes, and the visible functions the other modules call.
  // Where a module is not PTX (a cubin may call any visible function), every one is kept.
  std::vector<const PtxModule *> ptx;
  std::vector<std::vector<std::string>> taken_of;
  for (const CudaModule *m : modules) {
    ptx.push_back(m->ptx.get());
    taken_of.emplace_back();
    for (const auto &k : req.kernels)
      if (k->module.get() == m) taken_of.back().push_back(k->symbol);
  }
  const bool all_ptx = std::all_of(ptx.begin(), ptx.end(), [](const PtxModule *m) { return m != nullptr; });
  const std::vector<std::set<std::string>> called =
      all_ptx ? called_across(ptx, taken_of) : std::vector<std::set<std::string>>();
  for (size_t i = 0; i < modules.size(); ++i) {
    const std::optional<uint32_t> g = overlay_index(graphs, modules[i]);
    if (modules[i]->ptx) {
      std::vector<std::string> taken;
      std::vector<PtxNarrow> narrow;  // called by narrow_call_name's names (make_entry_spec)
      for (const auto &k : req.kernels) {
        if (k->module.get() != modules[i]) continue;
        if (k->threads < spec.threads)
          narrow.push_back({k->symbol, k->threads});
        else
          taken.push_back(k->symbol);
      }
      const PtxOverlay place{kSharedOverlaySymbol, overlay.bytes, overlay.align, g ? &overlay.offsets[*g] : nullptr};
      const std::string text =
          ptx_text_for(*modules[i]->ptx, taken, g ? &place : nullptr, narrow, all_ptx ? &called[i] : nullptr);
      rewritten[i].assign(text.c_str(), text.c_str() + text.size() + 1);
    }
    if (modules[i]->kind != InputKind::Cubin || !g) continue;
    if (sk_status st = elf::rewrite_shared_overlay(modules[i]->bytes, modules[i]->cubin, modules[i]->label,
                                                   kSharedOverlaySymbol, overlay.offsets[*g], &rewritten[i]);
        st != SK_OK)
      return st;
  }
  if (sk_status st = link_entry(req, spec.arch, modules, rewritten, &img); st != SK_OK) return st;
  // The sub-kernels' extern __shared__ arrays start where the linked entry's static shared
  // memory ends. A plain launch of a kernel without static variables starts them on a 1 KiB
  // boundary, and code may rely on it: Triton's wgmma and TMA tiles are swizzled on absolute
  // addresses. The pad's size is known only from a link, so a misaligned entry is linked again.
  if (spec.dynamic_shared && img.static_shared % kDynamicSharedAlign) {
    const uint32_t unpadded = img.static_shared;
    for (int attempt = 0; attempt < 2 && img.static_shared % kDynamicSharedAlign; ++attempt) {
      spec.shared_pad_bytes += kDynamicSharedAlign - img.static_shared % kDynamicSharedAlign;
      img.ptx = generate_entry_ptx(spec);
      img.shared_pad = spec.shared_pad_bytes;
      if (sk_status st = link_entry(req, spec.arch, modules, rewritten, &img); st != SK_OK) return st;
    }
    if (img.static_shared % kDynamicSharedAlign)
      return fail(SK_ERR_INCOMPATIBLE,
                  "super kernel '%s': its sub-kernels' dynamic shared memory cannot be placed on a %u-byte boundary "
                  "(the linked entry's static shared memory is %u bytes, %u before %u bytes of padding)",
                  req.name.c_str(), kDynamicSharedAlign, img.static_shared, unpadded, spec.shared_pad_bytes);
  }
  join_program(req, spec.arch, modules, rewritten, &img);
  *out = std::move(img);
  return SK_OK;
}

sk_status replanned_table(const BuildRequest &req, const BuiltImage &linked, std::vector<uint32_t> *table) {
  EntrySpec spec;
  if (sk_status st = make_entry_spec(req, linked.threads, &spec); st != SK_OK) return st;
  spec.shared_pad_bytes = linked.shared_pad;
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
