/*
 * sk_kernel.h — what kernel sources include.
 *
 * A host kernel is a C-ABI function in an ELF relocatable object (`cc -c kernel.c`). It reads
 * its place through the device API below; libsk binds these calls when it links the object.
 *
 *   #include <sk_kernel.h>
 *   SK_KERNEL(vadd, "ptr,ptr,ptr,u32")
 *   SK_EXTERN_C void vadd(const float *a, const float *b, float *c, uint32_t n) {
 *     uint32_t begin, end;
 *     sk_block_range(n, &begin, &end);
 *     for (uint32_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
 *   }
 *
 * Signature tokens: ptr, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 (comma-separated).
 */
#ifndef SK_KERNEL_H
#define SK_KERNEL_H

#include <stdint.h>

/* ---- CUDA mode ------------------------------------------------------------------------------
 *
 * A CUDA kernel is an `extern "C" __device__` function in a relocatable cubin or LTO-IR:
 *
 *   nvcc -dc -cubin -arch=sm_90 kernels.cu -o kernels.cubin        (or: -dc -dlto -ltoir)
 *
 *   #include <sk_kernel.h>
 *   SK_KERNEL_CUDA(vadd, "ptr,ptr,ptr,u32", 128)
 *   extern "C" __device__ void vadd(const float *a, const float *b, float *c, uint32_t n) {
 *     uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
 *     if (i < n) c[i] = a[i] + b[i];
 *   }
 *
 * Every thread of a block calls the device API functions that synchronise (sk_sync_all, the
 * task-overlap and cross-core calls): they are block-wide, like __syncthreads(). libsk links
 * these declarations to its device library (generated per super kernel) through nvJitLink.
 * blockIdx/gridDim are the super kernel's: use sk_block_idx()/sk_block_num() instead.
 */
#if defined(__CUDACC__)
#define SK_EXTERN_C extern "C"
#define SK_DEVICE_API extern "C" __device__
#define SK_DEVICE_INLINE static __device__ __forceinline__
#else
#ifdef __cplusplus
#define SK_EXTERN_C extern "C"
#else
#define SK_EXTERN_C
#endif
#define SK_DEVICE_API SK_EXTERN_C
#define SK_DEVICE_INLINE __attribute__((unused)) static inline
#endif

/* ---- device API ------------------------------------------------------------------------- */

/** Index of this block within the sub-kernel, 0 <= idx < sk_block_num(). */
SK_DEVICE_API uint32_t sk_block_idx(void);
/** The sub-kernel's own block count (its block_dim), whatever the super kernel's core count. */
SK_DEVICE_API uint32_t sk_block_num(void);
/** Barrier over this sub-kernel's blocks (needs block_dim <= the device's cores). */
SK_DEVICE_API void sk_sync_all(void);
/** Task overlap: what follows may run in parallel with the next sub-kernel. */
SK_DEVICE_API void sk_set_next_task_start(void);
/** Task overlap: what precedes may run in parallel with the previous sub-kernel; waits for it. */
SK_DEVICE_API void sk_wait_pre_task_end(void);

/* ---- core types (mixed kernels) --------------------------------------------------------- */

#define SK_CORE_TYPE_VECTOR 0u
#define SK_CORE_TYPE_CUBE 1u
/** SK_CORE_TYPE_VECTOR or SK_CORE_TYPE_CUBE: the type of the core running this block. */
SK_DEVICE_API uint32_t sk_core_type(void);
/**
 * Inside a group (mixed kernels): index of this vector core among the group's vector cores the
 * sub-kernel runs on (0 or 1); 0 on cube cores and in vector-only or cube-only kernels.
 */
SK_DEVICE_API uint32_t sk_sub_block_idx(void);
/** Vector cores per group this sub-kernel runs on (1 or 2); 1 outside mixed kernels. */
SK_DEVICE_API uint32_t sk_sub_block_num(void);

/* ---- hard cross-core sync ------------------------------------------------------------------ */

/** Flag ids are 0 .. SK_CROSS_CORE_FLAGS-1. */
#define SK_CROSS_CORE_FLAGS 16u
/**
 * Inside a group: a vector core's set signals the group's cube core; the cube core's set
 * signals every vector core of the group the sub-kernel runs on.
 */
SK_DEVICE_API void sk_cross_core_set_flag(uint32_t flag);
/**
 * Inside a group: the cube core waits until every vector core of the group (both, in a 1:2
 * super kernel) has set `flag` once more; a vector core waits for one more set by the cube.
 */
SK_DEVICE_API void sk_cross_core_wait_flag(uint32_t flag);
/** Across groups (whole-core hard sync): one arrival at `flag` of the super kernel. */
SK_DEVICE_API void sk_cross_core_set_flag_all(uint32_t flag);
/**
 * Waits until every core of the super kernel of this core's kind has set `flag` once more. It
 * counts the super kernel's cores, not the sub-kernel's: libsk splits the scope before a kernel
 * that uses hard sync on a different core count (scope option strict-scope-check).
 */
SK_DEVICE_API void sk_cross_core_wait_flag_all(uint32_t flag);

/* ---- cache maintenance (DCCI) ---------------------------------------------------------------- */

/* On CUDA the cache calls are a GPU-scope fence (fence.acq_rel.gpu) and the scalar accessors
 * bypass L1; CUDA devices have one core type (vector, sub-block 0 of 1), group flags are no-ops
 * there and the _all flags are a split barrier over the sub-kernel's blocks. */

