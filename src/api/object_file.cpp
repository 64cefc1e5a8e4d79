#include "api/object_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/error.hpp"
#include "elf/fatbin.hpp"

namespace sk::api {
namespace {
// What a module image may begin with (a stream is read until bytes that cannot begin one): an
// ELF object, an archive, nvcc's fatbinary and LTO-IR, or text (PTX, a linker script).
constexpr elf::MagicBytes kFatbin = elf::magic_bytes(elf::kFatbinMagic), kLtoIr = elf::magic_bytes(elf::kLtoIrMagic);
constexpr std::string_view kStarts[] = {"\177ELF", "!<arch>\n", kFatbin.view(), kLtoIr.view()};

bool may_begin_module(const unsigned char *b, size_t n) {
  const std::string_view head(reinterpret_cast<const char *>(b), std::min<size_t>(n, 8));
  for (std::string_view start : kStarts)
    if (start.substr(0, std::min(start.size(), head.size())) == head.substr(0, std::min(start.size(), head.size())))
      return true;
  return std::all_of(head.begin(), head.end(),
                     [](char c) { return (c >= 32 && c < 127) || c == '\t' || c == '\n' || c == '\r'; });
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

sk_status too_large(const char *path, unsigned long long size, size_t max_size) {
  return fail(SK_ERR_UNSUPPORTED, "%s: %llu bytes or more: kernel objects must be smaller than %zu bytes", path,
              size, max_size);
}
}  // namespace

ObjectFile::~ObjectFile() {
  if (map_) munmap(map_, map_size_);
}

sk_status ObjectFile::open(const char *path, size_t max_size) {
  Fd f;
  // O_NONBLOCK: opening a FIFO no one writes to would wait for a writer; reads then block again.
  f.fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0)
    return fail(SK_ERR_NOT_FOUND, "sk_module_load_file: cannot open '%s': %s", path, std::strerror(errno));
  if (const int flags = fcntl(f.fd, F_GETFL); flags < 0 || fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    return fail(SK_ERR_NOT_FOUND, "sk_module_load_file: cannot read '%s': %s", path, std::strerror(errno));
  struct stat st;
  if (fstat(f.fd, &st) != 0)
    return fail(SK_ERR_NOT_FOUND, "sk_module_load_file: cannot stat '%s': %s", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return fail(SK_ERR_NOT_FOUND, "sk_module_load_file: '%s' is a directory", path);
  // Regular files of size 0 are read as streams too: /proc and /sys files say 0 and have bytes.
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    if (static_cast<unsigned long long>(st.st_size) >= max_size) return too_large(path, st.st_size, max_size);
    void *p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, f.fd, 0);
    if (p == MAP_FAILED)
      return fail(SK_ERR_NOT_FOUND, "sk_module_load_file: cannot map '%s': %s", path, std::strerror(errno));
    map_ = p;
    map_size_ = static_cast<size_t>(st.st_size);
    return SK_OK;
  }
  // Not a regular file: read in chunks, never past the limit.
  unsigned char buf[65536];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return fail(SK_ERR_NOT_FOUND, "sk_module_load_file: cannot read '%s': %s", path, std::strerror(errno));
    if (n == 0) break;
    if (bytes_.size() + static_cast<size_t>(n) >= max_size) return too_large(path, bytes_.size() + n, max_size);
    bytes_.insert(bytes_.end(), buf, buf + n);
    // Stop at the first bytes that cannot start a module (/dev/zero, /dev/urandom).
    if (!may_begin_module(bytes_.data(), bytes_.size()))
      return fail(SK_ERR_BAD_BINARY,
                  "%s: not an ELF object (bad magic), nor an archive, a fatbinary, LTO-IR or text (PTX, a linker "
                  "script)",
                  path);
  }
  if (bytes_.empty() && S_ISFIFO(st.st_mode))
    return fail(SK_ERR_BAD_BINARY, "%s: nothing to read (a FIFO or pipe with no writer, or closed before writing)",
                path);
  if (bytes_.empty()) return fail(SK_ERR_BAD_BINARY, "%s: file is empty", path);
  return SK_OK;
}

}  // namespace sk::api
