// Core 0 on the synchronizing thread (device key core0=caller) against core 0 on a thread of its
// own (core0=thread, which lets sk_stream_synchronize report a kernel that never returns on
// core 0): the same steps on two devices, each step launched and synchronized on its own, as a
// decode loop that reads every token does. The thread's cost is the hand-over at both ends of a
// step (the launch wakes core 0's thread or finds it spinning; the host waits for core 0's
// completion instead of seeing it in its own cache); the row gives it per step and as a share
// of the caller's step. Outputs of the decode-shaped step are checked equal first.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "decode_step.hpp"
#include "measure.hpp"
#include "scenarios.hpp"

namespace bench {
namespace {

void run(sk_superkernel *sk) {
  sk_launch(sk, nullptr);
  sk_stream_synchronize(nullptr);
}

// Long enough for the other device's idle cores to end their spin (spin_max_us, 1 ms by
// default) before a sample of this one starts.
constexpr std::chrono::milliseconds kCooldown{3};

}  // namespace

bool run_core0(const Options &opt, uint32_t cores, Report &report) {
  sk_device *dev[2] = {open_host(opt, cores, "core0=caller"), open_host(opt, cores, "core0=thread")};
  sk_module *mods[2][2] = {};
  sk_kernel *empty[2] = {}, *matvec[2] = {};
  bool ok = dev[0] && dev[1];
  for (int d = 0; d < 2 && ok; ++d)
    ok = load_kernel(dev[d], "bench_kernels", "bench_empty", &mods[d][0], &empty[d]) &&
         load_kernel(dev[d], "bench_mixed", "bench_matvec", &mods[d][1], &matvec[d]);
  DecodeStep st[2];
  if (ok) {
    std::printf("\ncore 0 on the caller or on its own thread, %u cores: one sk_launch + sk_stream_synchronize per "
                "step (us per step)\n",
                cores);
    std::printf("%-26s %6s %9s %9s | %13s %9s %11s\n", "step", "K", "caller", "thread", "thread/caller",
                "cost us", "cost/step");
  }
  struct Case {
    const char *name;
    int decode_mode;  // -1: empty kernels, block_dim = cores
    size_t kernels;
  };
  const Case cases[] = {{"empty", -1, 16},
                        {"empty", -1, 256},
                        {"q/k/v x30, one stream", 0, DecodeStep::kKernels},
                        {"q/k/v x30, placed", 2, DecodeStep::kKernels}};
  for (const Case &c : cases) {
    if (!ok) break;
    sk_superkernel *sk[2] = {};
    for (int d = 0; d < 2 && ok; ++d)
      ok = (sk[d] = c.decode_mode < 0 ? chain_of(dev[d], empty[d], c.kernels, cores, "core0-step")
                                      : build_decode_step(dev[d], matvec[d], st[d], c.decode_mode)) != nullptr;
    if (ok && c.decode_mode >= 0) {
      for (int d = 0; d < 2; ++d) {
        st[d].reset();
        run(sk[d]);
      }
      if (std::memcmp(st[0].y.data(), st[1].y.data(), st[0].y.size() * sizeof(float)) != 0) {
        std::fprintf(stderr, "sk-bench: core-0 row: %s: core0=thread's outputs differ from core0=caller's\n", c.name);
        ok = false;
      }
    }
    if (ok) {
      std::vector<Method> methods = {{"caller", [&] { run(sk[0]); }, kCooldown},
                                     {"thread", [&] { run(sk[1]); }, kCooldown}};
      Row r = measure(methods, 1, opt.rounds());
      ok = sk_ok(sk_stream_synchronize(nullptr), "core-0 row");
      const double caller = r.median_ns[0] / 1e3, thread = r.median_ns[1] / 1e3;
      std::printf("%-26s %6zu %9.2f %9.2f | %13.2f %9.2f %10.1f%%\n", c.name, c.kernels, caller, thread,
                  thread / caller, thread - caller, 100.0 * (thread - caller) / caller);
      report.add("core0", {{"cores", cores},
                           {"kernels", double(c.kernels)},
                           {"decode_shaped", c.decode_mode >= 0 ? 1.0 : 0.0},
                           {"caller_us", caller},
                           {"thread_us", thread},
                           {"thread_over_caller", thread / caller}});
    }
    for (sk_superkernel *s : sk) sk_superkernel_destroy(s);
  }
  for (int d = 0; d < 2; ++d) {
    for (sk_module *m : mods[d]) sk_module_unload(m);
    sk_device_close(dev[d]);
  }
  return ok;
}

}  // namespace bench
