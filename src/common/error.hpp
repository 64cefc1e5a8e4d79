// Per-thread last-error message and the helper every layer uses to fail with a status.
#pragma once
#include <sk.h>

#include <string>

namespace sk {

// Formats the message (printf-style), stores it as the calling thread's last error and returns
// `code`, so that failing paths read `return sk::fail(SK_ERR_BAD_BINARY, "...", ...);`. The
// message is kept one line of valid UTF-8 (common/text_escape.hpp's one_line).
sk_status fail(sk_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The calling thread's last error ("" if none).
const char *last_error();

// Replaces the calling thread's message with `prefix: <message>` (adds context on the way up).
void prefix_error(const std::string &prefix);

}  // namespace sk
