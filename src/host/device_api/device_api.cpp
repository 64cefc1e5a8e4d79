// Host implementations of sk_kernel.h's device API. Named apart from the sk_* public API so
// that libsk exports none of them: the linker binds kernel objects to them directly.
#include "host/device_api/device_api.hpp"

#include <cstdint>

#include "common/device_api_usage.hpp"
#include "host/device_api/device_api_cache.hpp"
#include "host/device_api/device_api_cross_core.hpp"
#include "host/executor/core_context.hpp"

namespace sk::host {
namespace {

// Outside a task (a kernel called directly by the host) these behave as one block of one.
uint32_t api_block_idx() { return t_core ? t_core->block_idx : 0; }

uint32_t api_block_num() { return t_core ? t_core->step->block_dim : 1; }

void api_sync_all() {
  if (t_core) sync_step_cores(*t_core);
}

void api_set_next_task_start() {
  CoreContext *c = t_core;
  // Only the core's last block releases the next step: earlier blocks of a multiplexed core
  // still have work the next step must not overtake.
  if (c && c->step->arrive_in_kernel && c->last_block && !c->arrived) release_next_step(*c);
}

void api_wait_pre_task_end() {
  CoreContext *c = t_core;
  if (c && !c->waited) wait_previous_step(*c);
}

// Keyed by bit: the names are common/device_api_usage.cpp's, so the planner and the linker
// agree on what is a device-API call.
struct Entry {
  uint32_t bit;
  void *address;
};
const Entry kApi[] = {
    {kUsesBlockIdx, reinterpret_cast<void *>(&api_block_idx)},
    {kUsesBlockNum, reinterpret_cast<void *>(&api_block_num)},
    {kUsesSyncAll, reinterpret_cast<void *>(&api_sync_all)},
    {kUsesSetNextTaskStart, reinterpret_cast<void *>(&api_set_next_task_start)},
    {kUsesWaitPreTaskEnd, reinterpret_cast<void *>(&api_wait_pre_task_end)},
    // Core types and hard sync: host/device_api/device_api_cross_core.cpp.
    {kUsesCoreType, reinterpret_cast<void *>(&api_core_type)},
    {kUsesSubBlockIdx, reinterpret_cast<void *>(&api_sub_block_idx)},
    {kUsesSubBlockNum, reinterpret_cast<void *>(&api_sub_block_num)},
    {kUsesCrossCoreSetFlag, reinterpret_cast<void *>(&api_cross_core_set_flag)},
    {kUsesCrossCoreWaitFlag, reinterpret_cast<void *>(&api_cross_core_wait_flag)},
    {kUsesCrossCoreSetFlagAll, reinterpret_cast<void *>(&api_cross_core_set_flag_all)},
    {kUsesCrossCoreWaitFlagAll, reinterpret_cast<void *>(&api_cross_core_wait_flag_all)},
    // Cache maintenance: host/device_api/device_api_cache.cpp.
    {kUsesDcciLine, reinterpret_cast<void *>(&api_dcci_line)},
    {kUsesDcciAll, reinterpret_cast<void *>(&api_dcci_all)},
    {kUsesGmLoad, reinterpret_cast<void *>(&api_gm_load)},
    {kUsesGmStore, reinterpret_cast<void *>(&api_gm_store)},
};

}  // namespace

void *resolve_device_api(std::string_view name) {
  const uint32_t bit = device_api_bit(name);
  if (bit == 0) return nullptr;
  for (const Entry &e : kApi)
    if (e.bit == bit) return e.address;
  return nullptr;
}

}  // namespace sk::host
