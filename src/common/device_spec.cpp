#include "common/device_spec.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/error.hpp"

namespace sk {

sk_status parse_device_spec(const char *text, DeviceSpec *out) {
  std::string spec(text);
  DeviceSpec result;
  size_t colon = spec.find(':');
  result.backend = spec.substr(0, colon);
  if (result.backend.empty())
    return fail(SK_ERR_INVALID_ARGUMENT, "device spec \"%s\": no backend (expected e.g. \"host\")", text);
  if (colon != std::string::npos) {
    std::string rest = spec.substr(colon + 1);
    size_t pos = 0;
    while (pos <= rest.size()) {
      size_t comma = rest.find(',', pos);
      std::string item = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        return fail(SK_ERR_INVALID_ARGUMENT, "device spec \"%s\": '%s' is not of the form key=value", text,
                    item.c_str());
      std::string key = item.substr(0, eq);
      for (const auto &kv : result.keys)
        if (kv.first == key)
          return fail(SK_ERR_INVALID_ARGUMENT, "device spec \"%s\": key '%s' given twice", text, key.c_str());
      result.keys.emplace_back(key, item.substr(eq + 1));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  *out = std::move(result);
  return SK_OK;
}

const SpecKey *find_spec_key(std::span<const SpecKey> keys, std::string_view name) {
  for (const SpecKey &k : keys)
    if (name == k.name) return &k;
  return nullptr;
}

std::string spec_key_names(std::span<const SpecKey> keys) {
  std::string out;
  for (const SpecKey &k : keys) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

sk_status parse_spec_uint(const std::string &key, const std::string &value, uint64_t min, uint64_t max,
                          uint64_t *out) {
  const char *s = value.c_str();
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE || s[0] == '-' || v < min || v > max)
    return fail(SK_ERR_INVALID_ARGUMENT, "device spec key '%s': value '%s' is not an integer in [%llu, %llu]",
                key.c_str(), s, (unsigned long long)min, (unsigned long long)max);
  *out = v;
  return SK_OK;
}

}  // namespace sk
