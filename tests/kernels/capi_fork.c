/* Kernels that call fork() on one block, for tests/c/test_capi_kernel_fork.c. Every block writes
 * its mark; the block that forks writes the child's pid for the test to wait for. */
#define _GNU_SOURCE
#include <sk_kernel.h>
#include <unistd.h>

/* The child returns from the kernel into libsk, as a child that forgot to exec would. */
SK_KERNEL(capi_fork_return, "ptr,ptr,u32")
void capi_fork_return(int32_t *pid, uint32_t *out, uint32_t forker) {
  if (sk_block_idx() == forker) {
    const pid_t child = fork();
    if (child != 0) *pid = child; /* -1 (no child) fails the test */
  }
  out[sk_block_idx()] = sk_block_idx() + 1;
}

/* The child ends itself with `status`, as a forked child should. */
SK_KERNEL(capi_fork_exit, "ptr,ptr,u32,u32")
void capi_fork_exit(int32_t *pid, uint32_t *out, uint32_t forker, uint32_t status) {
  if (sk_block_idx() == forker) {
    const pid_t child = fork();
    if (child == 0) _exit((int)status);
    *pid = child;
  }
  out[sk_block_idx()] = sk_block_idx() + 1;
}
