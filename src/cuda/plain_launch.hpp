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

// A plain kernel loaded on one device: its own module of the linked cubin, loaded on first use.
class PlainFunction {
 public:
  // `cooperative`: its blocks wait for each other (cooperative groups' grid sync, or the
  // caller's SK_KERNEL_DESC_COOPERATIVE): each launch is cooperative, all blocks at once.
  PlainFunction(std::shared_ptr<CudaDevice> gpu, std::shared_ptr<const CudaKernel> kernel, bool cooperative);
  ~PlainFunction();
  PlainFunction(const PlainFunction &) = delete;
  PlainFunction &operator=(const PlainFunction &) = delete;

  // Loads it if not yet (the device's context current): SK_ERR_LAUNCH_FAILED naming the kernel
  // where the driver refuses its cubin.
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
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

}  // namespace sk::cuda
