// A dlopen'ed shared library that closes itself: the CUDA driver and nvJitLink are loaded at
// run time, so libsk builds and loads on machines without CUDA.
#pragma once
#include <sk.h>

#include <string>

namespace sk::cuda {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  DynamicLibrary(const DynamicLibrary &) = delete;
  DynamicLibrary &operator=(const DynamicLibrary &) = delete;
  ~DynamicLibrary();

  // Opens `name` (a soname searched the usual way, or a path). On failure returns
  // SK_ERR_DEVICE with a message naming the library, `purpose` (why libsk needs it) and
  // dlerror()'s reason.
  sk_status open(const std::string &name, const char *purpose);
  // The address of the first of `names` the library exports, or nullptr.
  void *find(const char *name) const;
  const std::string &name() const { return name_; }
  // The file the dynamic loader opened for name() (a soname resolved to its path), or name()
  // when it cannot say: what a device run reports as the library it used.
  std::string path() const;

 private:
  void *handle_ = nullptr;
  std::string name_;
};

}  // namespace sk::cuda
