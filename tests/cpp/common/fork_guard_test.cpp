// fork() while another thread holds one of libsk's process-wide locks (common/fork_guard.hpp):
// the child must find every such lock free, and open a device of its own. Without the fork
// handlers taking them first, the child kept the lock held by a thread it does not have, and
// its first sk_device_open or handle waited for ever.
#include <gtest/gtest.h>
#include <signal.h>
#include <sk.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "common/fork_guard.hpp"

namespace {

using sk::ForkHeldLock;
using sk::locks_held_across_fork;

// Opens a device and a stream, then closes them: what takes the process-wide locks.
bool open_and_close_a_device() {
  sk_device *dev = nullptr;
  sk_stream *stream = nullptr;
  if (sk_device_open("host:cores=2", &dev) != SK_OK) return false;
  const bool ok = sk_stream_create(dev, &stream) == SK_OK;
  sk_stream_destroy(stream);
  sk_device_close(dev);
  return ok;
}

// Waits up to 10 s for the child (whose hang may come before its alarm: in a fork handler);
// kills it after that.
bool child_ended(pid_t pid, int *status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  waitpid(pid, status, 0);
  return false;
}

TEST(ForkGuard, RegistersTheLocksADeviceOpenedInAChildTakes) {
  ASSERT_TRUE(open_and_close_a_device());  // every lock of that path exists by now
  std::multiset<std::string> names;
  for (const ForkHeldLock &l : locks_held_across_fork()) names.insert(l.what);
  EXPECT_EQ(names.count("handle shells"), 8u);  // one per handle type's free list
  EXPECT_EQ(names.count("open devices"), 1u);
  EXPECT_EQ(names.count("CPU claims"), 1u);
}

// For each registered lock: a thread holds it while this thread forks. The fork waits for it
// (the prepare handler takes it), and the child finds it, and every other, free.
TEST(ForkGuard, AForkWhileAnotherThreadHoldsALockLeavesItFreeInTheChild) {
#if defined(SK_TEST_EMULATED)
  GTEST_SKIP() << "qemu-user cannot start threads in the fork child of a threaded process";
#endif
  ASSERT_TRUE(open_and_close_a_device());
  const std::vector<ForkHeldLock> locks = locks_held_across_fork();
  ASSERT_FALSE(locks.empty());
  for (const ForkHeldLock &held : locks) {
    SCOPED_TRACE(held.what);
    std::atomic<bool> holding{false};
    std::thread holder([&] {
      std::lock_guard<std::mutex> lock(*held.mutex);
      holding.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    });
    while (!holding.load()) std::this_thread::yield();
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 1;
      for (const ForkHeldLock &l : locks) {
        if (!l.mutex->try_lock()) _exit(code);
        l.mutex->unlock();
        ++code;
      }
      _exit(open_and_close_a_device() ? 0 : 100);
    }
    holder.join();
    int status = 0;
    ASSERT_TRUE(child_ended(pid, &status)) << "the child hung (a lock left held in the fork handlers?)";
    ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
    const int code = WEXITSTATUS(status);
    EXPECT_EQ(code, 0) << (code == 100 ? std::string("the child could not open a device")
                                       : "the child found lock " + std::to_string(code - 1) + " (" +
                                             locks[code - 1].what + ") held");
  }
}

}  // namespace
