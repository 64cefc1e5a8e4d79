// Kernels for the error paths: another block size, no metadata, a __global__ kernel, a call to
// a function nobody defines, cache calls and scalar accessors, a flag id from the host.
#include <sk_kernel.h>

SK_KERNEL_CUDA(wide_block, "ptr,u32", 256)
extern "C" __device__ void wide_block(uint32_t *x, uint32_t n) {
  uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

// No SK_KERNEL: the host gives the signature.
extern "C" __device__ void no_metadata(uint32_t *x, uint32_t n) {
  uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 2;
}

extern "C" __global__ void a_global_kernel(uint32_t *x) { x[threadIdx.x] = 0; }

extern "C" __device__ uint32_t nobody_defines_this(uint32_t);
SK_KERNEL_CUDA(calls_missing, "ptr", 128)
extern "C" __device__ void calls_missing(uint32_t *x) { x[threadIdx.x] = nobody_defines_this(threadIdx.x); }

SK_KERNEL_CUDA(scalar_flags, "ptr", 128)
extern "C" __device__ void scalar_flags(uint32_t *flag) {
  if (threadIdx.x == 0) {
    sk_dcci_line(flag);
    sk_gm_set_u32(flag + sk_block_idx(), sk_gm_get_u32(flag + sk_block_idx()) + 1);
    sk_dcci_all();
  }
  sk_cross_core_set_flag_all(3);
  sk_cross_core_wait_flag_all(3);
}

// `flag` from the host: ids past SK_CROSS_CORE_FLAGS-1 must fail the launch, not wrap.
SK_KERNEL_CUDA(any_flag, "u32", 128)
extern "C" __device__ void any_flag(uint32_t flag) {
  sk_cross_core_set_flag_all(flag);
  sk_cross_core_wait_flag_all(flag);
}

// Named barriers: 3 is the kernel's own; 15 is the super kernel's block barrier, named in a
// helper (ptxas counts 16 barriers for it).
__device__ __noinline__ void misc_barrier_15() { asm volatile("bar.sync 15, 64;"); }
SK_KERNEL_CUDA(names_barrier_15, "ptr", 128)
extern "C" __device__ void names_barrier_15(uint32_t *x) {
  x[threadIdx.x] += 1;
  misc_barrier_15();
}
SK_KERNEL_CUDA(names_barrier_3, "ptr", 128)
extern "C" __device__ void names_barrier_3(uint32_t *x) {
  x[threadIdx.x] += 1;
  asm volatile("bar.sync 3, 64;");
}
