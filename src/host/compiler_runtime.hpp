// Helpers that compilers call from kernel code but that no shared library exports: a static
// linker would take them from libgcc.a. AArch64: GCC's outline atomics (-moutline-atomics, the
// default since GCC 10), `__aarch64_ldadd4_acq_rel` and friends, which pick LSE or LL/SC
// instructions at run time. libsk links its own copies and binds kernels to them.
#pragma once
#include <string_view>

namespace sk::host {

// The address of compiler helper `name`, or nullptr (always on machines without any).
void *resolve_compiler_runtime(std::string_view name);

}  // namespace sk::host
