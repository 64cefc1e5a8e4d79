// Host devices and fork(). A device's cores are threads, and fork() copies only the thread that
// calls it: in the child, every device opened before the fork has lost its cores, and its
// queue's state may be in the middle of a launch. Waiting on it there would wait forever (a
// launch + synchronize in a forked child hung; so did closing the device, which joined threads
// the child does not have). Python's multiprocessing forks by default on Linux, so a device
// opened before a Pool starts is the ordinary case, not a corner.
//
// A pthread_atfork child handler counts the forks this process came through. An executor keeps
// the count it was created at; when the count has moved it refuses launches with SK_ERR_STATE
// (saying to open a new device in the child), returns from waits at once (nothing of it can
// run here), and when destroyed leaves its threads' handles behind instead of joining them.
// The process's CPU claims (host/executor/cpu_claims.hpp) read the count too: those made before
// the fork name executors whose cores are gone, so a device opened in the child pins as in a
// fresh process.
//
// The child also needs libsk's process-wide locks free: a device opened there takes the handle
// shells' locks, the open devices' and the CPU claims'. Another thread of the parent may hold
// one at the fork, and it does not exist in the child, so the lock would stay held there for
// ever (and the data under it could be half changed). Each such lock is registered with
// hold_across_fork: the fork takes them all before it copies the process (prepare handler) and
// gives them back in both processes, as glibc does with malloc's. None of them is held while
// another is taken, so taking them in registration order cannot deadlock.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace sk {

namespace detail {
extern std::atomic<uint32_t> forks_survived;
}

// How many fork() children deep this process is, counted since libsk was loaded. One relaxed
// load: launches check it.
inline uint32_t fork_generation() { return detail::forks_survived.load(std::memory_order_relaxed); }

// Registers a process-wide lock (one that lives as long as the process) to be held across
// every later fork(); `what` names it, for tests. A lock held while another is taken must not
// be registered (the fork takes them in turn).
void hold_across_fork(std::mutex &mutex, const char *what);

struct ForkHeldLock {
  std::mutex *mutex;
  const char *what;
};
// The locks registered so far, in registration order (the order the fork takes them).
std::vector<ForkHeldLock> locks_held_across_fork();

}  // namespace sk
