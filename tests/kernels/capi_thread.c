/* Kernels that look at the thread that runs them, for tests/c/test_capi_core_threads.c. */
#define _GNU_SOURCE
#include <alloca.h>
#include <pthread.h>
#include <sk_kernel.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

/* out[block]: the id of the thread running the block (gettid). */
SK_KERNEL(capi_thread_id, "ptr")
void capi_thread_id(int64_t *out) { out[sk_block_idx()] = (int64_t)syscall(SYS_gettid); }

/* out[block]: the stack size of the running thread in KiB, as glibc reports it (0 if it cannot). */
SK_KERNEL(capi_stack_kib, "ptr")
void capi_stack_kib(uint64_t *out) {
  pthread_attr_t attr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstacksize(&attr, &size);
    pthread_attr_destroy(&attr);
  }
  out[sk_block_idx()] = size / 1024;
}

/* Takes `kib` KiB of stack at once and touches every page of it from the top down, as a kernel
 * with a large local array would; out[block]: the sum of the page numbers it wrote and read
 * back, low byte each. */
SK_KERNEL(capi_deep_stack, "ptr,u32")
void capi_deep_stack(uint32_t *out, uint32_t kib) {
  const size_t size = (size_t)kib * 1024;
  volatile unsigned char *p = (volatile unsigned char *)alloca(size);
  uint32_t sum = 0;
  size_t page;
  for (page = size / 4096; page-- > 0;) p[page * 4096] = (unsigned char)page;
  for (page = 0; page < size / 4096; ++page) sum += p[page * 4096];
  out[sk_block_idx()] = sum;
}

/* The largest aggregate a signature holds, passed by value three times: libffi copies each onto
 * the stack of the thread that calls the kernel. out[2 * block]: the bytes' sum, a's once, b's
 * twice, c's three times; out[2 * block + 1]: the id of the thread running the block. */
struct capi_big {
  uint8_t b[32768];
};
SK_KERNEL(capi_big_args, "ptr,{u8[32768]},{u8[32768]},{u8[32768]}")
void capi_big_args(int64_t *out, struct capi_big a, struct capi_big b, struct capi_big c) {
  int64_t sum = 0;
  size_t i;
  for (i = 0; i < sizeof a.b; ++i) sum += a.b[i] + 2 * b.b[i] + 3 * c.b[i];
  out[2 * sk_block_idx()] = sum;
  out[2 * sk_block_idx() + 1] = (int64_t)syscall(SYS_gettid);
}
