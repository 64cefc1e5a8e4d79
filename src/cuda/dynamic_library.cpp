#include "cuda/dynamic_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include "common/error.hpp"

namespace sk::cuda {

DynamicLibrary::~DynamicLibrary() {
  if (handle_) dlclose(handle_);
}

sk_status DynamicLibrary::open(const std::string &name, const char *purpose) {
  if (handle_) {
    dlclose(handle_);
    handle_ = nullptr;
  }
  name_ = name;
  // RTLD_LOCAL: the CUDA libraries' symbols must not leak into the process's namespace, where
  // host kernels resolve their undefined symbols.
  handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *why = dlerror();
    return fail(SK_ERR_DEVICE, "cannot load %s (%s): %s", name.c_str(), purpose, why ? why : "unknown reason");
  }
  return SK_OK;
}

void *DynamicLibrary::find(const char *name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

}  // namespace sk::cuda

namespace sk::cuda {

std::string DynamicLibrary::path() const {
  struct link_map *map = nullptr;
  if (handle_ && dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    return map->l_name;
  return name_;
}

}  // namespace sk::cuda
