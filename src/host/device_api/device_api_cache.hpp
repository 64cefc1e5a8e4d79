// Cache maintenance (DCCI) on the host device. A CPU's caches are coherent, so what a flush must
// give a kernel is ordering: every flush here is a full memory fence (seq_cst). Where flushes
// happen is the plan's decision (common/cache_plan.hpp), carried per step in StepExec.
#pragma once
#include <atomic>
#include <cstdint>

#include "host/executor/core_context.hpp"

namespace sk::host {

// One whole-cache flush on this core: before or after a step whose plan asks for it.
inline void flush_cache_around_step(CoreContext &ctx) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  ++ctx.cache_flushes;
}

// Device-API functions of sk_kernel.h's cache section (bound by host/device_api/device_api.cpp).
void api_dcci_line(const volatile void *addr);
void api_dcci_all();
void api_gm_load(void *dst, const volatile void *src, uint32_t size);
void api_gm_store(volatile void *dst, const void *src, uint32_t size);

}  // namespace sk::host
