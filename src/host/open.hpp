// What the C API knows of the host backend: how to open a device (its line in
// api/backend_list.cpp). Everything else of the backend lies behind common/backend.hpp.
#pragma once
#include <sk.h>

#include <memory>

namespace sk::backend {
class Device;
}

namespace sk::host {

// Opens "host[:key=value,...]".
sk_status open_host_backend(const char *spec, std::shared_ptr<backend::Device> *out);

}  // namespace sk::host
