// The backends this libsk has (common/backend.hpp), by the name a device spec starts with.
#pragma once
#include <sk.h>

#include <memory>

#include "common/backend.hpp"

namespace sk::api {

// Opens the device `spec` names ("name" or "name:..."), with the backend of that name; another
// name is an unknown backend (SK_ERR_INVALID_ARGUMENT, listing this build's).
sk_status open_backend(const char *spec, std::shared_ptr<backend::Device> *out);

}  // namespace sk::api
