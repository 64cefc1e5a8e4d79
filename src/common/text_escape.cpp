#include "common/text_escape.hpp"

#include <cstdint>
#include <cstdio>

namespace sk {
namespace {

uint8_t byte_at(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

bool continuation(std::string_view s, size_t i) { return i < s.size() && (byte_at(s, i) & 0xC0) == 0x80; }

// The code point of the well-formed sequence of `length` bytes at s[i].
uint32_t code_point(std::string_view s, size_t i, size_t length) {
  static constexpr uint8_t kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t c = byte_at(s, i) & kLeadMask[length];
  for (size_t k = 1; k < length; ++k) c = (c << 6) | (byte_at(s, i + k) & 0x3F);
  return c;
}

void append_hex_byte(std::string &out, uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  out += buf;
}

}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i) {
  const uint8_t b = byte_at(s, i);
  if (b < 0x80) return 1;
  // The second byte's range depends on the first (RFC 3629's table): it is what excludes the
  // overlong forms (E0 80..9F, F0 80..8F), the surrogates (ED A0..BF) and code points above
  // U+10FFFF (F4 90..BF).
  size_t length;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    length = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    length = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    length = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + 1 >= s.size() || byte_at(s, i + 1) < lo || byte_at(s, i + 1) > hi) return 0;
  for (size_t k = 2; k < length; ++k)
    if (!continuation(s, i + k)) return 0;
  return length;
}

void append_json_string(std::string &out, std::string_view s) {
  // Runs of characters that need no escape are copied in one append.
  size_t run = 0, i = 0;
  while (i < s.size()) {
    const uint8_t b = byte_at(s, i);
    const size_t length = b >= 0x80 ? utf8_sequence_length(s, i) : 1;
    if (length > 1 || (b >= 0x20 && b < 0x80 && b != '"' && b != '\\')) {
      i += length;
      continue;
    }
    out.append(s.data() + run, i - run);
    if (b == '"' || b == '\\') {
      out += '\\';
      out += static_cast<char>(b);
    } else if (b < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", b);
      out += buf;
    } else {  // not UTF-8: the text \xNN, its backslash escaped for JSON
      out += '\\';
      append_hex_byte(out, b);
    }
    run = ++i;
  }
  out.append(s.data() + run, s.size() - run);
}

std::string one_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t b = byte_at(s, i);
    const size_t length = utf8_sequence_length(s, i);
    if (length == 0) {
      append_hex_byte(out, b);
      ++i;
      continue;
    }
    const uint32_t c = code_point(s, i, length);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      append_hex_byte(out, static_cast<uint8_t>(c));
    } else if ((c >= 0x80 && c <= 0x9F) || c == 0x2028 || c == 0x2029) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.append(s.data() + i, length);
    }
    i += length;
  }
  return out;
}

}  // namespace sk
