// Host implementations of sk_kernel.h's device API. Named apart from the sk_* public API so
// that libsk exports none of them: the linker binds kernel objects to them directly.
#include "host/device_api/device_api.hpp"

#include <cstdint>

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

struct Entry {
  const char *name;
  void *address;
};
const Entry kApi[] = {
    {"sk_block_idx", reinterpret_cast<void *>(&api_block_idx)},
    {"sk_block_num", reinterpret_cast<void *>(&api_block_num)},
    {"sk_sync_all", reinterpret_cast<void *>(&api_sync_all)},
    {"sk_set_next_task_start", reinterpret_cast<void *>(&api_set_next_task_start)},
    {"sk_wait_pre_task_end", reinterpret_cast<void *>(&api_wait_pre_task_end)},
    // Core types and hard sync: host/device_api/device_api_cross_core.cpp.
    {"sk_core_type", reinterpret_cast<void *>(&api_core_type)},
    {"sk_sub_block_idx", reinterpret_cast<void *>(&api_sub_block_idx)},
    {"sk_sub_block_num", reinterpret_cast<void *>(&api_sub_block_num)},
    {"sk_cross_core_set_flag", reinterpret_cast<void *>(&api_cross_core_set_flag)},
    {"sk_cross_core_wait_flag", reinterpret_cast<void *>(&api_cross_core_wait_flag)},
    {"sk_cross_core_set_flag_all", reinterpret_cast<void *>(&api_cross_core_set_flag_all)},
    {"sk_cross_core_wait_flag_all", reinterpret_cast<void *>(&api_cross_core_wait_flag_all)},
    // Cache maintenance: host/device_api/device_api_cache.cpp.
    {"sk_dcci_line", reinterpret_cast<void *>(&api_dcci_line)},
    {"sk_dcci_all", reinterpret_cast<void *>(&api_dcci_all)},
    {"sk_gm_load", reinterpret_cast<void *>(&api_gm_load)},
    {"sk_gm_store", reinterpret_cast<void *>(&api_gm_store)},
};

}  // namespace

void *resolve_device_api(std::string_view name) {
  for (const Entry &e : kApi)
    if (name == e.name) return e.address;
  return nullptr;
}

}  // namespace sk::host
