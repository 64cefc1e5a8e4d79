// Shared helpers of the CUDA tests: the kernel files CMake built with nvcc, and reading them.
#pragma once
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifndef SK_CUDA_KERNEL_DIR
#error "SK_CUDA_KERNEL_DIR must point at the nvcc-built test kernels"
#endif

namespace sk::cuda_test {

inline std::string kernel_path(const std::string &file) { return std::string(SK_CUDA_KERNEL_DIR) + "/" + file; }

inline std::vector<uint8_t> read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::vector<uint8_t> kernel_bytes(const std::string &file) { return read_file(kernel_path(file)); }

}  // namespace sk::cuda_test
