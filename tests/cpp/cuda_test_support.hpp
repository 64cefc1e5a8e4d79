// Shared helpers of the CUDA tests: the kernel files CMake built with nvcc, and reading them.
#pragma once
#include <cstdlib>
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

inline std::vector<uint8_t> read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::vector<uint8_t> kernel_bytes(const std::string &file) { return read_file(kernel_path(file)); }

}  // namespace sk::cuda_test
