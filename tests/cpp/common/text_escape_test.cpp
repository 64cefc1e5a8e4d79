// The escaping rule of the text libsk hands out (common/text_escape.hpp): which byte sequences are
// UTF-8, checked against an encoder of every code point; and that messages and JSON strings made
// of any bytes come out as valid UTF-8 without raw control characters.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/json_writer.hpp"
#include "common/text_escape.hpp"

namespace sk {
namespace {

// The UTF-8 encoding of code point c (RFC 3629), written here independently of the decoder.
std::string encode(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

bool is_scalar_value(uint32_t c) { return c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF); }

// True if s is all well-formed UTF-8 by the decoder under test.
bool valid_utf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

TEST(TextEscape, EveryScalarValueIsOneSequence) {
  for (uint32_t c = 0; c <= 0x10FFFF; ++c) {
    if (!is_scalar_value(c)) continue;
    const std::string s = encode(c);
    ASSERT_EQ(utf8_sequence_length(s, 0), s.size()) << std::hex << c;
  }
}

TEST(TextEscape, NothingElseIsASequence) {
  // Every sequence of up to three bytes the decoder accepts is the encoding of a scalar value:
  // this covers overlong forms (C0 AF, E0 80 AF), surrogates (ED A0 80), stray continuation
  // bytes and leads F5..FF. Four-byte leads are checked over every second byte.
  std::vector<bool> valid3(1 << 24);
  std::vector<bool> valid2(1 << 16), valid1(1 << 8);
  for (uint32_t c = 0; c < 0x10000; ++c) {
    if (!is_scalar_value(c)) continue;
    const std::string s = encode(c);
    uint32_t v = 0;
    for (char b : s) v = (v << 8) | static_cast<uint8_t>(b);
    (s.size() == 1 ? valid1 : s.size() == 2 ? valid2 : valid3)[v] = true;
  }
  std::string s(3, '\0');
  for (uint32_t v = 0; v < (1u << 24); ++v) {
    s[0] = static_cast<char>(v >> 16), s[1] = static_cast<char>(v >> 8), s[2] = static_cast<char>(v);
    const size_t n = utf8_sequence_length(s, 0);
    const size_t expect = valid1[v >> 16] ? 1 : valid2[v >> 8] ? 2 : valid3[v] ? 3 : 0;
    ASSERT_EQ(n, expect) << std::hex << v;
  }
  for (uint32_t lead = 0xF0; lead <= 0xFF; ++lead) {
    for (uint32_t second = 0; second <= 0xFF; ++second) {
      const std::string four = {static_cast<char>(lead), static_cast<char>(second), '\x80', '\x80'};
      const uint32_t c = ((lead & 0x07) << 18) | ((second & 0x3F) << 12);
      const bool ok = lead <= 0xF4 && (second & 0xC0) == 0x80 && c >= 0x10000 && c <= 0x10FFFF;
      ASSERT_EQ(utf8_sequence_length(four, 0), ok ? 4u : 0u) << std::hex << lead << " " << second;
      ASSERT_EQ(utf8_sequence_length(four.substr(0, 3), 0), 0u);  // cut short
    }
  }
}

TEST(TextEscape, MessagesAreOneLineOfValidUtf8) {
  // Every byte value, alone and after a valid lead byte, and the line breaks that are not C0.
  std::string all;
  for (int b = 0; b < 256; ++b) all += {static_cast<char>(b), '\xC3', static_cast<char>(b), 'x'};
  all += encode(0x85) + encode(0x2028) + encode(0x2029);
  const std::string line = one_line(all);
  ASSERT_TRUE(valid_utf8(line));
  for (size_t i = 0; i < line.size(); i += utf8_sequence_length(line, i)) {
    const uint8_t b = static_cast<uint8_t>(line[i]);
    EXPECT_FALSE(b < 0x20 || b == 0x7F) << i;
    EXPECT_NE(line.compare(i, 2, "\xC2\x85"), 0) << i;
    EXPECT_NE(line.compare(i, 3, "\xE2\x80\xA8"), 0) << i;
    EXPECT_NE(line.compare(i, 3, "\xE2\x80\xA9"), 0) << i;
  }
  // Text that is UTF-8 and no control character is kept as it is.
  const std::string text = "axpy \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 'q\"\\";
  EXPECT_EQ(one_line(text), text);
  EXPECT_EQ(one_line("a\nb\r\tc\x01\x7F"
                     "d\xFF"),
            "a\\nb\\r\\tc\\x01\\x7fd\\xff");
}

TEST(TextEscape, FailKeepsTheMessageOneLine) {
  fail(SK_ERR_NOT_FOUND, "kernel '%s' not found", "scale_\xFF\xFE\nnext");
  EXPECT_STREQ(last_error(), "kernel 'scale_\\xff\\xfe\\nnext' not found");
  prefix_error("scope 'a\nb'");
  EXPECT_STREQ(last_error(), "scope 'a\\nb': kernel 'scale_\\xff\\xfe\\nnext' not found");
}

// A name of kilobytes (a CUTLASS kernel's mangled name) leaves the message whole, its reason
// last; one past 16 KiB loses its middle, never its start or its end.
TEST(TextEscape, FailKeepsTheReasonAfterALongName) {
  const std::string name(3000, 'K');
  fail(SK_ERR_UNSUPPORTED, "kernel '%s' of '%s' cannot be fused: the reason", name.c_str(), name.c_str());
  EXPECT_EQ(std::string(last_error()), "kernel '" + name + "' of '" + name + "' cannot be fused: the reason");
  const std::string huge(100000, 'H');
  fail(SK_ERR_UNSUPPORTED, "start '%s' the end", huge.c_str());
  const std::string got = last_error();
  EXPECT_LT(got.size(), 17000u);
  EXPECT_EQ(got.rfind("start 'HHH", 0), 0u) << got.substr(0, 40);
  EXPECT_NE(got.find(" [...] "), std::string::npos);
  EXPECT_EQ(got.substr(got.size() - 9), "' the end");
}

TEST(TextEscape, JsonStringsAreValidUtf8) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += {static_cast<char>(b), '\xC3', static_cast<char>(b)};
  JsonWriter j;
  j.begin_object().key(all).value(all).end_object();
  EXPECT_TRUE(valid_utf8(j.str()));
  for (char c : j.str()) EXPECT_GE(static_cast<uint8_t>(c), 0x20);
  JsonWriter k;
  k.begin_array().value("s\xFF\"\\\n\xC3\xA9").end_array();
  EXPECT_EQ(k.str(), "[\"s\\\\xff\\\"\\\\\\u000a\xC3\xA9\"]");
}

}  // namespace
}  // namespace sk
