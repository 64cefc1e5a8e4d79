// The decode loop: an engine launches its step, waits for it, then works on the host for a
// while (sampling, scheduling, copying the next token in) before it launches the next one.
// The overhead table times back-to-back launches, whose threads never go idle; here every
// step follows a host gap of G us, long enough at some point for idle cores to sleep, so that
// the step pays their wake-up. Per step of K = 256 empty kernels, the time each method adds
// to the gap: the super kernel (the default device, whose idle spin adapts to the gaps, and
// one with a fixed spin, spin_max_us=0), unfused launches, OpenMP regions; and the CPU time
// the method's other threads burn per step, gap included (what spinning through it costs).
// Then the super kernel launched before the host's work: how much of it is left to wait for.
#include <time.h>

#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "baselines.hpp"
#include "measure.hpp"
#include "scenarios.hpp"

extern "C" void bench_empty(void);

namespace bench {
namespace {

void thunk_empty(const void *) { bench_empty(); }

// The host's own work between steps: a busy thread, as sampling is (a sleeping one would let
// the scheduler idle the CPU, which a real engine's host thread does not).
void host_work(double us) {
  const double until = now_ns() + us * 1e3;
  while (now_ns() < until) {
  }
}

double cpu_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// CPU time of every thread but this one per run of `run`, in us, over `ms` of runs: the
// process clock adds a thread running on another CPU only at its ticks and switches, so the
// window must span many of them.
double other_threads_cpu_us(const std::function<void()> &run, double ms) {
  run();
  const double p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns();
  int runs = 0;
  do {
    run();
    ++runs;
  } while (now_ns() - w0 < ms * 1e6);
  const double p1 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), t1 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  return ((p1 - p0) - (t1 - t0)) / runs / 1e3;
}

}  // namespace

