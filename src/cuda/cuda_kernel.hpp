// A kernel taken from a CUDA module (cuda_module.hpp): its signature, launch facts and what its
// code uses, read from the module's PTX, cubin or sk_kernel.h metadata and checked against what
// the caller gives (sk_kernel_desc). A library's kernel is found in the unit that declares it,
// which is read then.
#pragma once
#include "cuda/cuda_module.hpp"

namespace sk::cuda {

// Threads per block of a kernel whose metadata gives none (SK_KERNEL without threads=).
constexpr uint32_t kDefaultThreads = 128;

struct CudaKernel {
  std::shared_ptr<const CudaModule> module;
  std::string symbol;
  Signature signature;
  std::string core_type = "vector";
  uint32_t threads = kDefaultThreads;
  uint32_t block[3] = {0, 0, 0};  // the block's shape the caller gave (sk_kernel_desc.block); 0: none
  // DeviceApiBit set, from the EIATTR_EXTERNS of the function and of every function it reaches
  // through .nv.callgraph (a __noinline__ helper that calls sk_sync_all makes the kernel sync).
  uint32_t usage = 0;
  std::vector<DeviceApiPath> usage_paths;  // how it reaches those it does not call itself
  uint32_t registers = 0;                  // the most of it and its callees; 0 when unknown (LTO-IR)
  // Static __shared__ bytes of it and its callees (0 for LTO-IR): a cubin's part of the shared
  // overlay, as its sk_launch_kernel entry lays it out, plus the variables that do not move
  // (CubinSharedVar::overlay), which the linker places beside it; a PTX kernel's variables
  // (PtxKernel::static_shared), which share the overlay the same way.
  uint32_t static_shared = 0;
  uint32_t dynamic_shared = 0;  // `extern __shared__` bytes it declares (SK_KERNEL_CUDA_SHARED)
  // Where `threads` came from, for explain: "metadata", ".reqntid", ".maxntid", "caller", "default"
  // ("stand-in" for KernelRequest::stand_ins).
  std::string threads_from = "default";
  std::string dynamic_shared_from;  // "metadata", "caller", "stand-in" ("" when it has none)
  // The sk_kernel_desc fields given stand-ins (KernelRequest::stand_ins): "threads", "block",
  // "dynamic_shared", "cluster"; a kernel taken for a launch has none.
  std::vector<std::string> stand_ins;
  // A linked cubin's __global__ kernel: launched as compiled, never fused (cuda/plain_launch.hpp);
  // `block` is then its launch's block, always set.
  bool plain = false;
  // A plain kernel's thread block cluster: the caller's (sk_kernel_desc.cluster, passed at each
  // launch) or its cubin's __cluster_dims__ (the driver's to apply); zeros: none.
  uint32_t cluster[3] = {0, 0, 0};
  std::string cluster_from;        // "caller", "__cluster_dims__", "stand-in" ("" when it has none)
  const PtxKernel *ptx = nullptr;  // a PTX module's kernel: its facts and rewrites (module-owned)
  // Where it was taken from a module of several objects: the others that define what its
  // module's code uses (ModuleSet::links), linked before it.
  std::vector<std::shared_ptr<const CudaModule>> links;
};

// Takes kernel `name`. `request.signature` NULL: from the metadata, or a PTX kernel's
// parameters (SK_ERR_NOT_FOUND without either); else parsed and checked against them. A cubin
// or PTX must define the function (SK_ERR_NOT_FOUND naming it); an LTO-IR symbol is checked
// when it is linked. The request's launch facts are checked against the kernel's own.
sk_status make_cuda_kernel(const std::shared_ptr<const CudaModule> &module, const char *name,
                           const backend::KernelRequest &request, const char *call,
                           std::shared_ptr<CudaKernel> *out);
inline sk_status make_cuda_kernel(const std::shared_ptr<const CudaModule> &module, const char *name,
                                  const char *signature, const char *call, std::shared_ptr<CudaKernel> *out) {
  return make_cuda_kernel(module, name, backend::KernelRequest{signature}, call, out);
}

}  // namespace sk::cuda
