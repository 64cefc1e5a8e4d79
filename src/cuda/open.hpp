// What the C API knows of the CUDA backend: how to open a device and how to inspect a module
// without one (its line in api/backend_list.cpp). Everything else of the backend lies behind
// common/backend.hpp.
#pragma once
#include <sk.h>

#include <cstddef>
#include <memory>
#include <string>

namespace sk::backend {
class Device;
}

namespace sk::cuda {

// Opens "cuda", "cuda:N[,key=value...]".
sk_status open_cuda_backend(const char *spec, std::shared_ptr<backend::Device> *out);
// sk_module_inspect for "cuda:arch=sm_XY" (cuda/module_inspect.cpp): no GPU needed.
sk_status inspect_cuda_module(const char *spec, const void *image, size_t size, std::string *json);

}  // namespace sk::cuda
