#include "common/kernel_metadata.hpp"

#include "common/core_layout.hpp"
#include "common/error.hpp"

namespace sk {
namespace {
bool known_core_type(const std::string &t) {
  KernelKind kind;
  return parse_kernel_kind(t, &kind);
}
}  // namespace

sk_status parse_kernel_metadata(const std::vector<std::string> &records, std::string_view label,
                                std::vector<KernelMetadata> *out) {
  std::vector<KernelMetadata> result;
  for (const std::string &rec : records) {
    KernelMetadata meta;
    bool version_ok = false;
    size_t pos = 0;
    while (pos <= rec.size()) {
      size_t semi = rec.find(';', pos);
      std::string field = rec.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos);
      if (pos == 0) {
        version_ok = field == "sk1";
      } else {
        size_t eq = field.find('=');
        std::string key = field.substr(0, eq), value = eq == std::string::npos ? "" : field.substr(eq + 1);
        if (key == "kernel")
          meta.name = value;
        else if (key == "sig")
          meta.signature = value;
        else if (key == "type")
          meta.core_type = value;
        // Unknown fields are skipped: newer headers may add some.
      }
      if (semi == std::string::npos) break;
      pos = semi + 1;
    }
    if (!version_ok)
      return fail(SK_ERR_BAD_BINARY, "%.*s: .sk.kernels record \"%.60s\" is not an sk1 record", (int)label.size(),
                  label.data(), rec.c_str());
    if (meta.name.empty())
      return fail(SK_ERR_BAD_BINARY, "%.*s: .sk.kernels record \"%.60s\" names no kernel", (int)label.size(),
                  label.data(), rec.c_str());
    if (meta.core_type.empty()) meta.core_type = "vector";
    if (!known_core_type(meta.core_type))
      return fail(SK_ERR_BAD_BINARY, "%.*s: kernel '%s': unknown core type '%s'", (int)label.size(), label.data(),
                  meta.name.c_str(), meta.core_type.c_str());
    for (const KernelMetadata &other : result)
      if (other.name == meta.name)
        return fail(SK_ERR_BAD_BINARY, "%.*s: kernel '%s' has two .sk.kernels records", (int)label.size(),
                    label.data(), meta.name.c_str());
    result.push_back(std::move(meta));
  }
  *out = std::move(result);
  return SK_OK;
}

std::string kernel_of(std::string_view name, std::string_view label) {
  return "kernel '" + std::string(name) + "' of " + std::string(label);
}

sk_status kernel_signature(const char *given, const KernelMetadata *meta, const std::string &what, const char *call,
                           const std::string &no_metadata, Signature *out) {
  if (given) {
    if (sk_status st = parse_signature(given, what, out); st != SK_OK) return st;
    if (meta) {
      Signature recorded;
      if (sk_status st = parse_signature(meta->signature, what + " (metadata)", &recorded); st != SK_OK) return st;
      if (recorded != *out)
        return fail(SK_ERR_INCOMPATIBLE, "%s: signature \"%s\" given for %s, but its metadata says \"%s\"", call,
                    given, what.c_str(), meta->signature.c_str());
    }
    return SK_OK;
  }
  if (!meta)
    return fail(SK_ERR_NOT_FOUND, "%s: %s has no %s; give its signature with sk_module_get_kernel_with_signature",
                call, what.c_str(), no_metadata.c_str());
  if (sk_status st = parse_signature(meta->signature, what, out); st != SK_OK)
    return fail(SK_ERR_BAD_BINARY, "%s", last_error());
  return SK_OK;
}

}  // namespace sk
