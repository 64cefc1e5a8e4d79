// C++ exceptions that leave an object's code: how they are described in messages, and what a
// launch does with one that escapes a kernel (it fails with SK_ERR_KERNEL; the process and the
// device go on).
#pragma once
#include <string>

namespace sk::host {

struct CoreContext;

// Inside a catch block: "std::runtime_error: what()" for a std::exception, otherwise "an
// exception of type T" (demangled).
std::string current_exception_text();

// Inside the catch around a kernel call: records the exception as the launch's failure, naming
// the kernel (the running step), the block and the core, and aborts the launch.
void record_kernel_exception(CoreContext &ctx) noexcept;

}  // namespace sk::host