bool run_host_gaps(const Options &opt, uint32_t cores, Report &report) {
  constexpr size_t kKernels = 256;
  sk_device *dev = open_host(opt, cores), *fixed_dev = open_host(opt, cores, "spin_max_us=0");
  sk_module *mod = nullptr, *fixed_mod = nullptr;
  sk_kernel *empty = nullptr, *fixed_empty = nullptr;
  if (!dev || !fixed_dev) {
    sk_device_close(dev);
    sk_device_close(fixed_dev);
    return false;
  }
  bool ok = load_kernel(dev, "bench_kernels", "bench_empty", &mod, &empty) &&
            load_kernel(fixed_dev, "bench_kernels", "bench_empty", &fixed_mod, &fixed_empty);
  sk_superkernel *fused = ok ? chain_of(dev, empty, kKernels, cores, "host-gaps") : nullptr;
  sk_superkernel *fixed = ok ? chain_of(fixed_dev, fixed_empty, kKernels, cores, "host-gaps-fixed") : nullptr;
  ok = ok && fused && fixed;
  std::vector<Step> steps(kKernels, Step{thunk_empty, nullptr, cores});
  double step_us = 0;  // fused, back to back
  std::printf("\nhost gaps on %u cores: a step of %zu empty kernels after G us of host work (us per step, gap excluded;\n"
              "cpu: us of CPU the other threads use per step, gap included)\n",
              cores, kKernels);
  std::printf("%6s %7s %7s %7s %7s | %11s %13s %9s | %9s %9s %10s\n", "G (us)", "fused", "fixed", "unfused",
              "openmp", "fixed/fused", "unfused/fused", "omp/fused", "cpu fused", "cpu fixed", "cpu openmp");
  for (double gap : {0.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0}) {
    if (!ok) break;
    // Cool-downs: a device's idle cores may spin up to 1 ms after the last step (spin_max_us),
    // OpenMP's for milliseconds; the next method must not be timed beside them.
    std::vector<Method> methods = {
        {"fused",
         [&] {
           host_work(gap);
           sk_launch(fused, nullptr);
           sk_stream_synchronize(nullptr);
         },
         std::chrono::milliseconds(3)},
        {"fixed",
         [&] {
           host_work(gap);
           sk_launch(fixed, nullptr);
           sk_stream_synchronize(nullptr);
         }},
        {"unfused",
         [&] {
           host_work(gap);
           for (size_t i = 0; i < kKernels; ++i) sk_launch_kernel(empty, cores, nullptr, nullptr);
           sk_stream_synchronize(nullptr);
         },
         std::chrono::milliseconds(3)},
        {"openmp",
         [&] {
           host_work(gap);
           openmp_run(steps.data(), kKernels, cores);
         },
         std::chrono::milliseconds(20)},
    };
    Row r = measure(methods, 1, opt.rounds());
    double t[4], cpu[4];
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (size_t i = 0; i < 4; ++i) {
      t[i] = (r.median_ns[i] - gap * 1e3) / 1e3;
      cpu[i] = other_threads_cpu_us(methods[i].run, opt.quick ? 50 : 200);
      std::this_thread::sleep_for(methods[i].cooldown);
    }
    ok = sk_ok(sk_stream_synchronize(nullptr), "host gaps");
    if (gap == 0) step_us = t[0];
    std::printf("%6.0f %7.1f %7.1f %7.1f %7.1f | %11.1f %13.1f %9.1f | %9.0f %9.0f %10.0f\n", gap, t[0], t[1], t[2],
                t[3], t[1] / t[0], t[2] / t[0], t[3] / t[0], cpu[0], cpu[1], cpu[3]);
    report.add("host_gaps", {{"cores", cores}, {"kernels", double(kKernels)}, {"gap_us", gap}, {"fused_us", t[0]},
                             {"fixed_spin_us", t[1]}, {"unfused_us", t[2]}, {"openmp_us", t[3]},
                             {"fixed_over_fused", t[1] / t[0]}, {"unfused_over_fused", t[2] / t[0]},
                             {"openmp_over_fused", t[3] / t[0]}, {"fused_cpu_us", cpu[0]},
                             {"fixed_cpu_us", cpu[1]}, {"unfused_cpu_us", cpu[2]}, {"openmp_cpu_us", cpu[3]}});
  }
  // Launched ahead of the host's work (sk_launch; G us of host work; sk_stream_synchronize):
  // the step may run during the gap, and synchronize then only sees it done. The host busy
  // (its CPU taken) or asleep (blocked on something else, its CPU free).
  if (ok) {
    std::printf("launched before G us of host work, then synchronized: us synchronize still waits (median; step %.1f)\n",
                step_us);
    std::printf("%6s %10s %10s\n", "G (us)", "host busy", "host asleep");
  }
  for (double gap : {20.0, 100.0, 500.0, 2000.0}) {
    if (!ok) break;
    double wait[2];
    for (int asleep = 0; asleep < 2; ++asleep) {
      std::vector<double> waits;
      for (int i = 0; i < (opt.quick ? 50 : 200); ++i) {
        sk_launch(fused, nullptr);
        if (asleep)
          std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(gap * 1e3)));
        else
          host_work(gap);
        const double t0 = now_ns();
        ok &= sk_ok(sk_stream_synchronize(nullptr), "host gaps (launched ahead)");
        waits.push_back((now_ns() - t0) / 1e3);
      }
      std::nth_element(waits.begin(), waits.begin() + waits.size() / 2, waits.end());
      wait[asleep] = waits[waits.size() / 2];
    }
    std::printf("%6.0f %10.1f %10.1f\n", gap, wait[0], wait[1]);
    report.add("launched_ahead", {{"cores", cores}, {"kernels", double(kKernels)}, {"gap_us", gap},
                                  {"sync_wait_busy_host_us", wait[0]}, {"sync_wait_sleeping_host_us", wait[1]}});
  }
  sk_superkernel_destroy(fused);
  sk_superkernel_destroy(fixed);
  if (mod) sk_module_unload(mod);
  if (fixed_mod) sk_module_unload(fixed_mod);
  sk_device_close(dev);
  sk_device_close(fixed_dev);
  return ok;
}

}  // namespace bench
