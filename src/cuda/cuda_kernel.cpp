#include "cuda/cuda_kernel.hpp"

#include <algorithm>
#include <string>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "cuda/entry_ptx.hpp"
#include "cuda/module_set.hpp"
#include "cuda/plain_launch.hpp"
#include "cuda/ptx_special_registers.hpp"
#include "elf/shared_overlay_layout.hpp"

namespace sk::cuda {
namespace {

// "a, b, c".
std::string joined(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A signature the caller gives for a PTX kernel: the same parameters in the same slots as its
// PTX declares (a `.u64` may be a pointer or an integer, an aggregate's members any that fill
// its bytes alike).
sk_status check_ptx_signature(const Signature &given, const Signature &ptx, const std::string &what,
                              const char *call) {
  if (given.size() != ptx.size())
    return fail(SK_ERR_INCOMPATIBLE, "%s: %s has %zu parameters in its PTX (%s), not %zu", call, what.c_str(),
                ptx.size(), signature_to_string(ptx).c_str(), given.size());
  for (size_t i = 0; i < given.size(); ++i) {
    const ParamType &g = given[i], &p = ptx[i];
    const bool same = g.is_struct() || p.is_struct()
                          ? g.is_struct() && p.is_struct() && g.size == p.size && g.align == p.align
                          : (arg_size(g) == 8) == (arg_size(p) == 8);
    if (!same)
      return fail(SK_ERR_INCOMPATIBLE, "%s: %s: parameter %zu is %s in its PTX, which %s does not pass", call,
                  what.c_str(), i, type_to_string(p).c_str(), type_to_string(g).c_str());
  }
  return SK_OK;
}

// A PTX kernel's threads per block: the caller's (checked against its directives), its
// `.reqntid`, its sk_kernel.h record, or its `.maxntid`; a `__global__` kernel that says none
// of them needs the caller's.
sk_status ptx_threads(const CudaModule &m, const PtxKernel &pk, uint32_t caller, bool stand_in,
                      const std::string &what, const char *call, CudaKernel *k) {
  const uint32_t req = pk.reqntid[0] * pk.reqntid[1] * pk.reqntid[2];
  const uint32_t max = pk.maxntid[0] * pk.maxntid[1] * pk.maxntid[2];
  if (caller && req && caller != req)
    return fail(SK_ERR_INCOMPATIBLE, "%s: %s requires %u threads per block (.reqntid %u, %u, %u), not %u", call,
                what.c_str(), req, pk.reqntid[0], pk.reqntid[1], pk.reqntid[2], caller);
  if (caller && max && caller > max)
    return fail(SK_ERR_INCOMPATIBLE, "%s: %s runs at most %u threads per block (.maxntid %u, %u, %u), not %u", call,
                what.c_str(), max, pk.maxntid[0], pk.maxntid[1], pk.maxntid[2], caller);
  const auto recorded = m.threads.find(pk.name);
  if (caller) {
    k->threads = caller, k->threads_from = "caller";
  } else if (req) {
    k->threads = req, k->threads_from = ".reqntid";
  } else if (recorded != m.threads.end()) {
    k->threads = recorded->second, k->threads_from = "metadata";
  } else if (max) {
    k->threads = max, k->threads_from = ".maxntid";
  } else if (pk.entry && stand_in) {
    k->threads = kDefaultThreads, k->threads_from = "stand-in";
    k->stand_ins.push_back("threads");
  } else if (pk.entry) {
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: %s does not say its threads per block (no .reqntid or .maxntid, as __launch_bounds__ writes): "
                "give them when taking it (sk_kernel_desc.threads)",
                call, what.c_str());
  }
  return SK_OK;
}

// A PTX kernel's block shape: the caller's `block` (zeros: none) must be its .reqntid where it
// says one; one whose PTX does not give the shape it reads needs it.
sk_status ptx_block(const PtxKernel &pk, const uint32_t block[3], const std::string &what, const char *call) {
  if (block[0] && pk.reqntid[0] &&
      (block[0] != pk.reqntid[0] || block[1] != pk.reqntid[1] || block[2] != pk.reqntid[2]))
    return fail(SK_ERR_INCOMPATIBLE, "%s: %s requires a block of %u x %u x %u threads (.reqntid), not {%u, %u, %u}",
                call, what.c_str(), pk.reqntid[0], pk.reqntid[1], pk.reqntid[2], block[0], block[1], block[2]);
  if (block[0] && !pk.reqntid[0] && !pk.block_shape_needed && block[1] * block[2] > 1)
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: %s reads no thread register beyond x (%%tid.y, %%ntid.y): libsk rebuilds the threads of a "
                "block {%u, %u, %u} only for a kernel that reads them; give it a one-dimensional block",
                call, what.c_str(), block[0], block[1], block[2]);
  if (pk.block_shape_needed && !block[0])
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: %s reads threadIdx.y/z or blockDim.y/z (%%tid.y, %%ntid.y) of a block whose shape its PTX does "
                "not give (no .reqntid): give the shape its launch has when taking it (sk_kernel_desc.block)",
                call, what.c_str());
  return SK_OK;
}

}  // namespace

