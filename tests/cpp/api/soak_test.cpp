// The public API soaked from 8 threads on one device, every result checked: fused and unfused
// launches of one chain rebound before every launch (sk_superkernel_set_arg), modules of
// distinct bytes loaded, launched and unloaded with their launches queued, a super kernel's
// argument rebound by one thread while another launches it, and one fork whose child opens a
// device and launches there. Each thread runs SK_SOAK_ITERATIONS rounds (default 10^4) or until
// SK_SOAK_SECONDS (default 10) have passed, whichever comes first; scripts/test runs it under
// TSan. The budget bounds the run only: no check depends on timing.
#include <gtest/gtest.h>
#include <sk.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "linker_test_support.hpp"
#include "sk_assert.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kN = 256;
constexpr uint32_t kHash = 2654435761u;              // capi_fill: out[i] = i * kHash + seed
constexpr int kChainThreads = 4, kChurnThreads = 2;  // and one rebinder, one launcher of its kernel
constexpr int kForkAt = 8;  // the round of thread 0 that forks (or its last, if it has fewer)

long env_or(const char *name, long fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

uint32_t *alloc(sk_device *dev) {
  void *p = nullptr;
  EXPECT_EQ(sk_mem_alloc(dev, kN * sizeof(uint32_t), &p), SK_OK) << sk_last_error();
  if (p) std::memset(p, 0, kN * sizeof(uint32_t));
  return static_cast<uint32_t *>(p);
}

// The first element of `buf` (n elements) that is not (i * kHash + seed) * mul + add, or n.
uint32_t first_wrong(const uint32_t *buf, uint32_t n, uint32_t seed, uint32_t mul = 1, uint32_t add = 0) {
  for (uint32_t i = 0; i < n; ++i)
    if (buf[i] != (i * kHash + seed) * mul + add) return i;
  return n;
}

// The child of the fork: a device of its own, one unfused launch. Reports by exit status.
[[noreturn]] void forked_child(const std::vector<uint8_t> &bytes) {
  alarm(60);  // a hang becomes a SIGALRM death
  sk_device *dev = nullptr;
  sk_module *mod = nullptr;
  sk_kernel *fill = nullptr;
  if (sk_device_open("host:cores=2", &dev) != SK_OK) _exit(10);
  if (sk_module_load(dev, bytes.data(), bytes.size(), &mod) != SK_OK) _exit(11);
  if (sk_module_get_kernel(mod, "capi_fill", &fill) != SK_OK) _exit(12);
  void *p = nullptr;
  if (sk_mem_alloc(dev, kN * sizeof(uint32_t), &p) != SK_OK) _exit(13);
  uint32_t *buf = static_cast<uint32_t *>(p), n = kN, seed = 4242;
  void *args[] = {&buf, &n, &seed};
  if (sk_launch_kernel(fill, 2, args, nullptr) != SK_OK || sk_stream_synchronize(nullptr) != SK_OK) _exit(14);
  _exit(first_wrong(buf, kN, seed) == kN ? 0 : 15);
}

// Forks; the parent waits for the child (killing it after a minute) and checks its status.
void fork_and_check(const std::vector<uint8_t> &bytes) {
#if defined(__SANITIZE_ADDRESS__)
  // GCC 12's ASan allocator keeps a lock another thread held at the fork locked in the child, whose
  // first allocation then hangs (seen in the core threads' pthread_getattr_np); other builds check it.
  (void)bytes;
  return;
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) forked_child(bytes);
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  bool ended = false;
  while (!ended && Clock::now() < deadline) {
    ended = waitpid(pid, &status, WNOHANG) == pid;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!ended) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(ended) << "the forked child hung";
  ASSERT_TRUE(WIFEXITED(status)) << "the forked child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the forked child failed at step " << WEXITSTATUS(status);
}

struct Soak {
  sk_device *dev = nullptr;
  sk_module *chain = nullptr;
  sk_kernel *fill = nullptr, *axpb = nullptr;
  std::vector<uint8_t> chain_bytes;
  std::vector<std::vector<uint8_t>> variants;  // capi_chain of every compiler build: distinct bytes
  long rounds = 0;
  Clock::time_point deadline;
  bool more(long i) const { return i == 0 || (i < rounds && Clock::now() < deadline); }
};

