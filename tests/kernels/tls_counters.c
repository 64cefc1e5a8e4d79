/* Thread-locals in every access model compilers emit (the variant's default, and initial exec,
 * general and local dynamic by attribute), initialised (.tdata, one holding an address) and
 * zeroed (.tbss). tests/cpp/api/thread_local_test.cpp runs the kernel on every core, unfused and
 * fused, and compares each core's results with this source linked into the test and run on a
 * thread of its own (TLS_NATIVE: without the kernel). */
#include <stdint.h>

__thread uint32_t tls_counter = 5;
static __thread uint32_t tls_scratch[32];
__attribute__((tls_model("initial-exec"))) __thread uint64_t tls_ie_sum = 100;
__attribute__((tls_model("global-dynamic"))) __thread uint32_t tls_gd_calls;
static __attribute__((tls_model("local-dynamic"))) __thread uint32_t tls_ld_a = 3, tls_ld_b;
__thread const char *tls_name = "tls";

/* One step of this thread's state; what it returns depends on every call before it here. */
uint64_t tls_step(uint32_t x) {
  ++tls_counter;
  tls_scratch[x % 32] += x;
  tls_ie_sum += x;
  ++tls_gd_calls;
  tls_ld_a += tls_ld_b++;
  return ((uint64_t)tls_counter << 48) ^ ((uint64_t)tls_scratch[x % 32] << 32) ^ tls_ie_sum ^
         ((uint64_t)tls_gd_calls << 20) ^ ((uint64_t)tls_ld_a << 8) ^ (uint8_t)tls_name[x % 3];
}

uint64_t tls_counter_address(void) { return (uint64_t)(uintptr_t)&tls_counter; }

#ifndef TLS_NATIVE
#include <sk_kernel.h>

/* out[b] = the step of block b's thread; where[b] = its tls_counter's address. */
SK_KERNEL(tls_kernel, "ptr,ptr,u32")
void tls_kernel(uint64_t *out, uint64_t *where, uint32_t round) {
  uint32_t b = sk_block_idx();
  out[b] = tls_step(b + round);
  where[b] = tls_counter_address();
}
#endif
