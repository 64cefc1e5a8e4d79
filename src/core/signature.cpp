#include "core/signature.hpp"

#include "core/error.hpp"

namespace sk {
namespace {
struct TypeInfo {
  const char *name;
  ArgType type;
  size_t size;
};
constexpr TypeInfo kTypes[] = {
    {"ptr", ArgType::Ptr, sizeof(void *)}, {"i8", ArgType::I8, 1},   {"u8", ArgType::U8, 1},
    {"i16", ArgType::I16, 2},              {"u16", ArgType::U16, 2}, {"i32", ArgType::I32, 4},
    {"u32", ArgType::U32, 4},              {"i64", ArgType::I64, 8}, {"u64", ArgType::U64, 8},
    {"f32", ArgType::F32, 4},              {"f64", ArgType::F64, 8},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

sk_status parse_signature(std::string_view text, std::string_view what, Signature *out) {
  Signature sig;
  if (trim(text).empty()) {
    *out = sig;
    return SK_OK;
  }
  size_t pos = 0;
  for (;;) {
    size_t comma = text.find(',', pos);
    std::string_view tok = trim(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos));
    bool found = false;
    for (const TypeInfo &ti : kTypes) {
      if (tok == ti.name) {
        sig.push_back(ti.type);
        found = true;
        break;
      }
    }
    if (!found)
      return fail(SK_ERR_INVALID_ARGUMENT,
                  "%.*s: signature \"%.*s\": parameter %zu is '%.*s', expected one of "
                  "ptr,i8,u8,i16,u16,i32,u32,i64,u64,f32,f64",
                  (int)what.size(), what.data(), (int)text.size(), text.data(), sig.size(),
                  (int)tok.size(), tok.data());
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  *out = std::move(sig);
  return SK_OK;
}

size_t arg_size(ArgType t) { return kTypes[static_cast<int>(t)].size; }
const char *arg_type_name(ArgType t) { return kTypes[static_cast<int>(t)].name; }

std::string signature_to_string(const Signature &sig) {
  std::string s;
  for (size_t i = 0; i < sig.size(); ++i) {
    if (i) s += ',';
    s += arg_type_name(sig[i]);
  }
  return s;
}

}  // namespace sk
