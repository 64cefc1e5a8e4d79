// sk_device_open / close / cores / synchronize and device memory.
#include <string>

#include "api/backend_list.hpp"
#include "api/capabilities.hpp"
#include "api/capture.hpp"
#include "api/handles.hpp"
#include "api/open_devices.hpp"

using sk::fail;

namespace sk::api {

sk_status device_closed(const void *h, const char *call, const char *what, const DeviceLife &life) {
  return fail(SK_ERR_STATE, "%s: %s %p belongs to device \"%s\", which was closed (only its destroy call is valid)",
              call, what, h, life.spec.c_str());
}

sk_status different_devices(const char *call, const std::string &first, const std::string &second) {
  return fail(SK_ERR_INCOMPATIBLE, "%s: %s and %s belong to different devices", call, first.c_str(), second.c_str());
}

}  // namespace sk::api

namespace {

// Marks the device's children closed and, if any live, says which for sk_last_error().
void close_children(sk_device *dev) {
  sk::api::DeviceLife &life = *dev->life;
  life.closed.store(true, std::memory_order_relaxed);
  static const char *const kinds[] = {"module", "stream", "scope", "super kernel", "event"};
  std::string alive;
  for (uint32_t k = 0; k < static_cast<uint32_t>(sk::api::ChildKind::Count); ++k) {
    const uint32_t n = life.live[k].load(std::memory_order_relaxed);
    if (n == 0) continue;
    alive += (alive.empty() ? "" : ", ") + std::to_string(n) + " " + kinds[k] + (n == 1 ? "" : "s");
  }
  if (!alive.empty())
    fail(SK_ERR_STATE,
         "sk_device_close: device \"%s\" was closed with %s still alive: they fail with SK_ERR_STATE until "
         "destroyed",
         life.spec.c_str(), alive.c_str());
}

}  // namespace

extern "C" {

SK_API sk_status sk_device_open(const char *spec, sk_device **out) {
  if (!spec) return fail(SK_ERR_INVALID_ARGUMENT, "sk_device_open: spec is NULL");
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_device_open: out is NULL");
  return sk::api::guarded("sk_device_open", [&]() -> sk_status {
    std::shared_ptr<sk::backend::Device> backend;
    if (sk_status st = sk::api::open_backend(spec, &backend); st != SK_OK) return st;
    auto dev = std::make_unique<sk_device>();
    dev->backend = std::move(backend);
    dev->life->spec = spec;
    sk::api::register_device(dev.get());
    *out = dev.release();
    return SK_OK;
  });
}

SK_API void sk_device_close(sk_device *dev) {
  if (!dev) return;
  if (!dev->live()) {  // closed twice: ignored, with a message
    sk::api::check(dev, "sk_device_close");
    return;
  }
  try {
    close_children(dev);
  } catch (const std::bad_alloc &) {
    fail(SK_ERR_OUT_OF_MEMORY, "sk_device_close: out of memory");
  }
  sk::api::unregister_device(dev);
  // Queued work ends first; objects made from the device keep its backend alive after this.
  dev->backend->close();
  delete dev;
}

SK_API sk_status sk_device_cores(sk_device *dev, uint32_t *out) {
  if (sk_status st = sk::api::check(dev, "sk_device_cores")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_device_cores: out is NULL");
  *out = dev->backend->cores();
  return SK_OK;
}

SK_API sk_status sk_device_synchronize(sk_device *dev) {
  if (sk_status st = sk::api::check(dev, "sk_device_synchronize")) return st;
  return sk::api::guarded("sk_device_synchronize", [&] {
    if (sk_status st = sk::api::refuse_on_device(*dev->life, "sk_device_synchronize")) return st;
    return dev->backend->synchronize(nullptr, "sk_device_synchronize");
  });
}

SK_API sk_status sk_mem_alloc(sk_device *dev, size_t size, void **out) {
  if (sk_status st = sk::api::check(dev, "sk_mem_alloc")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_mem_alloc: out is NULL");
  return sk::api::guarded("sk_mem_alloc", [&] { return dev->backend->mem_alloc(size, out); });
}

SK_API void sk_mem_free(sk_device *dev, void *ptr) {
  if (!dev || !ptr) return;
  if (sk::api::check(dev, "sk_mem_free") != SK_OK) return;  // stale device: ignored, with a message
  if (!dev->backend->mem_free(ptr))
    fail(SK_ERR_INVALID_ARGUMENT, "sk_mem_free: %p was not allocated by this device (ignored)", ptr);
}

SK_API sk_status sk_memcpy(sk_device *dev, void *dst, const void *src, size_t size) {
  if (sk_status st = sk::api::check(dev, "sk_memcpy")) return st;
  if (size == 0) return SK_OK;
  if (!dst || !src) return fail(SK_ERR_INVALID_ARGUMENT, "sk_memcpy: %s is NULL", dst ? "src" : "dst");
  return sk::api::guarded("sk_memcpy", [&] {
    if (sk_status st = sk::api::refuse_on_device(*dev->life, "sk_memcpy")) return st;
    return dev->backend->memcpy(dst, src, size);
  });
}

SK_API sk_status sk_tensor_map_encode(sk_device *dev, const sk_tensor_map_desc *desc, void *tensor_map) {
  if (sk_status st = sk::api::check(dev, "sk_tensor_map_encode")) return st;
  if (!desc || !tensor_map)
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_tensor_map_encode: %s is NULL", desc ? "tensor_map" : "desc");
  return sk::api::guarded("sk_tensor_map_encode",
                          [&] { return sk::api::encode_tensor_map(*dev->backend, *desc, tensor_map); });
}

}  // extern "C"
