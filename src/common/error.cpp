#include "common/error.hpp"

#include <cstdarg>
#include <cstdio>

#include "common/text_escape.hpp"

namespace sk {
namespace {
thread_local std::string t_last_error;
// A message quotes names from objects (a CUTLASS kernel's mangled name runs to kilobytes) and
// ends with the reason: past this length its middle gives way, never its end.
constexpr size_t kMaxMessage = 16384;
}  // namespace

sk_status fail(sk_status code, const char *fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string text(n > 0 ? (size_t)n : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, fmt, again);
  va_end(again);
  if (text.size() > kMaxMessage)
    text = text.substr(0, kMaxMessage / 2) + " [...] " + text.substr(text.size() - kMaxMessage / 2);
  // Messages quote names from objects and callers: kept one line of valid UTF-8.
  t_last_error = one_line(text);
  return code;
}

const char *last_error() { return t_last_error.c_str(); }

void prefix_error(const std::string &prefix) {
  t_last_error = one_line(prefix) + ": " + t_last_error;  // the prefix quotes names too
}

}  // namespace sk
