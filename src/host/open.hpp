// What the C API knows of the host backend: how to open a device and how to inspect a module
// without one (its line in api/backend_list.cpp). Everything else of the backend lies behind common/backend.hpp.
#pragma once
#include <sk.h>

#include <cstddef>
#include <memory>
#include <string>

namespace sk::backend {
class Device;
}

namespace sk::host {

// Opens "host[:key=value,...]".
sk_status open_host_backend(const char *spec, std::shared_ptr<backend::Device> *out);
// sk_module_inspect for "host[:key=value,...]" (host/module_inspect.cpp): nothing is linked.
sk_status inspect_host_module(const char *spec, const void *image, size_t size, std::string *json);

}  // namespace sk::host
