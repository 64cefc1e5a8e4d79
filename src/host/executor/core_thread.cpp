#include "host/executor/core_thread.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>

namespace sk::host {

uint64_t default_core_stack_kib() {
  rlimit limit{};
  if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kUnlimitedCoreStackKiB;
  return std::clamp<uint64_t>(limit.rlim_cur / 1024, kMinCoreStackKiB, kMaxCoreStackKiB);
}

namespace {
void *run_body(void *arg) {
  std::unique_ptr<std::function<void()>> body(static_cast<std::function<void()> *>(arg));
  (*body)();
  return nullptr;
}
}  // namespace

int start_core_thread(uint64_t stack_kib, std::function<void()> body, pthread_t *out) {
  pthread_attr_t attr;
  if (int err = pthread_attr_init(&attr); err != 0) return err;
  int err = pthread_attr_setstacksize(&attr, static_cast<size_t>(stack_kib) * 1024);
  auto *arg = new (std::nothrow) std::function<void()>(std::move(body));
  if (!arg && err == 0) err = ENOMEM;
  if (err == 0) err = pthread_create(out, &attr, run_body, arg);
  if (err != 0) delete arg;
  pthread_attr_destroy(&attr);
  return err;
}

size_t thread_stack_left() {
  // The stack's low end, read once per thread (glibc reads /proc/self/maps for the main
  // thread's); 1: unknown.
  thread_local uintptr_t low = 0;
  if (low == 0) {
    low = 1;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void *addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr) low = reinterpret_cast<uintptr_t>(addr);
      pthread_attr_destroy(&attr);
    }
  }
  if (low == 1) return SIZE_MAX;
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return here > low ? here - low : 0;
}

}  // namespace sk::host
