#include "common/fork_guard.hpp"

#include <pthread.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace sk {

namespace detail {
std::atomic<uint32_t> forks_survived{0};
}

namespace {

// The registered locks: a fixed table, as registration may come from static initialisers and
// the fork handlers must not allocate. Slots are filled in order; one being filled when a fork
// comes reads null and is passed over (its lock is not in use yet).
constexpr uint32_t kMaxForkHeldLocks = 16;
struct Registered {
  std::atomic<std::mutex *> mutex{nullptr};
  const char *what = nullptr;
};
Registered g_locks[kMaxForkHeldLocks];
std::atomic<uint32_t> g_lock_count{0};
// The locks the prepare handler took, for the parent and child handlers (the one thread that
// forks runs all three): kept, not read again from g_locks, where a lock registered meanwhile
// would be given back without having been taken.
std::mutex *g_taken[kMaxForkHeldLocks];
uint32_t g_taken_count = 0;

void before_fork() {
  g_taken_count = 0;
  const uint32_t n = std::min(g_lock_count.load(std::memory_order_acquire), kMaxForkHeldLocks);
  for (uint32_t i = 0; i < n; ++i)
    if (std::mutex *m = g_locks[i].mutex.load(std::memory_order_acquire)) {
      m->lock();
      g_taken[g_taken_count++] = m;
    }
}

void give_back_after_fork() {
  while (g_taken_count > 0) g_taken[--g_taken_count]->unlock();
}

void in_forked_child() {
  // The child has one thread: nothing else reads these now. The forking thread took the locks
  // in the parent; glibc's mutexes (std::mutex) are given back by the thread that runs on.
  give_back_after_fork();
  detail::forks_survived.fetch_add(1, std::memory_order_relaxed);
}

// Registered when libsk is loaded (glibc unregisters it if libsk is unloaded with dlclose).
[[maybe_unused]] const int registered = pthread_atfork(before_fork, give_back_after_fork, in_forked_child);

}  // namespace

void hold_across_fork(std::mutex &mutex, const char *what) {
  const uint32_t i = g_lock_count.fetch_add(1, std::memory_order_acq_rel);
  if (i >= kMaxForkHeldLocks) {
    // A programming error of libsk's (the table is sized for its own locks): fail loudly in
    // tests rather than leave a lock a forked child could find held.
    std::fprintf(stderr, "libsk: more than %u locks registered to be held across fork(); '%s' is not\n",
                 kMaxForkHeldLocks, what);
    std::abort();
  }
  g_locks[i].what = what;
  g_locks[i].mutex.store(&mutex, std::memory_order_release);
}

std::vector<ForkHeldLock> locks_held_across_fork() {
  std::vector<ForkHeldLock> out;
  const uint32_t n = std::min(g_lock_count.load(std::memory_order_acquire), kMaxForkHeldLocks);
  for (uint32_t i = 0; i < n; ++i)
    if (std::mutex *m = g_locks[i].mutex.load(std::memory_order_acquire)) out.push_back({m, g_locks[i].what});
  return out;
}

}  // namespace sk
