#include "common/signature.hpp"

#include <cstring>

#include <algorithm>

#include "common/error.hpp"

namespace sk {
namespace {
struct TypeInfo {
  const char *name;
  ArgType type;
  size_t size;
};
constexpr TypeInfo kTypes[] = {
    {"ptr", ArgType::Ptr, sizeof(void *)},
    {"i8", ArgType::I8, 1},
    {"u8", ArgType::U8, 1},
    {"i16", ArgType::I16, 2},
    {"u16", ArgType::U16, 2},
    {"i32", ArgType::I32, 4},
    {"u32", ArgType::U32, 4},
    {"i64", ArgType::I64, 8},
    {"u64", ArgType::U64, 8},
    {"f32", ArgType::F32, 4},
    {"f64", ArgType::F64, 8},
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
    // Long texts are clipped in the message, so that the culprit (index and token) stays in it.
    if (!found)
      return fail(SK_ERR_INVALID_ARGUMENT,
                  "%.*s: signature \"%.*s%s\": parameter %zu is '%.*s%s', expected one of "
                  "ptr,i8,u8,i16,u16,i32,u32,i64,u64,f32,f64",
                  (int)what.size(), what.data(), (int)std::min<size_t>(text.size(), 64), text.data(),
                  text.size() > 64 ? "..." : "", sig.size(), (int)std::min<size_t>(tok.size(), 64), tok.data(),
                  tok.size() > 64 ? "..." : "");
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  *out = std::move(sig);
  return SK_OK;
}

size_t arg_size(ArgType t) { return kTypes[static_cast<int>(t)].size; }
uint64_t to_slot(ArgType t, const void *value) {
  auto read = [value](auto v) {
    std::memcpy(&v, value, sizeof v);
    return v;
  };
  switch (t) {
    case ArgType::I8: return static_cast<uint64_t>(static_cast<int64_t>(read(int8_t{})));
    case ArgType::I16: return static_cast<uint64_t>(static_cast<int64_t>(read(int16_t{})));
    case ArgType::I32: return static_cast<uint64_t>(static_cast<int64_t>(read(int32_t{})));
    case ArgType::U8: return read(uint8_t{});
    case ArgType::U16: return read(uint16_t{});
    case ArgType::U32: return read(uint32_t{});
    case ArgType::F32: return read(uint32_t{});
    default: return read(uint64_t{});  // ptr, i64, u64, f64: 8 bytes
  }
}

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
