// sk_module_kernel_count, sk_module_kernel_name, sk_kernel_signature, sk_kernel_core_type: what
// a loaded module declares and what a kernel takes, so that bindings read no ELF themselves.
#include <cstring>
#include <string>
#include <vector>

#include "api/backend_list.hpp"
#include "api/handles.hpp"

using sk::fail;

namespace {

const std::vector<sk::KernelMetadata> &declared_kernels(const sk_module &mod) {
  return mod.backend->declared_kernels();
}

// sk_superkernel_explain's buffer protocol for a string: `value` and its NUL into buf, the size
// into *needed; only buf NULL, cap 0, needed set is a size query.
sk_status copy_out(const char *call, const std::string &what, const std::string &value, char *buf, size_t cap,
                   size_t *needed) {
  if (!buf && cap > 0) return fail(SK_ERR_INVALID_ARGUMENT, "%s: buf is NULL but cap is %zu", call, cap);
  const size_t size = value.size() + 1;
  if (needed) *needed = size;
  if (cap < size) {
    if (buf || !needed)
      return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s needs %zu bytes, cap is %zu", call, what.c_str(), size, cap);
    return SK_OK;
  }
  std::memcpy(buf, value.c_str(), size);
  return SK_OK;
}

std::string kernel_what(const sk::backend::Kernel &k) { return "kernel '" + k.symbol + "'"; }

}  // namespace

extern "C" {

SK_API sk_status sk_module_inspect(const char *spec, const void *image, size_t size, char *buf, size_t cap,
                                   size_t *needed) {
  const char *call = "sk_module_inspect";
  if (!spec) return fail(SK_ERR_INVALID_ARGUMENT, "%s: spec is NULL", call);
  if (!image) return fail(SK_ERR_INVALID_ARGUMENT, "%s: image is NULL", call);
  if (size == 0) return fail(SK_ERR_BAD_BINARY, "%s: image is empty (0 bytes)", call);
  return sk::api::guarded(call, [&]() -> sk_status {
    std::string json;
    if (sk_status st = sk::api::inspect_module(spec, image, size, &json); st != SK_OK) return st;
    return copy_out(call, "the module's description", json, buf, cap, needed);
  });
}

SK_API sk_status sk_module_kernel_count(sk_module *mod, size_t *out) {
  if (sk_status st = sk::api::check(mod, "sk_module_kernel_count")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_kernel_count: out is NULL");
  *out = declared_kernels(*mod).size();
  return SK_OK;
}

SK_API sk_status sk_module_kernel_name(sk_module *mod, size_t index, char *buf, size_t cap, size_t *needed) {
  constexpr const char *call = "sk_module_kernel_name";
  if (sk_status st = sk::api::check(mod, call)) return st;
  const std::vector<sk::KernelMetadata> &declared = declared_kernels(*mod);
  if (index >= declared.size())
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: the module declares %zu kernels; index %zu does not exist", call,
                declared.size(), index);
  return sk::api::guarded(call, [&] {
    const std::string what = "the name of kernel " + std::to_string(index);
    return copy_out(call, what, declared[index].name, buf, cap, needed);
  });
}

SK_API sk_status sk_kernel_signature(sk_kernel *kernel, char *buf, size_t cap, size_t *needed) {
  constexpr const char *call = "sk_kernel_signature";
  if (sk_status st = sk::api::check(kernel, call)) return st;
  return sk::api::guarded(call, [&] {
    const sk::backend::Kernel &k = *kernel->backend;
    return copy_out(call, "the signature of " + kernel_what(k), k.signature_text, buf, cap, needed);
  });
}

SK_API sk_status sk_kernel_core_type(sk_kernel *kernel, char *buf, size_t cap, size_t *needed) {
  constexpr const char *call = "sk_kernel_core_type";
  if (sk_status st = sk::api::check(kernel, call)) return st;
  return sk::api::guarded(call, [&] {
    const sk::backend::Kernel &k = *kernel->backend;
    return copy_out(call, "the core type of " + kernel_what(k), k.core_type, buf, cap, needed);
  });
}

}  // extern "C"