sk_status make_cuda_kernel(const std::shared_ptr<const CudaModule> &module, const char *name,
                           const backend::KernelRequest &request, const char *call,
                           std::shared_ptr<CudaKernel> *out) {
  const CudaModule &m = *module;
  if (m.set) return make_set_kernel(m, name, request, call, out);
  for (const CudaModule::UnitRef &u : m.units_declaring(name)) {
    const std::shared_ptr<const CudaModule> part = u.sass ? m.sass_unit(u.index) : m.ptx_unit(u.index);
    if (!part)
      return fail(SK_ERR_BAD_BINARY, "%s: kernel '%s': the %s of %s cannot be read: %s", call, name,
                  u.sass ? "cubin" : "PTX",
                  (u.sass ? m.sass_units[u.index].label : m.ptx_units[u.index].label).c_str(),
                  std::string(last_error()).c_str());
    // A PTX unit's scan may take a name wrongly: then the next unit that declares it.
    if (const PtxKernel *g = part->ptx ? part->ptx->find(name) : nullptr; u.sass || (g && g->entry))
      return make_cuda_kernel(part, name, request, call, out);
  }
  if (m.library) {
    std::vector<std::string> names;
    for (const KernelMetadata &k : m.declared_kernels()) names.push_back(k.name);
    return fail(SK_ERR_NOT_FOUND, "%s: no __global__ kernel '%s' in %s (its kernels: %s)", call, name,
                m.label.c_str(), some_names(names).c_str());
  }
  const char *signature = request.signature;
  const std::string what = kernel_of(name, m.label);
  const KernelMetadata *meta = nullptr;
  for (const KernelMetadata &k : m.metadata)
    if (k.name == name) meta = &k;
  auto k = std::make_shared<CudaKernel>();
  const PtxKernel *pk = m.ptx ? m.ptx->find(name) : nullptr;
  if (request.threads > 1024)
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s: threads %u is above 1024, the most a CUDA block has", call,
                what.c_str(), request.threads);
  if (request.dynamic_shared > kMaxDynamicShared)
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s: dynamic_shared %u is above %u, the most a block may opt in to",
                call, what.c_str(), request.dynamic_shared, kMaxDynamicShared);
  if (sk_status st =
          check_cluster_request(request, m.kind == InputKind::Cubin && m.cubin.type != 1 /* ET_REL */, what, call);
      st != SK_OK)
    return st;
  const uint32_t *b = request.block;
  // A stand-in shape for one its PTX reads but does not give: {1, T, 1}, within its .maxntid.
  uint32_t stand_in_block[3] = {1, 0, 1};
  const bool block_stand_in = request.stand_ins && pk && pk->block_shape_needed && !pk->reqntid[0] && !b[0];
  if (block_stand_in) {
    const uint32_t max = pk->maxntid[0] * pk->maxntid[1] * pk->maxntid[2];
    stand_in_block[1] = request.threads ? request.threads : max ? max : kDefaultThreads;
    b = stand_in_block;
  }
  uint32_t threads = request.threads;
  if (b[0] || b[1] || b[2]) {
    const uint64_t product = uint64_t{b[0]} * b[1] * b[2];
    if (!b[0] || !b[1] || !b[2])
      return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s: block {%u, %u, %u} has an extent of 0 (each is at least 1)",
                  call, what.c_str(), b[0], b[1], b[2]);
    if (product > 1024)
      return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s: block {%u, %u, %u} is %llu threads, above 1024", call,
                  what.c_str(), b[0], b[1], b[2], static_cast<unsigned long long>(product));
    if (threads && threads != product)
      return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s: block {%u, %u, %u} is not threads %u", call, what.c_str(), b[0],
                  b[1], b[2], threads);
    threads = (uint32_t)product;
  }
  if (m.kind == InputKind::Ptx) {
    if (!pk) {
      std::string names;
      for (const PtxKernel &c : m.ptx->kernels) names += (names.empty() ? "" : ", ") + c.name;
      return fail(SK_ERR_NOT_FOUND, "%s: no kernel '%s' is defined in %s (its kernels: %s)", call, name,
                  m.label.c_str(), names.empty() ? "none" : names.c_str());
    }
    if (!pk->refusal.empty())
      return fail(SK_ERR_UNSUPPORTED, "%s: %s cannot be fused: %s", call, what.c_str(), pk->refusal.c_str());
    if (sk_status st = ptx_block(*pk, b, what, call); st != SK_OK) return st;
    if (pk->entry) {
      // Its signature is its parameters': a given one must pass them alike.
      if (signature) {
        Signature given;
        if (sk_status st = parse_signature(signature, what, &given); st != SK_OK) return st;
        if (sk_status st = check_ptx_signature(given, pk->signature, what, call); st != SK_OK) return st;
      }
      meta = nullptr;
      k->signature = pk->signature;
    }
  }
  if (m.kind == InputKind::Cubin || m.kind == InputKind::Ptx) {
    const elf::CubinFunction *fn = m.cubin.find(name);
    if (!fn) return fail(SK_ERR_NOT_FOUND, "%s: no function '%s' is defined in %s", call, name, m.label.c_str());
    if (m.kind == InputKind::Cubin && m.cubin.type != 1 /* ET_REL */) {
      if (!fn->entry)
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: %s is a device function of a linked cubin, which cannot be called; build it relocatable: "
                    "nvcc -dc (or -rdc=true), e.g. nvcc -dc -cubin",
                    call, what.c_str());
      if (sk_status st = make_plain_kernel(*fn, request, what, call, k.get()); st != SK_OK) return st;
      k->module = module;
      k->symbol = name;
      *out = std::move(k);
      return SK_OK;
    }
    if (fn->entry)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: %s is a __global__ kernel compiled to SASS, which cannot be called; load its PTX (nvcc -ptx, "
                  "or a fatbinary with -gencode arch=compute_XY,code=compute_XY), or make it an extern \"C\" "
                  "__device__ function (sk_kernel.h)%s%s",
                  call, what.c_str(), m.global_kernels_note.empty() ? "" : "; the PTX beside it cannot be read: ",
                  m.global_kernels_note.c_str());
    const elf::CubinReach reach = m.cubin.reach(name);
    for (const std::string &f : reach.functions) {
      const elf::CubinFunction &callee = *m.cubin.find(f);
      k->registers = std::max(k->registers, callee.registers);
      // ptxas counts barriers up to the highest id named, or all 16 for an id in a register.
      if (callee.barriers > kBlockBarrier)
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: %s cannot be fused: %s may name barrier %u (its .nv.info counts %u barriers: that one, or "
                    "an id in a register), which the super kernel's own block barriers use: warps that left the "
                    "sub-kernel would count at it; number its barriers below %u",
                    call, what.c_str(), f == name ? "it" : ("'" + f + "', which it calls,").c_str(), kBlockBarrier,
                    callee.barriers, kBlockBarrier);
    }
    k->usage = device_api_usage(reach.externs);
    if (std::find(reach.externs.begin(), reach.externs.end(), kWorkspaceFunction) != reach.externs.end())
      k->usage |= kUsesGridSync;
    // griddepcontrol.wait: the step may start before the steps it depends on end.
    if (std::find(reach.externs.begin(), reach.externs.end(), kDependentWaitFunction) != reach.externs.end())
      k->usage |= kUsesGridDependencyWait;
    k->usage_paths = device_api_paths(reach.paths);
    if (m.kind == InputKind::Cubin) {
      const elf::SharedOverlayLayout alone = elf::layout_shared_overlay({&m.cubin}, {{0, name}}, false);
      uint64_t in_place = 0;
      for (uint32_t v : reach.shared_vars)
        if (const elf::CubinSharedVar &var = m.cubin.shared_vars[v]; !var.overlay)
          in_place = (in_place + var.align - 1) / var.align * var.align + var.size;
      k->static_shared = (uint32_t)std::min<uint64_t>(alone.bytes + in_place, UINT32_MAX);
    }
    if (reach.dynamic_shared && !m.dynamic_shared.count(name) && !request.dynamic_shared && request.stand_ins) {
      k->dynamic_shared_from = "stand-in";
      k->stand_ins.push_back("dynamic_shared");
    } else if (reach.dynamic_shared && !m.dynamic_shared.count(name) && !request.dynamic_shared)
      return fail(SK_ERR_INCOMPATIBLE,
                  m.kind == InputKind::Ptx
                      ? "%s: %s uses an .extern .shared array but its size is not known; give it when taking the "
                        "kernel (sk_kernel_desc.dynamic_shared; a Triton kernel's is its metadata's 'shared')%.0s"
                      : "%s: %s uses an extern __shared__ array but declares no size for it; record it with "
                        "SK_KERNEL_CUDA_SHARED(%s, signature, threads, bytes)",
                  call, what.c_str(), name);
  }
  const std::string no_metadata =
      "sk_kernel.h metadata (" +
      (!m.metadata_note.empty() ? m.metadata_note : "no sk_kernel_meta_ variable: built without SK_KERNEL_CUDA?") +
      ")" +
      (m.global_kernels_note.empty() ? ""
                                     : ", and its __global__ kernels cannot be read: " + m.global_kernels_note) +
      (m.ptx_units.empty() ? "" : " and is none of its __global__ kernels (" + joined(m.ptx_units[0].entries) + ")");
  if (!pk || !pk->entry)
    if (sk_status st = kernel_signature(signature, meta, what, call, no_metadata, &k->signature); st != SK_OK)
      return st;
  if (m.kind == InputKind::LtoIr)
    // The calls an LTO-IR function makes are unknown before linking: assume it synchronises
    // its blocks, so the planner never multiplexes them (which would hang sk_sync_all).
    k->usage = kUsesSyncAll | kUsesBlockIdx | kUsesBlockNum;
  if (meta) k->core_type = meta->core_type;
  if (auto it = m.threads.find(name); it != m.threads.end()) k->threads = it->second, k->threads_from = "metadata";
  if (auto it = m.dynamic_shared.find(name); it != m.dynamic_shared.end())
    k->dynamic_shared = it->second, k->dynamic_shared_from = "metadata";
  if (pk) {
    if (sk_status st = ptx_threads(m, *pk, threads, request.stand_ins, what, call, k.get()); st != SK_OK) return st;
    std::copy(b, b + 3, k->block);
    if (block_stand_in) {
      k->threads_from = "stand-in";
      k->stand_ins.push_back("block");
    }
    if (pk->launches_dependents) k->usage |= kUsesGridDependencyLaunch;
    if (!pk->write_before_dependent_wait.empty()) k->usage |= kUsesWriteBeforeGridDependencyWait;
    // .maxnreg bounds what the link compiles it to.
    if (pk->max_registers) k->registers = pk->max_registers;
    k->static_shared = (uint32_t)std::min<uint64_t>(pk->static_shared, UINT32_MAX);
    k->ptx = pk;
  } else if (b[0]) {
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: %s is not a PTX kernel: its threads are one dimension (sk_kernel_desc.block is for a "
                "__global__ kernel's PTX)",
                call, what.c_str());
  } else if (request.threads) {
    if (auto it = m.threads.find(name); it != m.threads.end() && it->second != request.threads)
      return fail(SK_ERR_INCOMPATIBLE, "%s: %s runs %u threads per block (SK_KERNEL_CUDA's threads), not %u", call,
                  what.c_str(), it->second, request.threads);
    k->threads = request.threads, k->threads_from = "caller";
  }
  if (request.dynamic_shared) k->dynamic_shared = request.dynamic_shared, k->dynamic_shared_from = "caller";
  k->module = module;
  k->symbol = name;
  *out = std::move(k);
  return SK_OK;
}

}  // namespace sk::cuda
