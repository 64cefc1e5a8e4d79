// sk_dcci_line, sk_dcci_all, sk_gm_load and sk_gm_store on the host device.
#include "host/device_api/device_api_cache.hpp"

#include <cstring>

namespace sk::host {
namespace {

// Outside a task (a kernel called directly by the host) flushes still fence; nothing counts.
void flush(CoreContext *c) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (c) ++c->cache_flushes;
}

// The per-access flush is on by default; the plan turns it off for kernels the options list
// (dcci-before/after/disable) and for tiling-sink kernels, which get whole-cache flushes.
bool per_access_flush(const CoreContext *c) { return !c || !c->step || c->step->gm_flush; }

// A scalar access of global memory as one access of its size where the size allows (the
// vendor's scalar unit reads or writes the value at once), bytewise otherwise.
void copy_volatile(volatile void *dst, const volatile void *src, uint32_t size) {
  switch (size) {
    case 1: *static_cast<volatile uint8_t *>(dst) = *static_cast<const volatile uint8_t *>(src); return;
    case 2:
      if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 1) == 0) {
        *static_cast<volatile uint16_t *>(dst) = *static_cast<const volatile uint16_t *>(src);
        return;
      }
      break;
    case 4:
      if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 3) == 0) {
        *static_cast<volatile uint32_t *>(dst) = *static_cast<const volatile uint32_t *>(src);
        return;
      }
      break;
    case 8:
      if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 7) == 0) {
        *static_cast<volatile uint64_t *>(dst) = *static_cast<const volatile uint64_t *>(src);
        return;
      }
      break;
    default: break;
  }
  for (uint32_t i = 0; i < size; ++i)
    static_cast<volatile uint8_t *>(dst)[i] = static_cast<const volatile uint8_t *>(src)[i];
}

}  // namespace

void api_dcci_line(const volatile void *) { flush(t_core); }

void api_dcci_all() { flush(t_core); }

void api_gm_load(void *dst, const volatile void *src, uint32_t size) {
  CoreContext *c = t_core;
  // Flush before the load: it must see what other cores (or the previous kernel) stored.
  if (per_access_flush(c)) flush(c);
  copy_volatile(dst, src, size);
}

void api_gm_store(volatile void *dst, const void *src, uint32_t size) {
  CoreContext *c = t_core;
  copy_volatile(dst, src, size);
  // Flush after the store: it must be visible before what the kernel does next.
  if (per_access_flush(c)) flush(c);
}

}  // namespace sk::host
