// The host device API binds exactly the functions the planner reads from kernels' undefined
// symbols: a name one side knows and the other does not would link a call the plan ignores, or
// plan for a call that cannot link.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "common/device_api_usage.hpp"
#include "host/device_api/device_api.hpp"

namespace sk::host {
namespace {

TEST(DeviceApi, EveryPlannedFunctionHasItsOwnHostImplementation) {
  const std::vector<const char *> names = device_api_names(UINT32_MAX);
  ASSERT_FALSE(names.empty());
  std::set<void *> addresses;
  for (const char *name : names) {
    void *address = resolve_device_api(name);
    EXPECT_NE(address, nullptr) << name;
    EXPECT_TRUE(addresses.insert(address).second) << name << " shares another function's implementation";
  }
}

TEST(DeviceApi, OnlyDeviceApiNamesResolve) {
  for (const char *name : {"sk_mem_alloc", "sk_launch_kernel", "sk_block", "sk_block_idx_", "block_idx", ""})
    EXPECT_EQ(resolve_device_api(name), nullptr) << name;
}

}  // namespace
}  // namespace sk::host
