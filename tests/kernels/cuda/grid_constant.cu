// CUDA C++ `extern "C" __global__` kernels with `__grid_constant__` parameters, whose address
// they take: in a plain launch the address of the kernel's own parameter memory. Fused from their
// PTX (grid_constant.ptx), each such parameter is passed as the address of its bytes among the
// super kernel's parameters.
#include <cuda.h>  // CUtensorMap
#include <cstdint>

// A TMA copy: a __grid_constant__ CUtensorMap parameter (2-D, float, box 64 x 16) addressed in
// place by cp.async.bulk.tensor, completing on a shared-memory mbarrier; block b copies the box at
// row 16 * b to out. 128 threads per block.
extern "C" __global__ void __launch_bounds__(128) tma_copy_global(const __grid_constant__ CUtensorMap tensor_map, float *out) {
  constexpr uint32_t kBoxRows = 16, kBoxCols = 64, kBytes = kBoxRows * kBoxCols * sizeof(float);
  __shared__ alignas(128) float tile[kBoxRows * kBoxCols];
  __shared__ alignas(8) uint64_t barrier;
  uint32_t tile_addr = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
  uint32_t barrier_addr = static_cast<uint32_t>(__cvta_generic_to_shared(&barrier));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barrier_addr));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier_addr), "r"(kBytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
        "[%4];" ::"r"(tile_addr),
        "l"(&tensor_map), "r"(0), "r"(static_cast<int>(blockIdx.x * kBoxRows)), "r"(barrier_addr)
        : "memory");
  }
  uint32_t done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(barrier_addr)
                 : "memory");
  for (uint32_t i = threadIdx.x; i < kBoxRows * kBoxCols; i += blockDim.x)
    out[blockIdx.x * kBoxRows * kBoxCols + i] = tile[i];
}

// A grid-constant struct whose address a helper reads through, and whose members the kernel also
// reads as values: both read the same bytes. Block b writes out[b * blockDim + t] =
// c.scale * c.table[t % 8] + c.bias.
struct Coefficients {
  float table[8];
  float scale, bias;
};

__device__ __noinline__ float lookup(const Coefficients *c, unsigned i) { return c->scale * c->table[i % 8]; }

extern "C" __global__ void __launch_bounds__(64) grid_constant_global(const __grid_constant__ Coefficients c, float *out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = lookup(&c, threadIdx.x) + c.bias;
}
