#include "common/signature.hpp"

#include <cstdarg>
#include <cstdio>
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
// Scalars only, in ArgType order (arg_type_name indexes it); the alignment is the size.
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
// What a type may be, for messages: the scalars of kTypes and the aggregate form.
const std::string &expected_types() {
  static const std::string text = [] {
    std::string t = "expected one of ";
    for (const TypeInfo &ti : kTypes) t += std::string(ti.name) + ",";
    t.back() = ' ';
    return t + "or an aggregate {T,T...} (members may be arrays T[N])";
  }();
  return text;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

size_t round_up(size_t v, size_t align) { return (v + align - 1) / align * align; }

// Recursive descent over one signature: parameter := type; type := scalar | '{' member
// (',' member)* '}' ('@' N)?; member := type ('[' N ']')?. Every failure names the parameter.
class Parser {
 public:
  Parser(std::string_view text, std::string_view what) : text_(text), what_(what) {}

  sk_status parse(Signature *out) {
    Signature sig;
    if (trim(text_).empty()) {
      *out = sig;
      return SK_OK;
    }
    for (;;) {
      ParamType t;
      if (sk_status st = type(0, &t); st != SK_OK) return st;
      skip_spaces();
      if (peek() == '[')
        return error(
            "is an array '%.64s[...]': an array parameter is a pointer in C (pass 'ptr'), or wrap it in an "
            "aggregate "
            "{T[N]} to pass its elements by value",
            type_to_string(t).c_str());
      sig.push_back(std::move(t));
      if (pos_ == text_.size()) break;
      if (text_[pos_] != ',') return unexpected();
      ++pos_;
      ++param_;
    }
    *out = std::move(sig);
    return SK_OK;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_spaces() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }

  // Long texts are clipped in the message, so that the culprit (index and token) stays in it.
  sk_status error(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return fail(SK_ERR_INVALID_ARGUMENT, "%.*s: signature \"%.*s%s\": parameter %zu %s", (int)what_.size(),
                what_.data(), (int)std::min<size_t>(text_.size(), 64), text_.data(), text_.size() > 64 ? "..." : "",
                param_, detail);
  }
  sk_status unexpected() { return error("has an unexpected '%c' at byte %zu", text_[pos_], pos_); }

  sk_status type(size_t depth, ParamType *out) {
    skip_spaces();
    if (peek() == '{') return aggregate(depth, out);
    const size_t begin = pos_;
    while (pos_ < text_.size() && !std::strchr(",{}[]", text_[pos_])) ++pos_;
    const std::string_view tok = trim(text_.substr(begin, pos_ - begin));
    for (const TypeInfo &ti : kTypes) {
      if (tok == ti.name) {
        *out = ParamType(ti.type);
        return SK_OK;
      }
    }
    const char *where = depth == 0 ? "is" : "has a member";
    return error("%s '%.*s%s', %s", where, (int)std::min<size_t>(tok.size(), 64), tok.data(),
                 tok.size() > 64 ? "..." : "", expected_types().c_str());
  }

  sk_status aggregate(size_t depth, ParamType *out) {
    const size_t open = pos_++;
    if (depth >= kMaxAggregateDepth)
      return error("nests aggregates more than %zu deep (the '{' at byte %zu)", kMaxAggregateDepth, open);
    ParamType agg;
    agg.type = ArgType::Struct;
    agg.size = 0;
    skip_spaces();
    if (peek() == '}') return error("has an empty aggregate '{}' at byte %zu: C has no empty structs", open);
    size_t offset = 0;
    for (;;) {
      ParamType m;
      if (sk_status st = type(depth + 1, &m); st != SK_OK) return st;
      skip_spaces();
      if (peek() == '[') {
        if (sk_status st = array_length(&m.count); st != SK_OK) return st;
        skip_spaces();
      }
      offset = round_up(offset, m.align) + size_t{m.size} * m.count;
      if (offset > kMaxAggregateBytes)
        return error("has an aggregate (the '{' at byte %zu) of more than %zu bytes", open, kMaxAggregateBytes);
      agg.align = std::max(agg.align, m.align);
      agg.fields.push_back(std::move(m));
      if (pos_ >= text_.size()) return error("has a '{' at byte %zu that is not closed", open);
      if (text_[pos_] == '}') break;
      if (text_[pos_] != ',') return unexpected();
      ++pos_;
    }
    ++pos_;
    skip_spaces();
    if (peek() == '@')
      if (sk_status st = alignment(open, &agg.align); st != SK_OK) return st;
    agg.size = static_cast<uint32_t>(round_up(offset, agg.align));
    *out = std::move(agg);
    return SK_OK;
  }

  // `@N` after an aggregate: C's alignas(N), which may raise its alignment, never lower it.
  sk_status alignment(size_t open, uint32_t *align) {
    const size_t at = pos_++;
    skip_spaces();
    size_t v = 0, digits = 0;
    for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9' && digits < 5; ++pos_, ++digits)
      v = v * 10 + static_cast<size_t>(text_[pos_] - '0');
    if (!digits || v > kMaxAggregateAlign || (v & (v - 1)))
      return error("has an alignment at byte %zu that is not a power of two from 1 to %zu", at, kMaxAggregateAlign);
    if (v < *align)
      return error("aligns the aggregate (the '{' at byte %zu) to %zu, less than its members' %u", open, v, *align);
    *align = static_cast<uint32_t>(v);
    return SK_OK;
  }

  sk_status array_length(uint32_t *out) {
    const size_t open = pos_++;
    const size_t close = text_.find(']', pos_);
    if (close == std::string_view::npos) return error("has a '[' at byte %zu that is not closed", open);
    const std::string_view n = trim(text_.substr(pos_, close - pos_));
    size_t v = 0;
    bool ok = !n.empty() && n.size() <= 5;
    for (char c : n) {
      ok = ok && c >= '0' && c <= '9';
      v = v * 10 + static_cast<size_t>(c - '0');
    }
    if (!ok || v == 0 || v > kMaxAggregateBytes)
      return error("has an array length '%.*s' (at byte %zu) that is not a number from 1 to %zu",
                   (int)std::min<size_t>(n.size(), 32), n.data(), open, kMaxAggregateBytes);
    pos_ = close + 1;
    *out = static_cast<uint32_t>(v);
    return SK_OK;
  }

  std::string_view text_, what_;
  size_t pos_ = 0;
  size_t param_ = 0;
};
}  // namespace

