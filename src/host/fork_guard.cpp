#include "host/fork_guard.hpp"

#include <pthread.h>

#include "host/cpu_claims.hpp"

namespace sk::host {

namespace detail {
std::atomic<uint32_t> forks_survived{0};
}

namespace {

void in_forked_child() {
  // The child has one thread: nothing else reads these now.
  detail::forks_survived.fetch_add(1, std::memory_order_relaxed);
  CpuClaims::process().forget_all_after_fork();
}

// Registered when libsk is loaded (glibc unregisters it if libsk is unloaded with dlclose).
[[maybe_unused]] const int registered = pthread_atfork(nullptr, nullptr, in_forked_child);

}  // namespace

}  // namespace sk::host
