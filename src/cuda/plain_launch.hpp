// A `__global__` kernel that exists only as linked SASS (`nvcc -cubin`, a fatbinary or host
// object without PTX): it cannot be called from a super kernel, so a scope launches it as the
// driver would, between the super kernel's dispatches (common/plan.hpp: a plain-launch step),
// and sk_launch_kernel launches it the same way. What the launch needs is read from the cubin's
// `.nv.info`: the parameters' sizes (EIATTR_KPARAM_INFO) and the block it was compiled for.
#pragma once
#include <sk.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/plan.hpp"
#include "cuda/cuda_device.hpp"
#include "elf/cubin.hpp"

namespace sk::cuda {

struct CudaKernel;
struct CudaModule;

// The signature its parameters' sizes give (8 bytes: a pointer; 4, 2, 1: an unsigned integer;
// any other size an aggregate of as many bytes, aligned as its offset allows), or, given one,
// that one checked against them. Fails naming `what` and the parameter.
sk_status plain_signature(const elf::CubinFunction &fn, const char *given, const std::string &what, const char *call,
                          Signature *out);

// Fills the launch facts of linked entry `fn` into `k`: its block (the caller's `block` or
// `threads`, else its .reqntid, else its __launch_bounds__' .maxntid; one that says none needs
// the caller's, or a stand-in for sk_module_inspect), its dynamic shared bytes (the caller's, 0
// when not given: SASS does not say), its signature and resources.
sk_status make_plain_kernel(const elf::CubinFunction &fn, const backend::KernelRequest &request,
                            const std::string &what, const char *call, CudaKernel *k);

// A linked cubin loaded on one device (cuModuleLoadData), shared by the plain kernels taken
// from it there: a library's unit is megabytes, a step may launch several of its kernels.
class LoadedCubin {
 public:
  // The cubin of `module` on `gpu` (its context current), loaded by the first caller: the
  // driver's refusal names `kernel`, which asked.
  static sk_status get(const std::shared_ptr<CudaDevice> &gpu, const std::shared_ptr<const CudaModule> &module,
                       const std::string &kernel, const char *call, std::shared_ptr<LoadedCubin> *out);
  LoadedCubin(std::shared_ptr<CudaDevice> gpu, std::shared_ptr<const CudaModule> module, CUmodule handle)
      : gpu_(std::move(gpu)), module_(std::move(module)), handle_(handle) {}
  ~LoadedCubin();
  LoadedCubin(const LoadedCubin &) = delete;
  LoadedCubin &operator=(const LoadedCubin &) = delete;
  CUmodule handle() const { return handle_; }

 private:
  std::shared_ptr<CudaDevice> gpu_;
  std::shared_ptr<const CudaModule> module_;  // keeps the cache's key alive with the load
  CUmodule handle_;
};

// A plain kernel on one device: its function in the cubin's module, found on first use.
// A cluster the caller gave (KernelRequest::cluster): none (zeros), or at least 1 block in each
// extent and at most 8 in all, and only for a kernel of linked SASS (`plain`): a super kernel
// runs in no cluster.
sk_status check_cluster_request(const backend::KernelRequest &request, bool plain, const std::string &what,
                                const char *call);

// Whether the grid of a plain kernel's launch (as PlainFunction::launch shapes it) holds whole
// clusters of its own: SK_ERR_INCOMPATIBLE naming `subject` otherwise. Checked where the grid is
// given (sk_finalize, sk_launch_kernel), not at each launch of a dispatch.
sk_status check_cluster_grid(const CudaKernel &k, uint32_t block_dim, const GridShape &grid,
                             const std::string &subject, const char *call);

class PlainFunction {
 public:
  // `cooperative`: its blocks wait for each other (cooperative groups' grid sync, or the
  // caller's SK_KERNEL_DESC_COOPERATIVE): each launch is cooperative, all blocks at once.
  PlainFunction(std::shared_ptr<CudaDevice> gpu, std::shared_ptr<const CudaKernel> kernel, bool cooperative);
  PlainFunction(const PlainFunction &) = delete;
  PlainFunction &operator=(const PlainFunction &) = delete;

  // Finds it if not yet (the device's context current), loading its cubin where no other
  // kernel of it has: the driver's refusal names the kernel, and the next call tries again.
  sk_status load(const char *call);
  // Launches it (its device's context made current) on `grid` (zeros past x: block_dim blocks in x) with the arguments in `slots`
  // (its signature's slots, each parameter's bytes from its first slot).
  sk_status launch(uint32_t block_dim, const GridShape &grid, const uint64_t *slots, CUstream stream,
                   const char *call);

 private:
  std::shared_ptr<CudaDevice> gpu_;
  std::shared_ptr<const CudaKernel> kernel_;
  bool cooperative_;
  std::vector<uint32_t> param_slots_;  // each parameter's first argument slot
  std::mutex mutex_;
  std::shared_ptr<LoadedCubin> cubin_;
  CUfunction function_ = nullptr;
};

}  // namespace sk::cuda
