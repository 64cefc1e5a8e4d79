// ELF files libsk writes for this process itself: gdb's JIT interface reads an object that
// describes a module's code (host/linker/debug_registration.hpp), glibc loads a shared object that
// carries a module's thread-local block (host/linker/tls_block.hpp).
#pragma once
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "host/linker/relocation.hpp"

namespace sk::host {

// An ELF64 little-endian header of `type` for this machine; the caller fills in its tables.
inline Elf64_Ehdr host_elf_header(uint16_t type) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = type;
  eh.e_machine = kHostMachine;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  return eh;
}

// Writes `value`'s bytes at offset `at` of `out`, which holds them.
template <typename T>
void put(std::vector<uint8_t> &out, uint64_t at, const T &value) {
  std::memcpy(out.data() + at, &value, sizeof value);
}

}  // namespace sk::host
