// The steps of bench_cuda's chains (bench/cuda/bench_cuda.cu), shared by its methods: the libsk
// sub-kernels of bench_chain.cu and the benchmark's own __global__ kernels run these bodies, and
// its CPU reference calls the same bench_chain_shift, bench_chain_local_shift and bench_chain_mix.
//
// The chain works on a buffer of 2n words (n = blocks x threads, one word per thread), two
// halves used in turn: step s reads half s & 1 and writes the other one. Thread i of the step
// writes out[i] = mix(in[i], in[(i + shift(s)) % n], s): with more than one block, shift is a
// multiple of the block size from 1 to blocks - 1 blocks that changes from step to step, so
// every word a block writes depends on a word another block wrote in the step before, and the
// next step overwrites the half that other blocks read in this one. A step that starts before
// the previous one ended everywhere (a missing or broken barrier, a launch not ordered after the
// one before) reads a stale or a too-new word, and the mix carries the difference to the end.
// On one block the shift is 1 to threads - 1 words: other threads, other warps.
#ifndef SK_BENCH_CHAIN_CUH
#define SK_BENCH_CHAIN_CUH

#include <stdint.h>

// Threads per block of every method (bench_chain.cu's SK_KERNEL_CUDA says 128 too).
#define BENCH_CHAIN_THREADS 128u

static __host__ __device__ inline uint32_t bench_chain_shift(uint32_t step, uint32_t blocks, uint32_t threads) {
  return blocks > 1u ? threads * (1u + step % (blocks - 1u)) : 1u + step % (threads - 1u);
}

// Integer only, so the CPU reference is exact. For either input fixed it is a bijection of the
// other one (a multiply by an odd number, an xor, a rotation), so one wrong input always gives a
// wrong output.
static __host__ __device__ inline uint32_t bench_chain_mix(uint32_t own, uint32_t other, uint32_t step) {
  const uint32_t x = (own * 0x9E3779B1u) ^ other;
  return ((x << 13) | (x >> 19)) * 0x85EBCA6Bu + step;
}

// One word of a step: out[i] = mix(in[i], other[j], step), where `other` is the half of the words
// the step reads from elsewhere (`in` itself, or the other branch's for a join).
static __device__ __forceinline__ void bench_chain_word(const uint32_t *in, const uint32_t *other, uint32_t *out,
                                                        uint32_t i, uint32_t j, uint32_t step) {
  out[i] = bench_chain_mix(in[i], other[j], step);
}

// One step on block `block` of `blocks` (blockIdx/gridDim for a kernel of its own,
// sk_block_idx()/sk_block_num() for a libsk sub-kernel). n = blocks * blockDim.x.
static __device__ __forceinline__ void bench_chain_body(uint32_t *buf, uint32_t n, uint32_t step, uint32_t block,
                                                        uint32_t blocks) {
  const uint32_t *in = buf + (step & 1u) * n;
  uint32_t *out = buf + ((step & 1u) ^ 1u) * n;
  const uint32_t i = block * blockDim.x + threadIdx.x;
  if (i < n) {
    uint32_t j = i + bench_chain_shift(step, blocks, blockDim.x);  // shift < n
    if (j >= n) j -= n;
    bench_chain_word(in, in, out, i, j, step);
  }
}

// The block-local chain: the same step with the word read from another thread of the same block
// (1 to threads - 1 threads further, changing from step to step), so block i of a step reads
// only what block i of the step before wrote: it needs a block barrier between two steps, not a
// grid barrier, and a missing block barrier gives wrong words as the grid's does.
static __host__ __device__ inline uint32_t bench_chain_local_shift(uint32_t step, uint32_t threads) {
  return 1u + step % (threads - 1u);
}

static __device__ __forceinline__ void bench_chain_local_body(uint32_t *buf, uint32_t n, uint32_t step,
                                                              uint32_t block) {
  const uint32_t *in = buf + (step & 1u) * n;
  uint32_t *out = buf + ((step & 1u) ^ 1u) * n;
  const uint32_t i = block * blockDim.x + threadIdx.x;
  if (i < n) {
    uint32_t t = threadIdx.x + bench_chain_local_shift(step, blockDim.x);
    if (t >= blockDim.x) t -= blockDim.x;
    bench_chain_word(in, in, out, i, block * blockDim.x + t, step);
  }
}

// The two-branch step's join: step `step` of chain a, with the word from elsewhere read from
// chain b's words after its step `step` (b ran step + 1 steps), shifted as bench_chain_body
// shifts, so every block of the join depends on every block of both branches' last steps.
static __device__ __forceinline__ void bench_chain_join_body(uint32_t *a, const uint32_t *b, uint32_t n,
                                                             uint32_t step, uint32_t block, uint32_t blocks) {
  const uint32_t *in = a + (step & 1u) * n, *other = b + ((step + 1u) & 1u) * n;
  uint32_t *out = a + ((step & 1u) ^ 1u) * n;
  const uint32_t i = block * blockDim.x + threadIdx.x;
  if (i < n) {
    uint32_t j = i + bench_chain_shift(step, blocks, blockDim.x);
    if (j >= n) j -= n;
    bench_chain_word(in, other, out, i, j, step);
  }
}

#endif
