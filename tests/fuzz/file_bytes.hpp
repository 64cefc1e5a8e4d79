// A whole file's bytes, for the fuzz harnesses and their replay driver (kernel objects, inputs).
#pragma once
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// False (and *out untouched) when the file cannot be opened.
inline bool read_file_bytes(const std::string &path, std::vector<uint8_t> *out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}
