// Device specs: "backend[:key=value[,key=value...]]", e.g. "host", "host:cores=8,spin_us=0".
#pragma once
#include <sk.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sk {

// timeout_ms's default on every backend: the deadline of every wait inside a launch.
inline constexpr uint32_t kDefaultTimeoutMs = 10000;

struct DeviceSpec {
  std::string backend;
  std::vector<std::pair<std::string, std::string>> keys;  // in order, no duplicates
};

// Splits the spec; rejects empty backends, keys without '=', empty or repeated keys.
sk_status parse_device_spec(const char *text, DeviceSpec *out);

// A key of a backend's device spec: an unsigned integer in [min, max], or, where min > max, a
// value its parser reads itself. Each backend lists its keys once, in one table: its parser
// takes their ranges and its unknown-key message their names from it.
struct SpecKey {
  const char *name;
  uint64_t min = 1, max = 0;
  bool integer() const { return min <= max; }
};
// The entry of `name` in `keys`, or nullptr.
const SpecKey *find_spec_key(std::span<const SpecKey> keys, std::string_view name);
// "cores, spin_us, ...": the names of `keys`, in order.
std::string spec_key_names(std::span<const SpecKey> keys);

// Reads an unsigned integer value of `key` in [min, max]; errors name the key and the spec.
sk_status parse_spec_uint(const std::string &key, const std::string &value, uint64_t min, uint64_t max,
                          uint64_t *out);

}  // namespace sk
