// Where sk_kernel.h's SK_KERNEL macros put a kernel's metadata in an object, and its records
// read back as strings (common/kernel_metadata.hpp parses them): what the host linker keeps of
// a module and what sk_module_inspect reads of an object it does not link.
#pragma once
#include <string>
#include <vector>

#include "elf/elf_object.hpp"

namespace sk::elf {

inline constexpr char kKernelRecordsSection[] = ".sk.kernels";

// The NUL-terminated records of the object's kKernelRecordsSection, in section order (the empty
// strings of alignment padding between them dropped); none without the section.
std::vector<std::string> kernel_records(const Object &o);

}  // namespace sk::elf
