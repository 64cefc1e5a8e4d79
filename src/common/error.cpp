#include "common/error.hpp"

#include <cstdarg>
#include <cstdio>

#include "common/text_escape.hpp"

namespace sk {
namespace {
thread_local std::string t_last_error;
}

sk_status fail(sk_status code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  // Messages quote names from objects and callers: kept one line of valid UTF-8.
  t_last_error = one_line(buf);
  return code;
}

const char *last_error() { return t_last_error.c_str(); }

void prefix_error(const std::string &prefix) {
  t_last_error = one_line(prefix) + ": " + t_last_error;  // the prefix quotes names too
}

}  // namespace sk
