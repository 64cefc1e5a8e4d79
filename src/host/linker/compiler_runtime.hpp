// What a static link takes from the static parts of the toolchain, which no shared library
// exports, and how libsk stands in for them:
//  - libgcc.a's helpers: AArch64's outline atomics (-moutline-atomics, the default since GCC
//    10: `__aarch64_ldadd4_acq_rel`...) and x86-64's CPU model behind __builtin_cpu_supports and
//    __builtin_cpu_is (`__cpu_model`, `__cpu_features2`, `__cpu_indicator_init`). libsk links
//    its own copies and binds kernels to its functions; a module gets its own copy of each
//    variable, as a static link copies it into each program (code may address it with an
//    absolute 32-bit field, -fno-pic), filled from libsk's, which libgcc's constructor set
//    when libsk loaded.
//  - glibc's libc_nonshared.a: `atexit` and `pthread_atfork` pass the caller's __dso_handle to
//    the C library (__cxa_atexit, __register_atfork). The linker writes a small function into
//    the module that does so with the module's own handle, so that what a kernel registers runs
//    or goes when the module is unloaded (__cxa_finalize), as for a dlopen'ed library.
#pragma once
#include <cstddef>
#include <string_view>

namespace sk::host {

// The address of compiler helper function `name` (libsk's copy), or nullptr.
void *resolve_compiler_runtime(std::string_view name);

// The address and size of libsk's copy of compiler helper variable `name`, which the linker
// copies into the module; nullptr when `name` is not one.
const void *compiler_runtime_variable(std::string_view name, size_t *size);

// A libc_nonshared.a function the linker writes into the module (RelocArch::write_forward_stub):
// it calls `target` with argument `dso_arg` set to the module's __dso_handle and the arguments
// from `zero_from` up to it set to 0.
struct ModuleForward {
  const char *name;
  const char *target;
  unsigned dso_arg;
  unsigned zero_from;
};
const ModuleForward *module_forward(std::string_view name);

// For a symbol nothing binds: which static part of the toolchain a program takes it from
// ("glibc's libc_nonshared.a"), or nullptr when libsk does not know it as one.
const char *static_only_origin(std::string_view name);

}  // namespace sk::host
