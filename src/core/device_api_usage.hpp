// Which device-API functions a kernel uses, read from the undefined symbols of its code: the
// binary itself tells the planner whether it syncs all cores or overlaps tasks.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sk {

enum DeviceApiBit : uint32_t {
  kUsesBlockIdx = 1u << 0,
  kUsesBlockNum = 1u << 1,
  kUsesSyncAll = 1u << 2,
  kUsesSetNextTaskStart = 1u << 3,
  kUsesWaitPreTaskEnd = 1u << 4,
};

// Bit of a device-API function name, 0 if the name is not one.
uint32_t device_api_bit(std::string_view symbol);
uint32_t device_api_usage(const std::vector<std::string> &undefined_symbols);
// Function names of the bits set, in a fixed order.
std::vector<const char *> device_api_names(uint32_t usage);

}  // namespace sk
