// The backends this libsk has (common/backend.hpp), by the name a device spec starts with.
#pragma once
#include <sk.h>

#include <memory>

#include "common/backend.hpp"

namespace sk::api {

// Opens the device `spec` names ("name" or "name:..."), with the backend of that name; another
// name is an unknown backend (SK_ERR_INVALID_ARGUMENT, listing this build's).
sk_status open_backend(const char *spec, std::shared_ptr<backend::Device> *out);

// The backend's sk_module_inspect: its JSON for the image, or SK_ERR_UNSUPPORTED where it has
// none; the spec's backend is found as open_backend finds it.
sk_status inspect_module(const char *spec, const void *image, size_t size, std::string *json);

}  // namespace sk::api
