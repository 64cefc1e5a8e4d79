// The host device: the executor (worker cores), memory, and the per-device module cache
// (same bytes -> one link, by XXH3-128 of the content).
#pragma once
#include <sk.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/device_spec.hpp"
#include "core/kernel_metadata.hpp"
#include "host/executor.hpp"
#include "host/linker.hpp"
#include "host/symbol_policy.hpp"

namespace sk::host {

// Objects of this size or more are refused before they are hashed or copied: a kernel object
// is kilobytes to megabytes; this only stops a mistaken or hostile input early.
constexpr size_t kMaxObjectSize = size_t{1} << 30;

// One linked object, shared by every sk_module loaded from the same bytes on this device.
struct LinkedModule {
  std::string label;
  std::string content_hash;  // XXH3-128, hex
  std::unique_ptr<LinkedObject> object;
  std::vector<KernelMetadata> metadata;
  const KernelMetadata *find_metadata(const std::string &name) const;
};

class HostDevice {
 public:
  static sk_status open(const DeviceSpec &spec, std::unique_ptr<HostDevice> *out);
  ~HostDevice();

  uint32_t cores() const { return executor_->cores(); }
  SymbolPolicy symbol_policy() const { return symbol_policy_; }
  Executor &executor() { return *executor_; }
  StreamState &default_stream() { return default_stream_; }

  sk_status mem_alloc(size_t size, void **out);
  // false if ptr was not allocated by this device (nothing is freed then).
  bool mem_free(void *ptr);

  // Links `size` bytes (or reuses the link of identical bytes loaded before).
  sk_status load_module(const void *image, size_t size, const std::string &label,
                        std::shared_ptr<LinkedModule> *out);

 private:
  HostDevice() = default;
  std::unique_ptr<Executor> executor_;
  SymbolPolicy symbol_policy_ = SymbolPolicy::Process;
  StreamState default_stream_;
  std::mutex alloc_mutex_;
  std::set<void *> allocations_;
  std::mutex module_mutex_;  // held over lookup and link: the same bytes link once
  // Keyed by content hash and symbol policy: the same bytes linked under another policy bind
  // differently (or not at all).
  using CacheKey = std::tuple<uint64_t, uint64_t, SymbolPolicy>;
  std::map<CacheKey, std::weak_ptr<LinkedModule>> module_cache_;
};

}  // namespace sk::host
