// sk_module_load(_file, _files, _images), sk_module_unload, sk_module_get_kernel(_with_signature).
#include <cstdio>
#include <vector>

#include "api/cuda_entry.hpp"
#include "api/handles.hpp"
#include "api/object_file.hpp"
#include "core/device_api_usage.hpp"
#include "elf/combine.hpp"

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

// Several inputs as one module: the host device links them together; a CUDA module is one
// cubin, fatbin or PTX (nvJitLink links device code, not host archives: link them first).
sk_status load_set(sk_device *dev, const std::vector<sk::elf::Input> &inputs, const char *call, sk_module **out) {
  if (inputs.size() == 1) return load(dev, inputs[0].bytes, inputs[0].size, inputs[0].label, out);
  if (dev->cuda)
    return fail(SK_ERR_UNSUPPORTED,
                "%s: %zu objects: a CUDA module is one cubin, fatbin or PTX; link the device code "
                "into one first (nvcc -dlink, nvlink) and load that",
                call, inputs.size());
  std::string label;
  for (const sk::elf::Input &in : inputs) label += (label.empty() ? "" : " + ") + in.label;
  std::shared_ptr<sk::host::LinkedModule> linked;
  if (sk_status st = dev->impl->load_module_set(inputs, label, &linked); st != SK_OK) return st;
  auto mod = std::make_unique<sk_module>();
  mod->device = dev->impl;
  mod->linked = std::move(linked);
  *out = mod.release();
  (*out)->owner.attach(dev->life, sk::api::ChildKind::Module);
  return SK_OK;
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

SK_API sk_status sk_module_load_files(sk_device *dev, const char *const *paths, size_t count, sk_module **out) {
  constexpr const char *call = "sk_module_load_files";
  if (sk_status st = sk::api::check(dev, call)) return st;
  if (count == 0) return fail(SK_ERR_INVALID_ARGUMENT, "%s: count is 0 (no objects to load)", call);
  if (!paths) return fail(SK_ERR_INVALID_ARGUMENT, "%s: paths is NULL", call);
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "%s: out is NULL", call);
  for (size_t i = 0; i < count; ++i)
    if (!paths[i]) return fail(SK_ERR_INVALID_ARGUMENT, "%s: paths[%zu] is NULL", call, i);
  if (count == 1) return sk_module_load_file(dev, paths[0], out);
  return sk::api::guarded(call, [&]() -> sk_status {
    std::vector<sk::api::ObjectFile> files(count);
    std::vector<sk::elf::Input> inputs(count);
    for (size_t i = 0; i < count; ++i) {
      if (sk_status st = files[i].open(paths[i], sk::host::kMaxObjectSize); st != SK_OK) return st;
      inputs[i] = {paths[i], files[i].data(), files[i].size()};
    }
    return load_set(dev, inputs, call, out);
  });
}

SK_API sk_status sk_module_load_images(sk_device *dev, const void *const *images, const size_t *sizes,
                                       size_t count, sk_module **out) {
  constexpr const char *call = "sk_module_load_images";
  if (sk_status st = sk::api::check(dev, call)) return st;
  if (count == 0) return fail(SK_ERR_INVALID_ARGUMENT, "%s: count is 0 (no objects to load)", call);
  if (!images) return fail(SK_ERR_INVALID_ARGUMENT, "%s: images is NULL", call);
  if (!sizes) return fail(SK_ERR_INVALID_ARGUMENT, "%s: sizes is NULL", call);
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "%s: out is NULL", call);
  for (size_t i = 0; i < count; ++i) {
    if (!images[i]) return fail(SK_ERR_INVALID_ARGUMENT, "%s: images[%zu] is NULL", call, i);
    if (sizes[i] == 0) return fail(SK_ERR_BAD_BINARY, "%s: <memory #%zu> is empty (0 bytes)", call, i);
  }
  if (count == 1) return sk_module_load(dev, images[0], sizes[0], out);
  return sk::api::guarded(call, [&]() -> sk_status {
    std::vector<sk::elf::Input> inputs(count);
    for (size_t i = 0; i < count; ++i) inputs[i] = {"<memory #" + std::to_string(i) + ">", images[i], sizes[i]};
    return load_set(dev, inputs, call, out);
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
