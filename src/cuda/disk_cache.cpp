#include "cuda/disk_cache.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace sk::cuda {
namespace {

// Header: magic, key, byte count, XXH3-128 of the bytes; then the cubin.
constexpr char kMagic[8] = {'S', 'K', 'C', 'U', 'B', 'I', 'N', '1'};
struct Header {
  char magic[8];
  uint64_t key_lo, key_hi, size, hash_lo, hash_hi;
};

bool write_all(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size) {
    ssize_t n = ::write(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= (size_t)n;
  }
  return true;
}

}  // namespace

std::string disk_cache_dir() {
  if (const char *off = std::getenv("SK_CUDA_LINK_CACHE"); off && std::strcmp(off, "0") == 0) return "";
  // XDG: a relative XDG_CACHE_HOME is invalid and ignored.
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') return std::string(xdg) + "/libsk";
  if (const char *home = std::getenv("HOME"); home && home[0] == '/') return std::string(home) + "/.cache/libsk";
  return "";
}

std::string disk_cache_path(const std::string &dir, const LinkKey &key) {
  char name[48];
  std::snprintf(name, sizeof name, "%016llx%016llx.cubin", (unsigned long long)key.hi, (unsigned long long)key.lo);
  return dir + "/" + name;
}

bool disk_cache_load(const LinkKey &key, std::vector<uint8_t> *cubin) {
  const std::string dir = disk_cache_dir();
  if (dir.empty()) return false;
  std::FILE *f = std::fopen(disk_cache_path(dir, key).c_str(), "rb");
  if (!f) return false;
  Header h;
  bool ok = std::fread(&h, sizeof h, 1, f) == 1 && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
            h.key_lo == key.lo && h.key_hi == key.hi && h.size > 0 && h.size < (1ull << 32);
  std::vector<uint8_t> bytes;
  if (ok) {
    bytes.resize(h.size);
    // Exactly `size` bytes, then the end of the file.
    ok = std::fread(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fgetc(f) == EOF;
  }
  std::fclose(f);
  if (!ok) return false;
  const XXH128_hash_t sum = XXH3_128bits(bytes.data(), bytes.size());
  if (sum.low64 != h.hash_lo || sum.high64 != h.hash_hi) return false;
  *cubin = std::move(bytes);
  return true;
}

void disk_cache_store(const LinkKey &key, const std::vector<uint8_t> &cubin) {
  const std::string dir = disk_cache_dir();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return;
  static std::atomic<unsigned> serial{0};
  const std::string path = disk_cache_path(dir, key);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const XXH128_hash_t sum = XXH3_128bits(cubin.data(), cubin.size());
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key_lo = key.lo;
  h.key_hi = key.hi;
  h.size = cubin.size();
  h.hash_lo = sum.low64;
  h.hash_hi = sum.high64;
  const bool ok = write_all(fd, &h, sizeof h) && write_all(fd, cubin.data(), cubin.size());
  if (::close(fd) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace sk::cuda
