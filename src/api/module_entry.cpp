// sk_module_load(_file), sk_module_unload, sk_module_get_kernel(_with_signature).
#include <cstdio>
#include <vector>

#include "api/cuda_entry.hpp"
#include "api/handles.hpp"
#include "api/object_file.hpp"
#include "core/device_api_usage.hpp"

using sk::fail;

namespace {

sk_status host_load(sk_device *dev, const void *image, size_t size, const std::string &label,
                    sk_module **out) {
  std::shared_ptr<sk::host::LinkedModule> linked;
  if (sk_status st = dev->impl->load_module(image, size, label, &linked); st != SK_OK) return st;
  auto mod = std::make_unique<sk_module>();
  mod->device = dev->impl;
  mod->linked = std::move(linked);
  *out = mod.release();
  return SK_OK;
}

sk_status load(sk_device *dev, const void *image, size_t size, const std::string &label, sk_module **out) {
  sk_status st = dev->cuda ? sk::api::cuda_module_load(dev, image, size, label, out)
                           : host_load(dev, image, size, label, out);
  if (st == SK_OK) (*out)->owner.attach(dev->life, sk::api::ChildKind::Module);
  return st;
}

// A host kernel's implementation: its function in the linked module, signature, call interface.
sk_status host_kernel_impl(sk_module *mod, const char *name, const char *signature, const char *call,
                           std::shared_ptr<KernelImpl> *out) {
  const sk::host::LinkedModule &lm = *mod->linked;
  const sk::host::LinkedFunction *fn = lm.object->find_function(name);
  if (!fn)
    return fail(SK_ERR_NOT_FOUND, "%s: no function '%s' is defined in %s", call, name, lm.label.c_str());
  const sk::KernelMetadata *meta = lm.find_metadata(name);
  const std::string what = std::string("kernel '") + name + "' of " + lm.label;
  auto impl = std::make_shared<KernelImpl>();
  if (sk_status st = sk::kernel_signature(signature, meta, what, call,
                                          ".sk.kernels metadata (built without SK_KERNEL?)", &impl->signature);
      st != SK_OK)
    return st;
  impl->device = mod->device;
  impl->module = mod->linked;
  impl->symbol = name;
  impl->core_type = meta ? meta->core_type : "vector";
  sk::parse_kernel_kind(impl->core_type, &impl->kind);  // the metadata reader admits only the four
  impl->signature_text = sk::signature_to_string(impl->signature);
  impl->usage = sk::device_api_usage(fn->undefined_references);
  impl->fn = fn->address;
  if (sk_status st = sk::host::prepare_call(impl->signature, name, &impl->call); st != SK_OK) return st;
  *out = std::move(impl);
  return SK_OK;
}

sk_status get_kernel(sk_module *mod, const char *name, const char *signature, sk_kernel **out) {
  const char *call = signature ? "sk_module_get_kernel_with_signature" : "sk_module_get_kernel";
  if (sk_status st = sk::api::check(mod, call)) return st;
  if (!name) return fail(SK_ERR_INVALID_ARGUMENT, "%s: name is NULL", call);
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "%s: out is NULL", call);
  // A module hands out one handle per (name, signature), host and CUDA alike.
  const std::string key = std::string(name) + "|" + (signature ? signature : "<metadata>");
  if (auto it = mod->kernels.find(key); it != mod->kernels.end()) {
    *out = it->second.get();
    return SK_OK;
  }
  std::shared_ptr<KernelImpl> impl;
  if (sk_status st = mod->cuda ? sk::api::cuda_kernel_impl(mod, name, signature, call, &impl)
                               : host_kernel_impl(mod, name, signature, call, &impl);
      st != SK_OK)
    return st;
  auto handle = std::make_unique<sk_kernel>();
  handle->impl = std::move(impl);
  handle->owner.attach(mod->owner.life(), sk::api::ChildKind::Module, false);
  *out = handle.get();
  mod->kernels.emplace(key, std::move(handle));
  return SK_OK;
}

}  // namespace

extern "C" {

SK_API sk_status sk_module_load(sk_device *dev, const void *image, size_t size, sk_module **out) {
  if (sk_status st = sk::api::check(dev, "sk_module_load")) return st;
  if (!image) return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_load: image is NULL");
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_load: out is NULL");
  if (size == 0) return fail(SK_ERR_BAD_BINARY, "sk_module_load: image is empty (0 bytes)");
  return sk::api::guarded("sk_module_load", [&] {
    char label[64];
    std::snprintf(label, sizeof label, "<memory image of %zu bytes>", size);
    return load(dev, image, size, label, out);
  });
}

SK_API sk_status sk_module_load_file(sk_device *dev, const char *path, sk_module **out) {
  if (sk_status st = sk::api::check(dev, "sk_module_load_file")) return st;
  if (!path) return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_load_file: path is NULL");
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_load_file: out is NULL");
  return sk::api::guarded("sk_module_load_file", [&]() -> sk_status {
    sk::api::ObjectFile file;
    if (sk_status st = file.open(path, sk::host::kMaxObjectSize); st != SK_OK) return st;
    return load(dev, file.data(), file.size(), path, out);
  });
}

SK_API void sk_module_unload(sk_module *mod) {
  if (mod && sk::api::check_destroy(mod, "sk_module_unload") != SK_OK) return;  // unloaded twice: ignored
  delete mod;
}

SK_API sk_status sk_module_get_kernel(sk_module *mod, const char *name, sk_kernel **out) {
  return sk::api::guarded("sk_module_get_kernel", [&] { return get_kernel(mod, name, nullptr, out); });
}

SK_API sk_status sk_module_get_kernel_with_signature(sk_module *mod, const char *name,
                                                     const char *signature, sk_kernel **out) {
  if (sk_status st = sk::api::check(mod, "sk_module_get_kernel_with_signature")) return st;
  if (!signature)
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_get_kernel_with_signature: signature is NULL");
  return sk::api::guarded("sk_module_get_kernel_with_signature",
                          [&] { return get_kernel(mod, name, signature, out); });
}

}  // extern "C"
