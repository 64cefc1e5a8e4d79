// Shared helpers of the CUDA tests: the kernel files CMake built with nvcc, and reading them.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifndef SK_CUDA_KERNEL_DIR
#error "SK_CUDA_KERNEL_DIR must point at the nvcc-built test kernels"
#endif

namespace sk::cuda_test {

// $SK_CUDA_KERNELS overrides the build tree's kernel directory (scripts/gpu-check --prebuilt
// runs the tests from a bundle built on another machine).
inline std::string kernel_path(const std::string &file) {
  const char *dir = std::getenv("SK_CUDA_KERNELS");
  return std::string(dir && *dir ? dir : SK_CUDA_KERNEL_DIR) + "/" + file;
}

#ifdef SK_PTXAS
// ptxas: $SK_PTXAS, else the one CMake found.
inline std::string ptxas_path() {
  const char *p = std::getenv("SK_PTXAS");
  return p && *p ? p : SK_PTXAS;
}
#endif

inline bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

// How many times `what` occurs in `text`, overlapping occurrences counted.
inline size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline std::vector<uint8_t> read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::vector<uint8_t> kernel_bytes(const std::string &file) { return read_file(kernel_path(file)); }
// A built kernel's file as text (PTX).
inline std::string kernel_text(const std::string &file) {
  const std::vector<uint8_t> bytes = kernel_bytes(file);
  return std::string(bytes.begin(), bytes.end());
}

#ifdef SK_TRITON_PTX_DIR
// A Triton kernel's checked-in PTX (tests/kernels/triton/ptx; $SK_TRITON_PTX overrides the
// directory, as $SK_CUDA_KERNELS does the built kernels').
inline std::string triton_path(const std::string &file) {
  const char *dir = std::getenv("SK_TRITON_PTX");
  return std::string(dir && *dir ? dir : SK_TRITON_PTX_DIR) + "/" + file;
}
#endif

// The test process's own link cache (XDG_CACHE_HOME, src/cuda/disk_cache.hpp), removed at
// exit: tests neither read the user's cached cubins nor leave theirs behind. Call it before
// the first link; returns the directory XDG_CACHE_HOME names.
inline const char *private_cache_home() {
  static char dir[] = "/tmp/sk-cuda-cache-XXXXXX";
  static const bool made = [] {
    if (!mkdtemp(dir)) return false;
    setenv("XDG_CACHE_HOME", dir, 1);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return true;
  }();
  return made ? dir : "";
}

}  // namespace sk::cuda_test
