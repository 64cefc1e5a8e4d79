// The one rule for the text libsk hands out: names from objects and callers (symbols, paths,
// scope names) may hold any bytes, but explain and trace JSON must stay valid UTF-8 JSON, and an
// sk_last_error() message valid UTF-8 on one line. A byte that is not part of well-formed UTF-8
// becomes the four characters \xNN (its value in hex) in both, so a message and the JSON name
// the same object the same way.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace sk {

// The length (1-4) of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) that starts at s[i]; 0 if none does.
size_t utf8_sequence_length(std::string_view s, size_t i);

// Appends s as the contents of a JSON string: '"' and '\' escaped, control characters as
// \u00XX, bytes that are not UTF-8 as the text \xNN (written "\\xNN").
void append_json_string(std::string &out, std::string_view s);

// s as one line of valid UTF-8: newline, carriage return and tab as \n, \r, \t, other control
// characters (C0, DEL, C1) as \xNN or \uXXXX, the line and paragraph separators U+2028/U+2029
// as \u2028/\u2029, and bytes that are not UTF-8 as \xNN. Other text is kept as it is.
std::string one_line(std::string_view s);

}  // namespace sk
