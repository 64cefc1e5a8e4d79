#include "host/executor/kernel_exception.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "host/executor/core_context.hpp"

namespace sk::host {

std::string current_exception_text() {
  const std::type_info *type = abi::__cxa_current_exception_type();
  std::string name = "of unknown type";
  if (type) {
    int status = 0;
    char *demangled = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
    name = demangled ? demangled : type->name();
    std::free(demangled);
  }
  try {
    throw;
  } catch (const std::exception &e) {
    return name + ": " + e.what();
  } catch (...) {
    return type ? "an exception of type " + name : "an exception " + name;
  }
}

void record_kernel_exception(CoreContext &ctx) noexcept {
  TaskFailure &f = *ctx.failure;
  try {
    std::string what = current_exception_text();
    std::lock_guard<std::mutex> lock(f.mutex);
    if (f.thrown.empty())  // the first one is the cause; cores that throw after it follow it
      f.thrown = "kernel '" + ctx.step->name + "' (step " + std::to_string(ctx.step_index) + ", block " +
                 std::to_string(ctx.block_idx) + ", core " + std::to_string(ctx.core) + ") threw " + what;
  } catch (...) {  // no memory for the text: the status still says what happened
  }
  f.kernel_threw.store(true, std::memory_order_release);
  f.aborted.store(true, std::memory_order_release);  // the other cores leave their waits
}

}  // namespace sk::host
