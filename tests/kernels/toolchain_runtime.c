/* What a program's static link takes from the toolchain's static parts, and GNU indirect
 * functions: an ifunc whose resolver picks by the CPU, a target_clones function and
 * __builtin_cpu_supports / __builtin_cpu_is (x86-64: libgcc.a's CPU model), atexit and
 * pthread_atfork (glibc's libc_nonshared.a). tests/cpp/api/toolchain_runtime_test.cpp compares
 * the kernels with this source linked into the test (TOOLCHAIN_NATIVE: without the kernels). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

/* Two implementations that differ, so that the result shows which one the resolver chose. */
static uint32_t mix_wide(uint32_t x) { return x * 2654435761u + 1u; }
static uint32_t mix_narrow(uint32_t x) { return x * 2654435761u + 2u; }

/* Used by the ifunc attribute only, which clang does not count as a use. */
#if defined(__x86_64__)
__attribute__((used)) static uint32_t (*resolve_mix(void))(uint32_t) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? mix_wide : mix_narrow;
}
#else
/* glibc passes AArch64 resolvers the hardware capabilities. */
__attribute__((used)) static uint32_t (*resolve_mix(uint64_t hwcap))(uint32_t) {
  return (hwcap & HWCAP_ATOMICS) ? mix_wide : mix_narrow;
}
#endif
uint32_t toolchain_mix(uint32_t x) __attribute__((ifunc("resolve_mix")));

#if defined(__x86_64__)
__attribute__((target_clones("avx2", "default"))) uint32_t toolchain_square_sum(const uint32_t *v, uint32_t n) {
  uint32_t s = 0;
  for (uint32_t i = 0; i < n; ++i) s += v[i] * v[i];
  return s;
}

uint32_t toolchain_cpu_bits(void) {
  __builtin_cpu_init();
  uint32_t bits = 0;
  bits |= __builtin_cpu_supports("sse2") ? 1u : 0u;
  bits |= __builtin_cpu_supports("avx2") ? 2u : 0u;
  bits |= __builtin_cpu_supports("avx512f") ? 4u : 0u;
  bits |= __builtin_cpu_supports("avx512vnni") ? 8u : 0u;
  bits |= __builtin_cpu_is("intel") ? 16u : 0u;
  bits |= __builtin_cpu_is("amd") ? 32u : 0u;
  return bits;
}
#else
uint32_t toolchain_square_sum(const uint32_t *v, uint32_t n) {
  uint32_t s = 0;
  for (uint32_t i = 0; i < n; ++i) s += v[i] * v[i];
  return s;
}

uint32_t toolchain_cpu_bits(void) { return 0; }
#endif

/* out[i] for i = first, first + step, ... below n. */
void toolchain_values(const uint32_t *in, uint32_t *out, uint32_t n, uint32_t first, uint32_t step) {
  for (uint32_t i = first; i < n; i += step)
    out[i] = toolchain_mix(in[i]) ^ toolchain_square_sum(in, i % 17 + 1) ^ toolchain_cpu_bits();
}

/* counters: [0] atexit handler runs, [1] fork prepare, [2] parent, [3] child handler runs. */
static uint32_t *toolchain_counters;
static void count_exit(void) { ++toolchain_counters[0]; }
static void count_prepare(void) { ++toolchain_counters[1]; }
static void count_parent(void) { ++toolchain_counters[2]; }
static void count_child(void) { ++toolchain_counters[3]; }

int toolchain_register(uint32_t *counters) {
  toolchain_counters = counters;
  return atexit(count_exit) | pthread_atfork(count_prepare, count_parent, count_child);
}

#ifndef TOOLCHAIN_NATIVE
#include <sk_kernel.h>

SK_KERNEL(toolchain_values_kernel, "ptr,ptr,u32")
void toolchain_values_kernel(const uint32_t *in, uint32_t *out, uint32_t n) {
  toolchain_values(in, out, n, sk_block_idx(), sk_block_num());
}

SK_KERNEL(toolchain_register_kernel, "ptr,ptr")
void toolchain_register_kernel(uint32_t *counters, int32_t *status) {
  if (sk_block_idx() == 0) *status = toolchain_register(counters);
}
#endif
