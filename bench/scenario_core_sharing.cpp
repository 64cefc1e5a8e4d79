// Core sharing: do the benchmark's two threads sit on one physical core (SMT siblings) or on
// two? A virtual machine's vCPUs move between the host's hardware threads, so the answer can
// change from one second to the next, and the overhead table's floor changes with it: two
// siblings pass a bare barrier through their shared L1 in about 16 ns, two cores in 35 or
// more. Each round asks the question directly and times a fused chain and the floor next to
// the answer, so fused/floor can be read per state.
//
// The question: how much slower one thread runs an ALU loop while the other thread runs one
// too than while it sleeps. Siblings share execution units (about 2x slower); separate cores
// do not (about 1x). The test is made before and after the timed chains; a round whose two
// answers differ changed state in between and is left out. The two threads are the
// scheduler's to place, as the floor's are; on a 2-CPU VM they are the only pair there is.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "baselines.hpp"
#include "measure.hpp"
#include "scenarios.hpp"

namespace bench {
namespace {

constexpr double kSharedSlowdown = 1.5;  // between the ~1.0 of two cores and the ~2.0 of siblings
constexpr size_t kChain = 256;           // kernels per chain, as in the overhead table's middle row

// Four dependent multiply-add chains: the loop is bound by the core's ALUs, not by memory.
// The empty asm takes the values as operands, so the loop runs whether or not anyone reads
// the result.
uint64_t alu_work(uint64_t iterations) {
  uint64_t a = 1, b = 2, c = 3, d = 4;
  for (uint64_t i = 0; i < iterations; ++i) {
    a = a * 3 + b;
    b = b * 5 + c;
    c = c * 7 + d;
    d = d * 11 + a;
    asm volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
  }
  return a + b + c + d;
}

// A second thread that either sleeps or runs alu_work until told to stop.
class AluNeighbour {
 public:
  AluNeighbour() : thread_([this] { loop(); }) {}
  ~AluNeighbour() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      command_ = Command::Quit;
    }
    wake_.notify_all();
    thread_.join();
  }
  // Returns once the neighbour is running its loop.
  void start() {
    running_.store(false);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      command_ = Command::Work;
    }
    wake_.notify_all();
    while (!running_.load()) std::this_thread::yield();
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    command_ = Command::Sleep;
  }

 private:
  enum class Command { Sleep, Work, Quit };
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return command_ != Command::Sleep; });
      if (command_ == Command::Quit) return;
      lock.unlock();
      // Said at every chunk: a start() right after a stop() may find this loop not yet left.
      while (command() == Command::Work) {
        running_.store(true);
        alu_work(2000);
      }
      lock.lock();
    }
  }
  Command command() {
    std::lock_guard<std::mutex> lock(mutex_);
    return command_;
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  Command command_ = Command::Sleep;
  std::atomic<bool> running_{false};
  std::thread thread_;
};

// alu_work's time while the neighbour works, over its time while the neighbour sleeps.
double co_run_slowdown(AluNeighbour &neighbour) {
  constexpr uint64_t kIterations = 200'000;  // about 0.2 ms alone
  std::this_thread::sleep_for(std::chrono::microseconds(100));  // the neighbour's CPU goes idle
  double t0 = now_ns();
  alu_work(kIterations);
  const double alone = now_ns() - t0;
  neighbour.start();
  t0 = now_ns();
  alu_work(kIterations);
  const double shared = now_ns() - t0;
  neighbour.stop();
  return shared / alone;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

struct State {
  const char *name;
  std::vector<double> slowdown, fused, floor, ratio;
};

}  // namespace

bool run_core_sharing(const Options &opt, Report &report) {
  sk_device *dev = open_host(opt, 2);
  sk_module *mod = nullptr;
  sk_kernel *empty = nullptr;
  if (!dev) return false;
  sk_superkernel *fused = nullptr;
  bool ok = load_kernel(dev, "bench_kernels", "bench_empty", &mod, &empty) &&
            (fused = chain_of(dev, empty, kChain, 2, "core-sharing")) != nullptr;
  const int rounds = opt.quick ? 40 : 600;
  State own{"own cores", {}, {}, {}, {}}, shared{"shared core", {}, {}, {}, {}};
  int changed = 0;
  if (ok) {
    AluNeighbour neighbour;
    SpinBarrierFloor floor(2);
    auto per_kernel = [](const std::function<void()> &run) {
      run();  // warm: the cores or workers may have gone to sleep during the ALU test
      std::vector<double> t;
      for (int i = 0; i < 5; ++i) {
        const double t0 = now_ns();
        run();
        t.push_back((now_ns() - t0) / kChain);
      }
      return median(t);
    };
    for (int r = 0; r < rounds && ok; ++r) {
      const double before = co_run_slowdown(neighbour);
      const double f = per_kernel([&] { sk_launch(fused, nullptr); sk_stream_synchronize(nullptr); });
      const double b = per_kernel([&] { floor.run(kChain); });
      const double after = co_run_slowdown(neighbour);
      ok = sk_ok(sk_stream_synchronize(nullptr), "core-sharing chain");
      if ((before >= kSharedSlowdown) != (after >= kSharedSlowdown)) {
        ++changed;
        continue;
      }
      State &s = before >= kSharedSlowdown ? shared : own;
      s.slowdown.push_back((before + after) / 2);
      s.fused.push_back(f);
      s.floor.push_back(b);
      s.ratio.push_back(f / b);
      std::this_thread::sleep_for(std::chrono::milliseconds(opt.quick ? 5 : 20));  // spread over time
    }
  }
  if (ok) {
    std::printf("\ncore sharing on 2 cores: do the two threads share a physical core? (K = %zu; per round, the\n"
                "slowdown of an ALU loop while the other thread runs one; %.1f or more: a shared core)\n",
                kChain, kSharedSlowdown);
    std::printf("%-12s %7s %9s %8s %8s | %11s\n", "state", "rounds", "slowdown", "fused", "floor", "fused/floor");
    for (State *s : {&own, &shared}) {
      if (s->ratio.empty()) {
        std::printf("%-12s %7d   (not seen in this run)\n", s->name, 0);
        continue;
      }
      std::printf("%-12s %7zu %9.2f %8.0f %8.0f | %11.2f\n", s->name, s->ratio.size(), median(s->slowdown),
                  median(s->fused), median(s->floor), median(s->ratio));
      report.add("core_sharing", {{"shared_core", s == &shared ? 1.0 : 0.0}, {"rounds", double(s->ratio.size())},
                                  {"alu_slowdown", median(s->slowdown)}, {"fused_ns", median(s->fused)},
                                  {"floor_ns", median(s->floor)}, {"fused_over_floor", median(s->ratio)}});
    }
    std::printf("(%d of %d rounds changed state between their two tests and are left out; medians per state)\n",
                changed, rounds);
  }
  sk_superkernel_destroy(fused);
  sk_module_unload(mod);
  sk_device_close(dev);
  return ok;
}

}  // namespace bench
