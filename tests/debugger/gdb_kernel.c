/* Loads the kernel object named by argv[1] and launches its debug_trap_kernel, which raises
 * SIGTRAP inside the kernel's code: run under gdb by gdb_backtrace.sh, whose `bt` must name the
 * kernel's functions (GDB's JIT interface, src/host/linker/debug_registration.hpp). */
#include <sk.h>
#include <stdint.h>
#include <stdio.h>

static int check(sk_status st, const char *what) {
  if (st != SK_OK) fprintf(stderr, "gdb_kernel: %s: %s: %s\n", what, sk_status_name(st), sk_last_error());
  return st != SK_OK;
}

int main(int argc, char **argv) {
  sk_device *dev = NULL;
  sk_module *mod = NULL;
  sk_kernel *k = NULL;
  uint32_t *out = NULL;
  void *args[1];
  if (argc != 2) {
    fprintf(stderr, "usage: gdb_kernel KERNEL.o\n");
    return 2;
  }
  if (check(sk_device_open("host:cores=1", &dev), "sk_device_open") ||
      check(sk_module_load_file(dev, argv[1], &mod), argv[1]) ||
      check(sk_module_get_kernel(mod, "debug_trap_kernel", &k), "sk_module_get_kernel") ||
      check(sk_mem_alloc(dev, sizeof *out, (void **)&out), "sk_mem_alloc"))
    return 1;
  args[0] = &out;
  if (check(sk_launch_kernel(k, 1, args, NULL), "sk_launch_kernel") ||
      check(sk_stream_synchronize(NULL), "sk_stream_synchronize"))
    return 1;
  printf("kernel returned %u\n", (unsigned)out[0]);
  sk_mem_free(dev, out);
  sk_module_unload(mod);
  sk_device_close(dev);
  return 0;
}
