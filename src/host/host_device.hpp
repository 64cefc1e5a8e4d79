// The host device: the executor (worker cores), memory, and the per-device module cache
// (same bytes -> one link: common/content_cache.hpp).
#pragma once
#include <sk.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/content_cache.hpp"
#include "common/device_spec.hpp"
#include "common/kernel_metadata.hpp"
#include "elf/combine.hpp"
#include "host/executor/executor.hpp"
#include "host/linker/debug_registration.hpp"
#include "host/linker/linker.hpp"
#include "host/linker/symbol_policy.hpp"

namespace sk::host {

// One linked object, shared by every sk_module loaded from the same bytes on this device.
struct LinkedModule {
  std::string label;
  std::string content_hash;  // XXH3-128, hex
  // The bytes linked (for several inputs, each one's size and bytes): a hash match is a
  // candidate, not proof.
  std::vector<unsigned char> image;
  std::unique_ptr<LinkedObject> object;
  std::unique_ptr<DebugRegistration> debug;  // after `object`: unregistered before it unmaps
  std::vector<KernelMetadata> metadata;
  const KernelMetadata *find_metadata(const std::string &name) const;
  // What archive members left out of the link define (elf::Object::archive_definitions).
  std::map<std::string, std::string, std::less<>> archive_definitions;
};

// Keeps `what` until the process exits, reachable from a global (so leak checkers see it held):
// for what a lost executor's stuck threads may still touch (Executor::lost).
void keep_for_stuck_threads(std::shared_ptr<const void> what);

// What a host device spec's keys (sk.h) ask for, each checked: the executor's configuration,
// the symbol policy and the perf map.
struct HostSpec {
  ExecutorConfig executor;
  SymbolPolicy symbols = SymbolPolicy::Process;
  bool perf_map = false;
};
sk_status parse_host_spec(const DeviceSpec &spec, HostSpec *out);

class HostDevice {
 public:
  static sk_status open(const DeviceSpec &spec, std::unique_ptr<HostDevice> *out);
  ~HostDevice();

  uint32_t cores() const { return executor_->cores(); }
  SymbolPolicy symbol_policy() const { return symbol_policy_; }
  Executor &executor() { return *executor_; }
  StreamState &default_stream() { return *default_stream_; }

  sk_status mem_alloc(size_t size, void **out);
  // false if ptr was not allocated by this device (nothing is freed then). On a lost device
  // nothing is freed: a stuck kernel may still use it.
  bool mem_free(void *ptr);

  // Links `size` bytes, an object or an archive (or reuses the link of identical bytes loaded before).
  sk_status load_module(const void *image, size_t size, const std::string &label,
                        std::shared_ptr<LinkedModule> *out);
  // Links objects and archives as one module (elf/combine.hpp), `label` naming the set; the
  // same inputs in the same order reuse one link. One input is load_module's.
  sk_status load_module_set(const std::vector<elf::Input> &inputs, const std::string &label,
                            std::shared_ptr<LinkedModule> *out);

  // For tests: the hash the cache is keyed by (collisions made on purpose), how many times the
  // cache was swept of unloaded modules, and how many entries it holds.
  using ContentHash = std::pair<uint64_t, uint64_t> (*)(const void *image, size_t size);
  void set_content_hash(ContentHash fn);
  size_t module_cache_sweeps();
  size_t module_cache_entries();

 private:
  HostDevice() = default;
  // The cache lookup and the link of `inputs`, keyed by the `size` bytes at `image`.
  sk_status load_inputs(const std::vector<elf::Input> &inputs, const void *image, size_t size,
                        const std::string &label, std::shared_ptr<LinkedModule> *out);
  std::unique_ptr<Executor> executor_;
  SymbolPolicy symbol_policy_ = SymbolPolicy::Process;
  bool perf_map_ = false;  // perf_map=1: functions of each linked object go to perf_map.hpp's map
  // Shared, as every stream's state: a lost device's stuck cores may complete a task of it
  // after the device is closed (keep_for_stuck_threads).
  std::shared_ptr<StreamState> default_stream_ = std::make_shared<StreamState>();
  std::mutex alloc_mutex_;
  std::set<void *> allocations_;
  std::mutex module_mutex_;  // held over lookup and link: the same bytes link once
  // Keyed by content and symbol policy: the same bytes linked under another policy bind
  // differently (or not at all).
  ContentCache<LinkedModule> module_cache_;
  std::atomic<ContentHash> content_hash_{nullptr};  // nullptr: XXH3-128
};

}  // namespace sk::host
