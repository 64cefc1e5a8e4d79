#include "common/device_api_usage.hpp"

namespace sk {
namespace {
struct Entry {
  const char *name;
  uint32_t bit;
};
constexpr Entry kEntries[] = {
    {"sk_block_idx", kUsesBlockIdx},
    {"sk_block_num", kUsesBlockNum},
    {"sk_sync_all", kUsesSyncAll},
    {"sk_set_next_task_start", kUsesSetNextTaskStart},
    {"sk_wait_pre_task_end", kUsesWaitPreTaskEnd},
    {"sk_dcci_line", kUsesDcciLine},
    {"sk_dcci_all", kUsesDcciAll},
    {"sk_gm_load", kUsesGmLoad},
    {"sk_gm_store", kUsesGmStore},
    {"sk_core_type", kUsesCoreType},
    {"sk_sub_block_idx", kUsesSubBlockIdx},
    {"sk_sub_block_num", kUsesSubBlockNum},
    {"sk_cross_core_set_flag", kUsesCrossCoreSetFlag},
    {"sk_cross_core_wait_flag", kUsesCrossCoreWaitFlag},
    {"sk_cross_core_set_flag_all", kUsesCrossCoreSetFlagAll},
    {"sk_cross_core_wait_flag_all", kUsesCrossCoreWaitFlagAll},
};
}  // namespace

uint32_t device_api_bit(std::string_view symbol) {
  for (const Entry &e : kEntries)
    if (symbol == e.name) return e.bit;
  return 0;
}

uint32_t device_api_usage(const std::vector<std::string> &undefined_symbols) {
  uint32_t usage = 0;
  for (const std::string &s : undefined_symbols) usage |= device_api_bit(s);
  return usage;
}

std::vector<const char *> device_api_names(uint32_t usage) {
  std::vector<const char *> names;
  for (const Entry &e : kEntries)
    if (usage & e.bit) names.push_back(e.name);
  return names;
}

}  // namespace sk
