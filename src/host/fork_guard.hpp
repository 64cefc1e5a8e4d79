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
// The handler also empties the process's CPU claims (cpu_claims.hpp), which name executors
// whose cores are gone, so that a device opened in the child pins as in a fresh process.
#pragma once
#include <atomic>
#include <cstdint>

namespace sk::host {

namespace detail {
extern std::atomic<uint32_t> forks_survived;
}

// How many fork() children deep this process is, counted since libsk was loaded. One relaxed
// load: launches check it.
inline uint32_t fork_generation() { return detail::forks_survived.load(std::memory_order_relaxed); }

}  // namespace sk::host