ParamType::ParamType(ArgType scalar) : type(scalar) {
  if (scalar != ArgType::Struct) size = align = static_cast<uint32_t>(kTypes[static_cast<int>(scalar)].size);
}

sk_status parse_signature(std::string_view text, std::string_view what, Signature *out) {
  return Parser(text, what).parse(out);
}

size_t arg_size(const ParamType &t) { return size_t{t.size} * t.count; }

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

size_t slot_count(const ParamType &t) { return t.is_struct() ? (arg_size(t) + 7) / 8 : 1; }

size_t slot_align(const ParamType &t) { return t.align > 8 ? t.align / 8 : 1; }

size_t signature_slot_align(const Signature &sig) {
  size_t a = 1;
  for (const ParamType &t : sig) a = std::max(a, slot_align(t));
  return a;
}

size_t signature_slots(const Signature &sig) { return slot_offsets(sig).back(); }

std::vector<uint32_t> slot_offsets(const Signature &sig) {
  std::vector<uint32_t> offsets;
  offsets.reserve(sig.size() + 1);
  uint32_t at = 0;
  for (const ParamType &t : sig) {
    at = static_cast<uint32_t>(round_up(at, slot_align(t)));
    offsets.push_back(at);
    at += static_cast<uint32_t>(slot_count(t));
  }
  offsets.push_back(at);
  return offsets;
}

void to_slots(const ParamType &t, const void *value, uint64_t *out) {
  if (!t.is_struct()) {
    *out = to_slot(t.type, value);
    return;
  }
  std::memset(out, 0, slot_count(t) * 8);
  std::memcpy(out, value, arg_size(t));
}

const char *arg_type_name(ArgType t) { return t == ArgType::Struct ? "{...}" : kTypes[static_cast<int>(t)].name; }

std::string type_to_string(const ParamType &t) {
  std::string s;
  if (t.is_struct()) {
    s += '{';
    for (size_t i = 0; i < t.fields.size(); ++i) s += (i ? "," : "") + type_to_string(t.fields[i]);
    s += '}';
    uint32_t natural = 1;
    for (const ParamType &f : t.fields) natural = std::max(natural, f.align);
    if (t.align > natural) s += "@" + std::to_string(t.align);
  } else {
    s = arg_type_name(t.type);
  }
  if (t.count != 1) s += "[" + std::to_string(t.count) + "]";
  return s;
}

std::string signature_to_string(const Signature &sig) {
  std::string s;
  for (size_t i = 0; i < sig.size(); ++i) {
    if (i) s += ',';
    s += type_to_string(sig[i]);
  }
  return s;
}

}  // namespace sk
