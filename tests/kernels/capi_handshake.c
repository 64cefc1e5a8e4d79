/* Task-overlap handshake for the C API tests: the part of capi_hs_first after
 * sk_set_next_task_start and the part of capi_hs_second before sk_wait_pre_task_end meet
 * through flags in global memory, which only works if they really run at the same time. Every
 * spin is bounded (timeout_ms), so a missing overlap ends the handshake, never the test.
 *
 * hs[0] ping: first's tail is running      hs[1] pong: second's head answered
 * hs[2] first's tail saw pong (0/1)        hs[3] second's head saw ping (0/1)
 * hs[4] first's tail has ended             hs[5] hs[4] as second's answering part found it */
#include <sched.h>
#include <sk_kernel.h>
#include <time.h>

/* 1 once *flag is set, 0 if timeout_ms passed first. */
static uint32_t spin_until(const uint32_t *flag, uint32_t timeout_ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (uint32_t i = 1;; ++i) {
    if (__atomic_load_n(flag, __ATOMIC_ACQUIRE)) return 1;
    if ((i & 255) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      int64_t ms = (int64_t)(t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
      if (ms >= (int64_t)timeout_ms) return __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
      sched_yield(); /* the other side may need this CPU */
    }
  }
}

/* Block 0's tail pings and waits for the answer; the other blocks end at once. */
SK_KERNEL(capi_hs_first, "ptr,u32")
void capi_hs_first(uint32_t *hs, uint32_t timeout_ms) {
  sk_set_next_task_start();
  if (sk_block_idx() != 0) return;
  __atomic_store_n(&hs[0], 1u, __ATOMIC_RELEASE);
  hs[2] = spin_until(&hs[1], timeout_ms);
  __atomic_store_n(&hs[4], 1u, __ATOMIC_RELEASE);
}

/* The last block (on another core than block 0 of the previous kernel) answers the ping: in
 * its head, before sk_wait_pre_task_end (after_wait 0), or right after it (after_wait 1: then
 * only the release at the previous kernel's sk_set_next_task_start lets it meet the tail). */
SK_KERNEL(capi_hs_second, "ptr,u32,u32")
void capi_hs_second(uint32_t *hs, uint32_t timeout_ms, uint32_t after_wait) {
  if (after_wait) sk_wait_pre_task_end();
  if (sk_block_idx() == sk_block_num() - 1) {
    hs[5] = __atomic_load_n(&hs[4], __ATOMIC_ACQUIRE);
    hs[3] = spin_until(&hs[0], timeout_ms);
    if (hs[3]) __atomic_store_n(&hs[1], 1u, __ATOMIC_RELEASE);
  }
  if (!after_wait) sk_wait_pre_task_end();
}
