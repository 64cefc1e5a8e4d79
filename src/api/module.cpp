// sk_module_load(_file, _files, _images), sk_module_unload, sk_module_get_kernel(_with_signature, _desc).
#include <vector>

#include "api/handles.hpp"
#include "api/object_file.hpp"
#include "api/struct_size.hpp"
#include "common/device_api_usage.hpp"

using sk::fail;

namespace {

// One input, or several linked as one module (host) or refused (CUDA): the backend decides.
sk_status load(sk_device *dev, const std::vector<sk::backend::ModuleImage> &images, const char *call,
               sk_module **out) {
  std::unique_ptr<sk::backend::Module> loaded;
  if (sk_status st = dev->backend->load_module(images, call, &loaded); st != SK_OK) return st;
  auto mod = std::make_unique<sk_module>();
  mod->backend = std::move(loaded);
  mod->owner.attach(dev->life, sk::api::ChildKind::Module);
  *out = mod.release();
  return SK_OK;
}

sk_status get_kernel(sk_module *mod, const char *name, const sk::backend::KernelRequest &request, const char *call,
                     sk_kernel **out) {
  if (sk_status st = sk::api::check(mod, call)) return st;
  if (!name) return fail(SK_ERR_INVALID_ARGUMENT, "%s: name is NULL", call);
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "%s: out is NULL", call);
  // A module hands out one handle per (name, signature, launch facts).
  const std::string key = std::string(name) + "|" + (request.signature ? request.signature : "<metadata>") + "|" +
                          std::to_string(request.threads) + "|" + std::to_string(request.dynamic_shared) + "|" +
                          std::to_string(request.block[0]) + "x" + std::to_string(request.block[1]) + "x" +
                          std::to_string(request.block[2]) + "|" + std::to_string(request.flags) + "|" +
                          std::to_string(request.cluster[0]) + "x" + std::to_string(request.cluster[1]) + "x" +
                          std::to_string(request.cluster[2]);
  if (auto it = mod->kernels.find(key); it != mod->kernels.end()) {
    *out = it->second.get();
    return SK_OK;
  }
  std::shared_ptr<sk::backend::Kernel> kernel;
  if (sk_status st = mod->backend->get_kernel(name, request, call, &kernel); st != SK_OK) return st;
  if (request.flags & SK_KERNEL_DESC_COOPERATIVE) kernel->usage |= sk::kUsesOwnGridBarrier;
  auto handle = std::make_unique<sk_kernel>();
  handle->backend = std::move(kernel);
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
    return load(dev, {{sk::backend::memory_image_label(size), image, size}}, "sk_module_load", out);
  });
}

SK_API sk_status sk_module_load_file(sk_device *dev, const char *path, sk_module **out) {
  if (sk_status st = sk::api::check(dev, "sk_module_load_file")) return st;
  if (!path) return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_load_file: path is NULL");
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_load_file: out is NULL");
  return sk::api::guarded("sk_module_load_file", [&]() -> sk_status {
    sk::api::ObjectFile file;
    if (sk_status st = file.open(path, sk::backend::kMaxObjectSize); st != SK_OK) return st;
    return load(dev, {{path, file.data(), file.size()}}, "sk_module_load_file", out);
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
    std::vector<sk::backend::ModuleImage> images(count);
    for (size_t i = 0; i < count; ++i) {
      if (sk_status st = files[i].open(paths[i], sk::backend::kMaxObjectSize); st != SK_OK) return st;
      images[i] = {paths[i], files[i].data(), files[i].size()};
    }
    return load(dev, images, call, out);
  });
}

SK_API sk_status sk_module_load_images(sk_device *dev, const void *const *images, const size_t *sizes, size_t count,
                                       sk_module **out) {
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
    std::vector<sk::backend::ModuleImage> inputs(count);
    for (size_t i = 0; i < count; ++i) inputs[i] = {"<memory #" + std::to_string(i) + ">", images[i], sizes[i]};
    return load(dev, inputs, call, out);
  });
}

SK_API void sk_module_unload(sk_module *mod) {
  if (mod && sk::api::check_destroy(mod, "sk_module_unload") != SK_OK) return;  // unloaded twice: ignored
  delete mod;
}

SK_API sk_status sk_module_get_kernel(sk_module *mod, const char *name, sk_kernel **out) {
  return sk::api::guarded("sk_module_get_kernel",
                          [&] { return get_kernel(mod, name, {}, "sk_module_get_kernel", out); });
}

SK_API sk_status sk_module_get_kernel_with_signature(sk_module *mod, const char *name, const char *signature,
                                                     sk_kernel **out) {
  if (sk_status st = sk::api::check(mod, "sk_module_get_kernel_with_signature")) return st;
  if (!signature) return fail(SK_ERR_INVALID_ARGUMENT, "sk_module_get_kernel_with_signature: signature is NULL");
  return sk::api::guarded("sk_module_get_kernel_with_signature", [&] {
    return get_kernel(mod, name, {signature}, "sk_module_get_kernel_with_signature", out);
  });
}

SK_API sk_status sk_module_get_kernel_desc(sk_module *mod, const char *name, const sk_kernel_desc *desc,
                                           sk_kernel **out) {
  const char *call = "sk_module_get_kernel_desc";
  if (desc && desc->struct_size < offsetof(sk_kernel_desc, signature) + sizeof desc->signature)
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: desc->struct_size %u is too small (sizeof(sk_kernel_desc) is %zu)",
                call, desc->struct_size, sizeof(sk_kernel_desc));
  sk::backend::KernelRequest request;
  if (desc) request.signature = desc->signature;
  if (SK_STRUCT_COVERS(desc, sk_kernel_desc, threads)) request.threads = desc->threads;
  if (SK_STRUCT_COVERS(desc, sk_kernel_desc, dynamic_shared)) request.dynamic_shared = desc->dynamic_shared;
  if (SK_STRUCT_COVERS(desc, sk_kernel_desc, block)) std::copy(desc->block, desc->block + 3, request.block);
  if (SK_STRUCT_COVERS(desc, sk_kernel_desc, flags)) request.flags = desc->flags;
  if (SK_STRUCT_COVERS(desc, sk_kernel_desc, cluster)) std::copy(desc->cluster, desc->cluster + 3, request.cluster);
  if (const uint32_t unknown = request.flags & ~SK_KERNEL_DESC_COOPERATIVE)
    return fail(SK_ERR_INVALID_ARGUMENT,
                "%s: kernel '%s': desc->flags 0x%x has bits that are no SK_KERNEL_DESC_* flag (0x%x)", call,
                name ? name : "(null)", request.flags, unknown);
  return sk::api::guarded(call, [&] { return get_kernel(mod, name, request, call, out); });
}

}  // extern "C"
