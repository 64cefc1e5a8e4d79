// sk_device_open / close / cores / synchronize and device memory.
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "api/cuda_entry.hpp"
#include "api/handles.hpp"
#include "api/open_devices.hpp"

using sk::fail;

namespace sk::api {

sk_status device_closed(const void *h, const char *call, const char *what, const DeviceLife &life) {
  return fail(SK_ERR_STATE, "%s: %s %p belongs to device \"%s\", which was closed (only its destroy call is valid)",
              call, what, h, life.spec.c_str());
}

}  // namespace sk::api

namespace {

// Marks the device's children closed and, if any live, says which for sk_last_error().
void close_children(sk_device *dev) {
  sk::api::DeviceLife &life = *dev->life;
  life.closed.store(true, std::memory_order_relaxed);
  static const char *const kinds[] = {"module", "stream", "scope", "super kernel"};
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
    if (sk::api::is_cuda_spec(spec)) return sk::api::cuda_device_open(spec, out);
    sk::DeviceSpec parsed;
    if (sk_status st = sk::parse_device_spec(spec, &parsed); st != SK_OK) return st;
    if (parsed.backend != "host")
      return fail(SK_ERR_INVALID_ARGUMENT,
                  "device spec \"%s\": unknown backend '%s' (this build has: host, cuda)", spec,
                  parsed.backend.c_str());
    std::unique_ptr<sk::host::HostDevice> impl;
    if (sk_status st = sk::host::HostDevice::open(parsed, &impl); st != SK_OK) return st;
    auto dev = std::make_unique<sk_device>();
    dev->impl = std::move(impl);
    dev->spec = dev->life->spec = spec;
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
  if (dev->cuda) return sk::api::cuda_device_close(dev);
  sk::api::unregister_device(dev);
  // Queued work ends first; objects made from the device keep its executor alive after this.
  dev->impl->executor().wait_idle();
  delete dev;
}

SK_API sk_status sk_device_cores(sk_device *dev, uint32_t *out) {
  if (sk_status st = sk::api::check(dev, "sk_device_cores")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_device_cores: out is NULL");
  *out = dev->cuda ? sk::api::cuda_device_cores(dev) : dev->impl->cores();
  return SK_OK;
}

SK_API sk_status sk_device_synchronize(sk_device *dev) {
  if (sk_status st = sk::api::check(dev, "sk_device_synchronize")) return st;
  if (dev->cuda)
    return sk::api::guarded("sk_device_synchronize", [&] { return sk::api::cuda_synchronize_default(dev); });
  return dev->impl->executor().synchronize(&dev->impl->default_stream(), "sk_device_synchronize");
}

SK_API sk_status sk_mem_alloc(sk_device *dev, size_t size, void **out) {
  if (sk_status st = sk::api::check(dev, "sk_mem_alloc")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_mem_alloc: out is NULL");
  if (dev->cuda) return sk::api::guarded("sk_mem_alloc", [&] { return sk::api::cuda_mem_alloc(dev, size, out); });
  return sk::api::guarded("sk_mem_alloc", [&] { return dev->impl->mem_alloc(size, out); });
}

SK_API void sk_mem_free(sk_device *dev, void *ptr) {
  if (!dev || !ptr) return;
  if (sk::api::check(dev, "sk_mem_free") != SK_OK) return;  // stale device: ignored, with a message
  if (dev->cuda) return sk::api::cuda_mem_free(dev, ptr);
  if (!dev->impl->mem_free(ptr))
    fail(SK_ERR_INVALID_ARGUMENT, "sk_mem_free: %p was not allocated by this device (ignored)", ptr);
}

SK_API sk_status sk_memcpy(sk_device *dev, void *dst, const void *src, size_t size) {
  if (sk_status st = sk::api::check(dev, "sk_memcpy")) return st;
  if (size == 0) return SK_OK;
  if (!dst || !src) return fail(SK_ERR_INVALID_ARGUMENT, "sk_memcpy: %s is NULL", dst ? "src" : "dst");
  if (dev->cuda) return sk::api::guarded("sk_memcpy", [&] { return sk::api::cuda_memcpy(dev, dst, src, size); });
  dev->impl->executor().wait_idle();
  std::memmove(dst, src, size);
  return SK_OK;
}

}  // extern "C"
