// Linked cubins on disk, shared by every process of the user: `$XDG_CACHE_HOME/libsk` (else
// `~/.cache/libsk`), one file per key. A file is trusted only when its header repeats the key
// and the hash of the bytes that follow; anything else is a miss, and the next store replaces
// it. SK_CUDA_LINK_CACHE=0 turns the cache off; a directory that cannot be written does too.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sk::cuda {

struct LinkKey {
  uint64_t lo = 0, hi = 0;
  bool operator==(const LinkKey &) const = default;
  bool operator<(const LinkKey &o) const { return lo != o.lo ? lo < o.lo : hi < o.hi; }
};

// The cache directory, or "" when the cache is off (read from the environment on each call).
std::string disk_cache_dir();

// The cubin stored under `key`, or false.
bool disk_cache_load(const LinkKey &key, std::vector<uint8_t> *cubin);

// Stores `cubin` under `key` (write to a temporary file, then rename: readers never see part
// of a file). Failures are silent: the cache only saves time.
void disk_cache_store(const LinkKey &key, const std::vector<uint8_t> &cubin);

// The file `key` is stored in, under `dir` (tests).
std::string disk_cache_path(const std::string &dir, const LinkKey &key);

}  // namespace sk::cuda
