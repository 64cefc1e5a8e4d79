// Device specs: "backend[:key=value[,key=value...]]", e.g. "host", "host:cores=8,spin_us=0".
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>
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

// Reads an unsigned integer value of `key` in [min, max]; errors name the key and the spec.
sk_status parse_spec_uint(const std::string &key, const std::string &value, uint64_t min, uint64_t max,
                          uint64_t *out);

}  // namespace sk
