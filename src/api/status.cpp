// sk_last_error, sk_status_name, sk_version, sk_version_string.
#include <sk.h>

#include "common/error.hpp"

extern "C" {

SK_API const char *sk_last_error(void) { return sk::last_error(); }

SK_API const char *sk_status_name(sk_status s) {
  switch (s) {
    case SK_OK: return "SK_OK";
    case SK_ERR_INVALID_ARGUMENT: return "SK_ERR_INVALID_ARGUMENT";
    case SK_ERR_BAD_BINARY: return "SK_ERR_BAD_BINARY";
    case SK_ERR_UNSUPPORTED: return "SK_ERR_UNSUPPORTED";
    case SK_ERR_NOT_FOUND: return "SK_ERR_NOT_FOUND";
    case SK_ERR_INCOMPATIBLE: return "SK_ERR_INCOMPATIBLE";
    case SK_ERR_OUT_OF_MEMORY: return "SK_ERR_OUT_OF_MEMORY";
    case SK_ERR_DEVICE: return "SK_ERR_DEVICE";
    case SK_ERR_HANG: return "SK_ERR_HANG";
    case SK_ERR_STATE: return "SK_ERR_STATE";
    case SK_ERR_KERNEL: return "SK_ERR_KERNEL";
  }
  return "SK_ERR_UNKNOWN";
}

SK_API uint32_t sk_version(void) { return SK_VERSION_NUMBER; }

// Spelled from the header's macros by the preprocessor: the number is written once, in sk.h.
#define SK_STRINGIFY_(x) #x
#define SK_STRINGIFY(x) SK_STRINGIFY_(x)
SK_API const char *sk_version_string(void) {
  return SK_STRINGIFY(SK_VERSION_MAJOR) "." SK_STRINGIFY(SK_VERSION_MINOR) "." SK_STRINGIFY(SK_VERSION_PATCH);
}

}  // extern "C"
