// The decode loop: T steps of a K-kernel super kernel, as an engine runs them. Unfused (K
// sk_launch_kernel and a synchronize per step), one sk_launch and a synchronize per step (the
// host reads each token), T sk_launch queued then one synchronize, and one sk_launch_repeat of T
// and one synchronize (the loop on the device). Times are per step.
#include <cstdio>
#include <vector>

#include "measure.hpp"
#include "scenarios.hpp"

namespace bench {

bool run_repeat(const Options &opt, uint32_t cores, Report &report) {
  constexpr uint32_t kSteps = 16;
  sk_device *dev = open_host(opt, cores);
  sk_module *mod = nullptr;
  sk_kernel *empty = nullptr;
  if (!dev) return false;
  bool ok = load_kernel(dev, "bench_kernels", "bench_empty", &mod, &empty);
  // A stop flag nobody sets: what an engine passes, read after every step.
  uint32_t *eos = nullptr;
  ok = ok && sk_ok(sk_mem_alloc(dev, sizeof *eos, reinterpret_cast<void **>(&eos)), "sk_mem_alloc");
  if (eos) *eos = 0;
  std::printf("\ndecode loop on %u cores: T = %u steps of K empty kernels, block_dim %u (ns per step)\n", cores,
              kSteps, cores);
  std::printf("%6s %9s %9s %9s %9s | %13s %13s %13s\n", "K", "unfused", "launch", "queued", "repeat", "unfused/rep",
              "launch/rep", "queued/rep");
  for (size_t k : {size_t{16}, size_t{256}}) {
    if (!ok) break;
    sk_superkernel *step = chain_of(dev, empty, k, cores, "decode-loop");
    if (!(ok = step != nullptr)) break;
    std::vector<Method> methods =
        {
            {"unfused",
             [&] {
      for (uint32_t s = 0; s < kSteps; ++s) {
        for (size_t i = 0; i < k; ++i) sk_launch_kernel(empty, cores, nullptr, nullptr);
        sk_stream_synchronize(nullptr);
      }
             }},
            {"launch",
             [&] {
      for (uint32_t s = 0; s < kSteps; ++s) {
        sk_launch(step, nullptr);
        sk_stream_synchronize(nullptr);
      }
             }},
                        {"queued",
                         [&] {
      for (uint32_t s = 0; s < kSteps; ++s) sk_launch(step, nullptr);
      sk_stream_synchronize(nullptr);
                         }},
        {"repeat",
         [&] {
      sk_launch_repeat(step, kSteps, eos, nullptr);
      sk_stream_synchronize(nullptr);
         }},
        };
    Row r = measure(methods, kSteps, opt.rounds());
    ok = sk_ok(sk_stream_synchronize(nullptr), "decode loop") && *eos == 0;
    const double *t = r.median_ns.data();
    std::printf("%6zu %9.0f %9.0f %9.0f %9.0f | %13.2f %13.2f %13.2f\n", k, t[0], t[1], t[2], t[3], t[0] / t[3],
                t[1] / t[3], t[2] / t[3]);
    report.add("decode_loop", {{"cores", cores},
                               {"kernels", double(k)},
                               {"steps", kSteps},
                               {"unfused_ns", t[0]},
                               {"launch_ns", t[1]},
                               {"queued_ns", t[2]},
                               {"repeat_ns", t[3]},
                               {"unfused_over_repeat", t[0] / t[3]},
                               {"launch_over_repeat", t[1] / t[3]},
                               {"queued_over_repeat", t[2] / t[3]}});
    sk_superkernel_destroy(step);
  }
  sk_mem_free(dev, eos);
  sk_module_unload(mod);
  sk_device_close(dev);
  return ok;
}

}  // namespace bench
