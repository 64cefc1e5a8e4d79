// The bytes of a kernel object file, for sk_module_load_file: regular files are mapped (not
// copied: the linker copies what it keeps), other files (pipes, devices) are read up to the
// object size limit, so /dev/zero or a 1 GiB sparse file fail fast instead of filling memory.
#pragma once
#include <sk.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sk::api {

class ObjectFile {
 public:
  ObjectFile() = default;
  ~ObjectFile();
  ObjectFile(const ObjectFile &) = delete;
  ObjectFile &operator=(const ObjectFile &) = delete;

  // Opens `path`; files of `max_size` bytes or more fail (SK_ERR_UNSUPPORTED) without being read.
  sk_status open(const char *path, size_t max_size);
  const void *data() const { return map_ ? map_ : bytes_.data(); }
  size_t size() const { return map_ ? map_size_ : bytes_.size(); }

 private:
  void *map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<unsigned char> bytes_;
};

}  // namespace sk::api