// A fused fill + axpb on buffer a, rebound before every launch, against the same two kernels
// launched unfused on buffer b: both must hold the chain's values for that round's arguments.
void chain_thread(Soak &s, int t, long *done) {
  uint32_t *a = alloc(s.dev), *b = alloc(s.dev), n = kN, seed = 0;
  int32_t mul = 1, add = t;
  void *fill_a[] = {&a, &n, &seed}, *axpb_a[] = {&a, &n, &mul, &add};
  void *fill_b[] = {&b, &n, &seed}, *axpb_b[] = {&b, &n, &mul, &add};
  sk_stream *own = nullptr;
  ASSERT_SK(sk_stream_create(s.dev, &own));
  sk_scope *scope = nullptr;
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_scope_begin(s.dev, ("chain" + std::to_string(t)).c_str(), t % 2 ? "early-start=1" : nullptr, &scope));
  ASSERT_SK(sk_add_kernel(scope, s.fill, 2, fill_a, nullptr));
  ASSERT_SK(sk_add_kernel(scope, s.axpb, 3, axpb_a, nullptr));
  ASSERT_SK(sk_finalize(scope, &sk));
  long i = 0;
  for (; s.more(i); ++i) {
    seed = static_cast<uint32_t>(t) << 24 | static_cast<uint32_t>(i);
    mul = 3 + static_cast<int32_t>(i % 5);
    ASSERT_SK(sk_superkernel_set_arg(sk, 0, 2, &seed));
    ASSERT_SK(sk_superkernel_set_arg(sk, 1, 2, &mul));
    sk_stream *stream = i % 3 == 0 ? nullptr : own;  // every third on the shared default stream
    ASSERT_SK(sk_launch(sk, stream));
    ASSERT_SK(sk_launch_kernel(s.fill, 1 + i % 3, fill_b, own));
    ASSERT_SK(sk_launch_kernel(s.axpb, 1 + i % 2, axpb_b, own));
    ASSERT_SK(sk_stream_synchronize(own));
    if (!stream) ASSERT_SK(sk_stream_synchronize(nullptr));
    const uint32_t wa = first_wrong(a, kN, seed, mul, add), wb = first_wrong(b, kN, seed, mul, add);
    ASSERT_EQ(wa, kN) << "thread " << t << " round " << i << ": fused a[" << wa << "] = " << a[wa % kN];
    ASSERT_EQ(wb, kN) << "thread " << t << " round " << i << ": unfused b[" << wb << "] = " << b[wb % kN];
    if (t == 0 && i + 1 == kForkAt) fork_and_check(s.chain_bytes);
  }
  if (t == 0 && i < kForkAt) fork_and_check(s.chain_bytes);
  *done = i;
  sk_superkernel_destroy(sk);
  sk_stream_destroy(own);
  sk_mem_free(s.dev, a);
  sk_mem_free(s.dev, b);
}

// Loads a variant of capi_chain, launches its fill unfused and as a super kernel, and unloads
// it and destroys the super kernel with their launches still queued.
void churn_thread(Soak &s, int t, long *done) {
  uint32_t *a = alloc(s.dev), *b = alloc(s.dev), n = kN, seed = 0;
  void *args_a[] = {&a, &n, &seed}, *args_b[] = {&b, &n, &seed};
  sk_stream *own = nullptr;
  ASSERT_SK(sk_stream_create(s.dev, &own));
  long i = 0;
  for (; s.more(i); ++i) {
    const std::vector<uint8_t> &bytes = s.variants[(t + i) % s.variants.size()];
    seed = 0x5000000u + static_cast<uint32_t>(t) * 0x100000u + static_cast<uint32_t>(i);
    sk_module *mod = nullptr;
    sk_kernel *fill = nullptr;
    ASSERT_SK(sk_module_load(s.dev, bytes.data(), bytes.size(), &mod));
    ASSERT_SK(sk_module_get_kernel(mod, "capi_fill", &fill));
    sk_scope *scope = nullptr;
    sk_superkernel *sk = nullptr;
    ASSERT_SK(sk_scope_begin(s.dev, "churn", nullptr, &scope));
    ASSERT_SK(sk_add_kernel(scope, fill, 2, args_b, nullptr));
    ASSERT_SK(sk_finalize(scope, &sk));
    ASSERT_SK(sk_launch_kernel(fill, 1 + i % 4, args_a, own));
    ASSERT_SK(sk_launch(sk, own));
    sk_superkernel_destroy(sk);  // waits for its launch
    sk_module_unload(mod);       // the queued unfused launch holds its kernel
    ASSERT_SK(sk_stream_synchronize(own));
    const uint32_t wa = first_wrong(a, kN, seed), wb = first_wrong(b, kN, seed);
    ASSERT_EQ(wa, kN) << "thread " << t << " round " << i << ": unfused a[" << wa << "] = " << a[wa % kN];
    ASSERT_EQ(wb, kN) << "thread " << t << " round " << i << ": fused b[" << wb << "] = " << b[wb % kN];
  }
  *done = i;
  sk_stream_destroy(own);
  sk_mem_free(s.dev, a);
  sk_mem_free(s.dev, b);
}

