// What a device built from a kernel binary's bytes (a linked object, a parsed CUDA module), by
// content: the same bytes loaded again while the first result lives give that result, so that
// they are linked once. Looked up by XXH3-128 of the bytes and a backend's own key part, then
// the bytes compared (a hash match is a candidate, not proof). Not locked: the caller holds its
// lock over lookup and build, so that the same bytes build once.
#pragma once
#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sk {

struct ContentKey {
  uint64_t high = 0, low = 0;  // XXH3-128 of the bytes
  uint64_t extra = 0;          // what else makes the same bytes build differently (host: symbol policy)
  bool operator==(const ContentKey &) const = default;
};

inline std::pair<uint64_t, uint64_t> content_hash(const void *bytes, size_t size) {
  const XXH128_hash_t h = XXH3_128bits(bytes, size);
  return {h.high64, h.low64};
}

// T has the bytes it was built from as `bytes_of(const T &)`, a contiguous byte range.
template <class T>
class ContentCache {
 public:
  // The live value of `key` built from the `size` bytes at `image`, or nullptr.
  template <class BytesOf>
  std::shared_ptr<T> find(const ContentKey &key, const void *image, size_t size, BytesOf bytes_of) const {
    for (auto [it, end] = entries_.equal_range(key); it != end; ++it) {
      std::shared_ptr<T> value = it->second.lock();
      if (!value) continue;
      const auto &bytes = bytes_of(*value);
      if (bytes.size() == size && (size == 0 || std::memcmp(bytes.data(), image, size) == 0)) return value;
    }
    return nullptr;
  }

  // Entries of unloaded values are swept when the cache has doubled since the last sweep: an
  // insert costs O(1) amortised, and the cache holds at most twice the live values (or kMinSweepSize).
  void insert(const ContentKey &key, std::shared_ptr<T> value) {
    if (entries_.size() >= sweep_at_) {
      std::erase_if(entries_, [](const auto &entry) { return entry.second.expired(); });
      sweep_at_ = std::max(kMinSweepSize, 2 * entries_.size());
      ++sweeps_;
    }
    entries_.emplace(key, std::move(value));
  }

  size_t sweeps() const { return sweeps_; }
  size_t size() const { return entries_.size(); }

 private:
  struct KeyHash {
    size_t operator()(const ContentKey &k) const { return static_cast<size_t>(k.low ^ k.extra); }
  };
  static constexpr size_t kMinSweepSize = 64;
  // Several entries under one key: different bytes that collide.
  std::unordered_multimap<ContentKey, std::weak_ptr<T>, KeyHash> entries_;
  size_t sweep_at_ = kMinSweepSize;
  size_t sweeps_ = 0;
};

}  // namespace sk
