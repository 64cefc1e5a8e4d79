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
// The bits that are no device-API call, by what names them in a kernel's code or its caller's.
constexpr Entry kConstructs[] = {
    {"griddepcontrol.wait", kUsesGridDependencyWait},
    {"griddepcontrol.launch_dependents", kUsesGridDependencyLaunch},
    {"cg::this_grid().sync()", kUsesGridSync},
    {"SK_KERNEL_DESC_COOPERATIVE", kUsesOwnGridBarrier},
    {"a write before griddepcontrol.wait", kUsesWriteBeforeGridDependencyWait},
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

std::vector<const char *> construct_names(uint32_t usage) {
  std::vector<const char *> names;
  for (const Entry &e : kConstructs)
    if (usage & e.bit) names.push_back(e.name);
  return names;
}

std::vector<DeviceApiPath> device_api_paths(const std::map<std::string, std::vector<ReachStep>> &paths) {
  std::vector<DeviceApiPath> out;
  for (const Entry &e : kEntries) {
    auto it = paths.find(e.name);
    if (it == paths.end() || it->second.empty()) continue;
    if (it->second.size() == 1 && !conservative(it->second)) continue;  // the kernel calls it itself
    out.push_back({e.name, it->second});
  }
  return out;
}

std::string sync_reason(uint32_t usage, std::span<const DeviceApiPath> paths) {
  const bool sync_all = usage & kUsesSyncAll;
  if (!(usage & kUsesSync)) return "";
  if (!sync_all && (usage & kUsesGridSync)) return construct_names(kUsesGridSync)[0];
  if (!sync_all && (usage & kUsesOwnGridBarrier))
    return std::string("a grid barrier of its own, ") + construct_names(kUsesOwnGridBarrier)[0];
  std::string out = sync_all ? "sk_sync_all" : "cross-core flags";
  for (const DeviceApiPath &p : paths)
    if (sync_all ? device_api_bit(p.function) == kUsesSyncAll : (device_api_bit(p.function) & kUsesHardSync) != 0)
      return out + ": " + describe(p.steps);
  return out;
}

}  // namespace sk
