// Objects that hold a compiler's intermediate code for link-time optimisation instead of machine
// code: GCC's slim LTO objects (ELF whose only contents are .gnu.lto_* sections) and LLVM
// bitcode (clang -flto; not ELF at all). Linked as they are they would give a module without
// kernels, so the loader refuses them, naming the flag.
#pragma once
#include <cstddef>

#include "elf/elf_object.hpp"

namespace sk::elf {

// Whether `bytes` start like LLVM bitcode: raw ('B' 'C' 0xC0 0xDE) or in its wrapper header.
bool is_llvm_bitcode(const void *bytes, size_t size);

// Whether `o` is a GCC LTO object without machine code (-flto without -ffat-lto-objects).
// Fat LTO objects carry their regular code beside the LTO sections: they are not slim.
bool is_gcc_slim_lto(const Object &o);

}  // namespace sk::elf