/** Cleans and invalidates the data-cache line holding addr (on the host: a full fence). */
SK_DEVICE_API void sk_dcci_line(const volatile void *addr);
/** Cleans and invalidates the whole data cache (on the host: a full fence). */
SK_DEVICE_API void sk_dcci_all(void);
/**
 * Scalar global-memory access: copies size (1, 2, 4 or 8) bytes, flushing the line before a
 * load and after a store unless the scope options turn per-access flushes off for this kernel.
 */
SK_DEVICE_API void sk_gm_load(void *dst, const volatile void *src, uint32_t size);
SK_DEVICE_API void sk_gm_store(volatile void *dst, const void *src, uint32_t size);

#define SK_GM_ACCESSORS_(suffix, type)                               \
  SK_DEVICE_INLINE type sk_gm_get_##suffix(const volatile type *p) { \
    type v;                                                          \
    sk_gm_load(&v, p, (uint32_t)sizeof v);                           \
    return v;                                                        \
  }                                                                  \
  SK_DEVICE_INLINE void sk_gm_set_##suffix(volatile type *p, type v) { sk_gm_store(p, &v, (uint32_t)sizeof v); }
SK_GM_ACCESSORS_(u8, uint8_t)
SK_GM_ACCESSORS_(i32, int32_t)
SK_GM_ACCESSORS_(u32, uint32_t)
SK_GM_ACCESSORS_(i64, int64_t)
SK_GM_ACCESSORS_(u64, uint64_t)
SK_GM_ACCESSORS_(f32, float)
SK_GM_ACCESSORS_(f64, double)

/**
 * [*begin, *end): this block's contiguous share of n items split over sk_block_num() blocks
 * (the last blocks get less, or nothing, when n does not divide evenly).
 */
SK_DEVICE_INLINE void sk_block_range(uint32_t n, uint32_t *begin, uint32_t *end) {
  uint32_t blocks = sk_block_num(), per = n / blocks + (n % blocks != 0);
  uint64_t b = (uint64_t)sk_block_idx() * per, e = b + per;
  *begin = (uint32_t)(b < n ? b : n);
  *end = (uint32_t)(e < n ? e : n);
}

/* ---- metadata --------------------------------------------------------------------------- */

/* Core types (docs/semantics.md, "Core types and layouts"): vector-only, cube-only, mixed
 * 1 cube : 1 vector, 1:2. */
#define SK_CORE_VECTOR "vector"
#define SK_CORE_CUBE "cube"
#define SK_CORE_MIX_1_1 "mix_1_1"
#define SK_CORE_MIX_1_2 "mix_1_2"

#define SK_KERNEL_CAT_(a, b) a##b
#define SK_KERNEL_CAT(a, b) SK_KERNEL_CAT_(a, b)

#if defined(__CUDACC__)
/*
 * Metadata: a device compiler keeps no custom section, so each record is a __device__ string
 * named sk_kernel_meta_<fn> that libsk finds in the cubin's symbol table:
 * "sk1;kernel=NAME;sig=SIGNATURE;type=CORE_TYPE[;threads=N][;shared=BYTES]". threads is the
 * block size the kernel is written for (128 if not given; a super kernel runs its widest
 * sub-kernel's, and a cubin's or LTO-IR's must be that wide: its barriers wait for every thread
 * of the block); shared the bytes its `extern __shared__` array needs.
 */
#define SK_KERNEL_TYPED(fn, signature, core_type)                                               \
  extern "C" __device__ __attribute__((used)) const char SK_KERNEL_CAT(sk_kernel_meta_, fn)[] = \
      "sk1;kernel=" #fn ";sig=" signature ";type=" core_type;
/** Records kernel `fn` with its signature and its threads per block. */
#define SK_KERNEL_CUDA(fn, signature, threads)                                                  \
  extern "C" __device__ __attribute__((used)) const char SK_KERNEL_CAT(sk_kernel_meta_, fn)[] = \
      "sk1;kernel=" #fn ";sig=" signature ";type=vector;threads=" #threads;
/**
 * SK_KERNEL_CUDA for a kernel with an `extern __shared__` array of `shared_bytes` (a literal
 * number, at most 232448). Sub-kernels run one after another, so a super kernel launches with
 * the largest of its sub-kernels' sizes.
 */
#define SK_KERNEL_CUDA_SHARED(fn, signature, threads, shared_bytes)                             \
  extern "C" __device__ __attribute__((used)) const char SK_KERNEL_CAT(sk_kernel_meta_, fn)[] = \
      "sk1;kernel=" #fn ";sig=" signature ";type=vector;threads=" #threads ";shared=" #shared_bytes;
#elif defined(__GNUC__) || defined(__clang__)
/*
 * One record in section .sk.kernels: a NUL-terminated string
 * "sk1;kernel=NAME;sig=SIGNATURE;type=CORE_TYPE". Strings only: the section needs no
 * relocation, so libsk reads it straight from the object.
 */
#define SK_KERNEL_TYPED(fn, signature, core_type)                                            \
  __attribute__((section(".sk.kernels"), used, aligned(1))) static const char SK_KERNEL_CAT( \
      sk_kernel_meta_, fn)[] = "sk1;kernel=" #fn ";sig=" signature ";type=" core_type;
#else
#error "sk_kernel.h needs GCC or Clang"
#endif

/** Records kernel `fn` with its signature, as a vector-core kernel. */
#define SK_KERNEL(fn, signature) SK_KERNEL_TYPED(fn, signature, SK_CORE_VECTOR)

#endif /* SK_KERNEL_H */
