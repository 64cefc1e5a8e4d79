// Symbol names as a reader knows them, for messages: C++ (`_Z...`, the Itanium ABI, through
// the C++ runtime's demangler) and Rust, in both of rustc's manglings: the legacy one (`_ZN...17h
// <hash>E`, C++-like with `$LT$`-style escapes) and v0 (`_R...`, RFC 2603). What does not parse
// is left as it is.
#pragma once
#include <string>
#include <string_view>

namespace sk::elf {

// The demangled form of `name`, or "" when it is not a mangled name this reads.
std::string demangle(std::string_view name);

// "'name'", or "'name' (demangled)" for a mangled one: how messages quote a symbol.
std::string quoted_symbol(std::string_view name);

}  // namespace sk::elf