TEST(Soak, ThreadsLaunchRebindChurnModulesAndFork) {
#if defined(SK_TEST_EMULATED)
  GTEST_SKIP() << "qemu-user cannot start threads in the fork child of a threaded process";
#endif
  Soak s;
  s.rounds = env_or("SK_SOAK_ITERATIONS", 10000);
  s.deadline = Clock::now() + std::chrono::seconds(env_or("SK_SOAK_SECONDS", 10));
  ASSERT_SK(sk_device_open("host:cores=2", &s.dev));
  s.chain_bytes = sk::test::read_bytes(sk::test::kernel_path("gcc-O2-pie", "capi_chain"));
  for (const std::string &v : sk::test::kernel_variants())
    s.variants.push_back(sk::test::read_bytes(sk::test::kernel_path(v, "capi_chain")));
  ASSERT_FALSE(s.variants.empty());
  ASSERT_SK(sk_module_load(s.dev, s.chain_bytes.data(), s.chain_bytes.size(), &s.chain));
  ASSERT_SK(sk_module_get_kernel(s.chain, "capi_fill", &s.fill));
  ASSERT_SK(sk_module_get_kernel(s.chain, "capi_axpb", &s.axpb));

  // The shared super kernel: fill on 8 blocks into one of two buffers, rebound by one thread
  // while another gives each launch a seed of its own and launches: every launch fills all of
  // one buffer with its seed and none of the other.
  uint32_t *bufs[2] = {alloc(s.dev), alloc(s.dev)}, *out = bufs[0], n = kN, seed = 0;
  void *shared_args[] = {&out, &n, &seed};
  sk_scope *scope = nullptr;
  sk_superkernel *shared = nullptr;
  ASSERT_SK(sk_scope_begin(s.dev, "shared", nullptr, &scope));
  ASSERT_SK(sk_add_kernel(scope, s.fill, 8, shared_args, nullptr));
  ASSERT_SK(sk_finalize(scope, &shared));
  std::atomic<bool> launcher_done{false};

  std::vector<long> done(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kChainThreads; ++t) threads.emplace_back(chain_thread, std::ref(s), t, &done[t]);
  for (int t = kChainThreads; t < kChainThreads + kChurnThreads; ++t)
    threads.emplace_back(churn_thread, std::ref(s), t, &done[t]);
  threads.emplace_back([&] {  // the rebinder
    long i = 0;
    for (; !launcher_done.load(std::memory_order_relaxed); ++i) {
      uint32_t *target = bufs[i % 2];
      ASSERT_SK(sk_superkernel_set_arg(shared, 0, 0, &target));
    }
    done[6] = i;
  });
  threads.emplace_back([&] {  // the launcher
    struct Stop {             // the rebinder stops when this thread does, even at a failed check
      std::atomic<bool> &flag;
      ~Stop() { flag.store(true); }
    } stop{launcher_done};
    sk_stream *stream = nullptr;
    ASSERT_SK(sk_stream_create(s.dev, &stream));
    long i = 0;
    for (; s.more(i); ++i) {
      const uint32_t own_seed = 0x9E3779B9u * static_cast<uint32_t>(i + 1);
      ASSERT_SK(sk_superkernel_set_arg(shared, 0, 2, &own_seed));
      ASSERT_SK(sk_launch(shared, stream));
      ASSERT_SK(sk_stream_synchronize(stream));
      const int hit = bufs[0][0] == own_seed ? 0 : 1;  // element 0 is the seed itself
      const uint32_t wrong = first_wrong(bufs[hit], kN, own_seed);
      ASSERT_EQ(wrong, kN) << "shared launch " << i << ": buffer " << hit << "[" << wrong << "] lacks its seed";
      for (uint32_t e = 0; e < kN; ++e)
        ASSERT_NE(bufs[1 - hit][e], e * kHash + own_seed)
            << "shared launch " << i << " was torn: element " << e << " went to buffer " << 1 - hit;
    }
    done[7] = i;
    sk_stream_destroy(stream);
  });
  for (std::thread &th : threads) th.join();

  long total = 0;
  for (size_t t = 0; t < done.size(); ++t) {
    EXPECT_GT(done[t], 0) << "thread " << t << " did not finish a round";
    total += done[t];
  }
  std::printf(
      "soak: %ld rounds in all (chain threads %ld %ld %ld %ld, churn %ld %ld, rebinds %ld, shared launches %ld)\n",
      total, done[0], done[1], done[2], done[3], done[4], done[5], done[6], done[7]);
  sk_superkernel_destroy(shared);
  for (uint32_t *b : bufs) sk_mem_free(s.dev, b);
  sk_module_unload(s.chain);
  sk_device_close(s.dev);
}

}  // namespace
