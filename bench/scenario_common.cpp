#include <cstdio>
#include <cstdlib>

#include "scenarios.hpp"

namespace bench {

std::string kernel_object(const char *name) {
  // $SK_BENCH_KERNELS: a copy of the kernels elsewhere (scripts/bench-host --prebuilt runs a
  // bundle built on another machine, where the build tree's path does not exist).
  const char *dir = std::getenv("SK_BENCH_KERNELS");
  return std::string(dir && *dir ? dir : SK_BENCH_KERNEL_DIR) + "/" + name + ".o";
}

bool sk_ok(sk_status st, const char *what) {
  if (st == SK_OK) return true;
  std::fprintf(stderr, "sk-bench: %s: %s: %s\n", what, sk_status_name(st), sk_last_error());
  return false;
}

bool load_kernel(sk_device *dev, const char *object, const char *kernel, sk_module **mod, sk_kernel **out) {
  return sk_ok(sk_module_load_file(dev, kernel_object(object).c_str(), mod), "load") &&
         sk_ok(sk_module_get_kernel(*mod, kernel, out), kernel);
}

}  // namespace bench
