/* The README's example: fuse three launches of one kernel into one super kernel and run it. */
#include <sk.h>
#include <stdio.h>

#ifndef SK_QUICKSTART_KERNEL
#define SK_QUICKSTART_KERNEL "quickstart_kernel.o"
#endif
#define CHECK(call) if ((call) != SK_OK) { fprintf(stderr, "%s\n", sk_last_error()); return 1; }

int main(int argc, char **argv) {
  sk_device *dev; sk_module *mod; sk_kernel *saxpy; sk_scope *scope; sk_superkernel *sk;
  float *x, *y, a = 2.0f;
  uint32_t n = 1024, i;
  int ok;
  CHECK(sk_device_open("host", &dev));
  CHECK(sk_module_load_file(dev, argc > 1 ? argv[1] : SK_QUICKSTART_KERNEL, &mod));
  CHECK(sk_module_get_kernel(mod, "saxpy", &saxpy));
  CHECK(sk_mem_alloc(dev, n * sizeof(float), (void **)&x));
  CHECK(sk_mem_alloc(dev, n * sizeof(float), (void **)&y));
  for (i = 0; i < n; ++i) x[i] = 1.0f, y[i] = 0.0f; /* host device: plain host memory */
  {
    void *args[] = {&a, &x, &y, &n}; /* pointers to each argument's value; values are copied */
    CHECK(sk_scope_begin(dev, "quickstart", NULL, &scope));
    for (i = 0; i < 3; ++i) CHECK(sk_add_kernel(scope, saxpy, 4, args, NULL)); /* 4 blocks */
    CHECK(sk_finalize(scope, &sk));
  }
  CHECK(sk_launch(sk, NULL)); /* one task runs all three */
  CHECK(sk_stream_synchronize(NULL));
  printf("y[0] = %g (expected 6)\n", y[0]);
  ok = y[0] == 6.0f && y[n - 1] == 6.0f;
  sk_superkernel_destroy(sk); sk_module_unload(mod);
  sk_mem_free(dev, x); sk_mem_free(dev, y); sk_device_close(dev);
  return ok ? 0 : 1;
}
