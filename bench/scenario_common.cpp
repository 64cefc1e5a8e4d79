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

sk_device *open_host(const Options &opt, uint32_t cores, const char *keys) {
  std::string spec = "host:cores=" + std::to_string(cores);
  if (keys && *keys) spec += std::string(",") + keys;
  if (!opt.device_keys.empty()) spec += "," + opt.device_keys;
  sk_device *dev = nullptr;
  return sk_ok(sk_device_open(spec.c_str(), &dev), spec.c_str()) ? dev : nullptr;
}

bool load_kernel(sk_device *dev, const char *object, const char *kernel, sk_module **mod, sk_kernel **out) {
  return sk_ok(sk_module_load_file(dev, kernel_object(object).c_str(), mod), "load") &&
         sk_ok(sk_module_get_kernel(*mod, kernel, out), kernel);
}

sk_superkernel *chain_of(sk_device *dev, sk_kernel *k, size_t count, uint32_t block_dim, const char *name,
                         void **args) {
  sk_scope *scope = nullptr;
  sk_superkernel *sk = nullptr;
  if (!sk_ok(sk_scope_begin(dev, name, nullptr, &scope), "sk_scope_begin")) return nullptr;
  for (size_t i = 0; i < count; ++i)
    if (!sk_ok(sk_add_kernel(scope, k, block_dim, args, nullptr), "sk_add_kernel")) {
      sk_scope_abort(scope);
      return nullptr;
    }
  return sk_ok(sk_finalize(scope, &sk), "sk_finalize") ? sk : nullptr;
}

std::string explain_of(sk_superkernel *sk) {
  size_t needed = 0;
  if (!sk_ok(sk_superkernel_explain(sk, nullptr, 0, &needed), "sk_superkernel_explain")) return {};
  std::string json(needed, '\0');
  if (!sk_ok(sk_superkernel_explain(sk, json.data(), json.size(), nullptr), "sk_superkernel_explain")) return {};
  json.pop_back();  // the NUL
  return json;
}

}  // namespace bench
