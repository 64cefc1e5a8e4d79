// Which device-API functions a kernel uses, read from the undefined symbols of its code: the
// binary itself tells the planner whether it syncs all cores or overlaps tasks. A few bits say
// the same of what is no device-API call (a PTX kernel's griddepcontrol and cooperative groups'
// grid sync, read by cuda/ptx_module.cpp; a grid barrier of its own, which the caller names).
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/reach_path.hpp"

namespace sk {

enum DeviceApiBit : uint32_t {
  kUsesBlockIdx = 1u << 0,
  kUsesBlockNum = 1u << 1,
  kUsesSyncAll = 1u << 2,
  kUsesSetNextTaskStart = 1u << 3,
  kUsesWaitPreTaskEnd = 1u << 4,
  // Not a device-API function: a PTX kernel written for programmatic dependent launch waits at
  // griddepcontrol.wait, which cuda/ptx_module.cpp makes its early start, per thread.
  kUsesGridDependencyWait = 1u << 5,
  // Not one either: griddepcontrol.launch_dependents, which lets a kernel of programmatic
  // dependent launch after it start early (as a graph node's PDL does only after a trigger).
  kUsesGridDependencyLaunch = 1u << 6,
  // Not one either: cooperative groups' grid sync (cg::this_grid().sync(), which a PTX kernel
  // reads the grid workspace for): a barrier over the step's blocks, as sk_sync_all's.
  kUsesGridSync = 1u << 7,
  // A kernel that waits for the previous step itself: it may start early.
  kUsesWaitInKernel = kUsesWaitPreTaskEnd | kUsesGridDependencyWait,
  // Cache maintenance (bits 8..11): explain reports them; the plan places flushes by options.
  kUsesDcciLine = 1u << 8,
  kUsesDcciAll = 1u << 9,
  kUsesGmLoad = 1u << 10,
  kUsesGmStore = 1u << 11,
  // Not a device-API function: the caller says its blocks wait for each other by means of their
  // own (SK_KERNEL_DESC_COOPERATIVE): they must all run at once, as sk_sync_all's.
  kUsesOwnGridBarrier = 1u << 12,
  // Not one either: a kernel that waits at griddepcontrol.wait may write memory another block
  // reads before it (cuda/ptx_dependent_wait.hpp): its step waits at its start.
  kUsesWriteBeforeGridDependencyWait = 1u << 13,
  // Core types and hard cross-core sync (bits 16..): the planner splits scopes on these.
  kUsesCoreType = 1u << 16,
  kUsesSubBlockIdx = 1u << 17,
  kUsesSubBlockNum = 1u << 18,
  kUsesCrossCoreSetFlag = 1u << 19,
  kUsesCrossCoreWaitFlag = 1u << 20,
  kUsesCrossCoreSetFlagAll = 1u << 21,
  kUsesCrossCoreWaitFlagAll = 1u << 22,
  kUsesGroupFlags = kUsesCrossCoreSetFlag | kUsesCrossCoreWaitFlag,
  kUsesHardSync = kUsesGroupFlags | kUsesCrossCoreSetFlagAll | kUsesCrossCoreWaitFlagAll,
  // A kernel that synchronises its cores: its blocks cannot be multiplexed onto fewer cores.
  kUsesSync = kUsesSyncAll | kUsesGridSync | kUsesOwnGridBarrier | kUsesHardSync,
  // A kernel that waits for every block of its launch: on CUDA they must all be co-resident.
  kUsesWaitForAll = kUsesSyncAll | kUsesGridSync | kUsesOwnGridBarrier | kUsesCrossCoreWaitFlagAll,
};

// Bit of a device-API function name, 0 if the name is not one.
uint32_t device_api_bit(std::string_view symbol);
uint32_t device_api_usage(const std::vector<std::string> &undefined_symbols);
// Function names of the bits set, in a fixed order.
std::vector<const char *> device_api_names(uint32_t usage);
// What the bits that are no device-API call name ("griddepcontrol.wait", ...: the table
// kConstructs), of those set, in its order: explain's `constructs`.
std::vector<const char *> construct_names(uint32_t usage);

// How a kernel reaches a device-API function that it does not call itself: through helpers, or
// through a pointer (then it is taken to call it although it may not).
struct DeviceApiPath {
  std::string function;
  std::vector<ReachStep> steps;
};
// The paths a binary reader found, by symbol, kept for the device-API functions the kernel does
// not call directly, in device_api_names' order.
std::vector<DeviceApiPath> device_api_paths(const std::map<std::string, std::vector<ReachStep>> &paths);
// What makes a kernel with `usage` synchronise its cores, for messages: "sk_sync_all", or
// "sk_sync_all: 'k' jumps to 'helper', which calls sk_sync_all" when it reaches it through
// another function; the same for the cross-core flags. "" if it does not synchronise.
std::string sync_reason(uint32_t usage, std::span<const DeviceApiPath> paths);

}  // namespace sk
