// Reads of an earlier step's output through the read-only data path (a const __restrict__
// pointer and __ldg: ld.global.nc), as real kernels make them. Each step reads words other
// blocks wrote in the step before, on lines its SM may have read two steps before: whether
// libsk's barrier between two steps keeps the non-coherent path from stale lines is for a GPU
// to show (CudaGpu.ReadOnlyLoadsSeeTheStepBeforesWrites).
#include <sk_kernel.h>

SK_KERNEL_CUDA(ro_rotate, "ptr,ptr,u32,u32", 128)
extern "C" __device__ void ro_rotate(const uint32_t *__restrict__ in, uint32_t *__restrict__ out, uint32_t n,
                                     uint32_t shift) {
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __ldg(&in[(i + shift) % n]) * 2654435761u + in[(i + 2u * shift + 1u) % n] + shift;
}
