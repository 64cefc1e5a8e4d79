#include "elf/lto.hpp"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace sk::elf {

bool is_llvm_bitcode(const void *bytes, size_t size) {
  static const uint8_t raw[4] = {'B', 'C', 0xc0, 0xde};
  static const uint8_t wrapper[4] = {0xde, 0xc0, 0x17, 0x0b};  // 0x0B17C0DE, little-endian
  return bytes && size >= 4 && (std::memcmp(bytes, raw, 4) == 0 || std::memcmp(bytes, wrapper, 4) == 0);
}

bool is_gcc_slim_lto(const Object &o) {
  bool lto = false, code = false;
  for (const Section &s : o.sections) {
    if (s.name.rfind(".gnu.lto_", 0) == 0) lto = true;
    if ((s.flags & SHF_EXECINSTR) && s.size > 0) code = true;
  }
  if (!lto) return false;
  // GCC marks slim objects with the common symbol __gnu_lto_slim; without it, no code says so.
  for (const Symbol &s : o.symbols)
    if (s.name == "__gnu_lto_slim") return true;
  return !code;
}

}  // namespace sk::elf
