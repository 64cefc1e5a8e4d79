#include "core/device_api_usage.hpp"

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
