// The executor's threads, started with the stack the device gives its cores (device key
// stack_kb). std::thread takes glibc's default, which is the RLIMIT_STACK soft limit at process
// start, or 2 MiB on x86-64 when that is unlimited: less than the main thread, which grows
// without a bound, so a kernel with a deep stack ran natively and overflowed on a core.
#pragma once
#include <sk.h>

#include <pthread.h>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace sk::host {

// The bounds of stack_kb, and the stack a core gets when RLIMIT_STACK is unlimited: eight times
// Linux's default limit. Each core's stack is address space held for the device's life and
// memory only as deep as the kernels go, so the cap costs little; it is there because some
// number must stand for "unlimited".
constexpr uint64_t kMinCoreStackKiB = 128;  // aarch64's PTHREAD_STACK_MIN, and room for libsk's own frames
constexpr uint64_t kMaxCoreStackKiB = uint64_t{1} << 20;  // 1 GiB
constexpr uint64_t kUnlimitedCoreStackKiB = 64 * 1024;

// The stack a core gets without stack_kb: the RLIMIT_STACK soft limit now (what the main
// thread may grow to), kUnlimitedCoreStackKiB when that is unlimited, within the key's bounds.
uint64_t default_core_stack_kib();

// Starts `body` on a thread with a stack of `stack_kib` KiB. On failure returns the errno
// (EAGAIN: no thread or memory left) and starts nothing.
int start_core_thread(uint64_t stack_kib, std::function<void()> body, pthread_t *out);

// The stack the calling thread has left below its current frame (stacks grow down on the
// architectures libsk runs on); SIZE_MAX where the thread's stack is unknown.
size_t thread_stack_left();

}  // namespace sk::host
