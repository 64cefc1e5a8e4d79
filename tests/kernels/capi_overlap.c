/* Task-overlap kernels for the C API tests: what produce does after sk_set_next_task_start and
 * what consume does before sk_wait_pre_task_end touch buffers no neighbour reads or writes. */
#include <sk_kernel.h>

/* a[i] = a[i] * 3 + seed + i; then, overlapping the next kernel: side[i] = i * seed + 17 */
SK_KERNEL(capi_ov_produce, "ptr,ptr,u32,u32")
void capi_ov_produce(uint32_t *a, uint32_t *side, uint32_t n, uint32_t seed) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) a[i] = a[i] * 3u + seed + i;
  sk_set_next_task_start();
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) side[i] = i * seed + 17u;
}

/* Overlapping the previous kernel: pre[i] += i * 7; then b[i] = a[(i * 13 + 5) % n] + pre[i] */
SK_KERNEL(capi_ov_consume, "ptr,ptr,ptr,u32")
void capi_ov_consume(const uint32_t *a, uint32_t *pre, uint32_t *b, uint32_t n) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) pre[i] += i * 7u;
  sk_wait_pre_task_end();
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num())
    b[i] = a[(uint32_t)(((uint64_t)i * 13u + 5u) % n)] + pre[i];
}
