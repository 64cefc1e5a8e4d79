// The overhead chain: K empty kernels on `cores` cores, six ways.
#include <cstdio>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "measure.hpp"
#include "scenarios.hpp"

extern "C" void bench_empty(void);

namespace bench {
namespace {

void thunk_empty(const void *) { bench_empty(); }

// Whether the device counts `sk`'s releases by a combining tree (explain's "execution").
bool uses_tree(sk_superkernel *sk) { return explain_of(sk).find("\"barrier\":\"tree\"") != std::string::npos; }

}  // namespace

bool run_overhead(const Options &opt, uint32_t cores, Report &report) {
  sk_device *dev = open_host(opt, cores);
  sk_module *mod = nullptr;
  sk_kernel *empty = nullptr, *overlap = nullptr;
  if (!dev) return false;
  bool ok = load_kernel(dev, "bench_kernels", "bench_empty", &mod, &empty) &&
            sk_ok(sk_module_get_kernel(mod, "bench_empty_overlap", &overlap), "bench_empty_overlap");
  sk_device *central_dev = nullptr;
  sk_module *central_mod = nullptr;
  sk_kernel *central_empty = nullptr;
  ConditionVariablePool pool(cores);
  SpinBarrierFloor floor(cores);
  std::printf("\noverhead chain on %u cores: K empty kernels, block_dim %u (ns per kernel)\n", cores, cores);
  std::printf("%6s %8s %8s %8s %8s %8s %8s | %11s %9s %10s %13s\n", "K", "fused", "overlap", "unfused",
              "openmp", "cv-pool", "floor", "fused/floor", "omp/fused", "pool/fused", "unfused/fused");
  for (size_t k : {size_t{16}, size_t{256}, size_t{4096}}) {
    if (!ok) break;
    sk_superkernel *fused = chain_of(dev, empty, k, cores, "overhead");
    sk_superkernel *fused_overlap = chain_of(dev, overlap, k, cores, "overhead-overlap");
    // Where the device counts the releases by a combining tree (above 8 cores), the same chain
    // on a device forced to one central counter shows what the tree buys.
    const bool tree = fused && uses_tree(fused);
    if (tree && !central_dev) {
      const std::string central = "barrier_group=" + std::to_string(cores);
      ok = (central_dev = open_host(opt, cores, central.c_str())) != nullptr &&
           load_kernel(central_dev, "bench_kernels", "bench_empty", &central_mod, &central_empty);
    }
    sk_superkernel *fused_central =
        tree && central_empty ? chain_of(central_dev, central_empty, k, cores, "overhead-central") : nullptr;
    ok = ok && fused && fused_overlap && (!tree || fused_central);
    std::vector<Step> steps(k, Step{thunk_empty, nullptr, cores});
    std::vector<Method> methods = {
        {"fused", [&] { sk_launch(fused, nullptr); sk_stream_synchronize(nullptr); }},
        {"overlap", [&] { sk_launch(fused_overlap, nullptr); sk_stream_synchronize(nullptr); }},
        {"unfused",
         [&] {
           for (size_t i = 0; i < k; ++i) sk_launch_kernel(empty, cores, nullptr, nullptr);
           sk_stream_synchronize(nullptr);
         }},
        {"openmp", [&] { openmp_run(steps.data(), k, cores); }, std::chrono::milliseconds(20)},
        {"cv-pool", [&] { pool.run(steps.data(), k); }},
        {"floor", [&] { floor.run(k); }},
    };
    if (tree)
      methods.push_back({"central", [&] { sk_launch(fused_central, nullptr); sk_stream_synchronize(nullptr); }});
    if (ok) {
      Row r = measure(methods, k, opt.rounds());
      ok = sk_ok(sk_stream_synchronize(nullptr), "overhead chain");
      const double *t = r.median_ns.data();
      std::printf("%6zu %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f | %11.2f %9.1f %10.1f %13.1f\n", k, t[0], t[1], t[2],
                  t[3], t[4], t[5], t[0] / t[5], t[3] / t[0], t[4] / t[0], t[2] / t[0]);
      report.add("overhead", {{"cores", cores}, {"kernels", double(k)}, {"fused_ns", t[0]}, {"overlap_ns", t[1]},
                              {"unfused_ns", t[2]}, {"openmp_ns", t[3]}, {"cv_pool_ns", t[4]}, {"floor_ns", t[5]},
                              {"fused_over_floor", t[0] / t[5]}, {"openmp_over_fused", t[3] / t[0]},
                              {"pool_over_fused", t[4] / t[0]}, {"unfused_over_fused", t[2] / t[0]}});
      if (tree) {
        std::printf("%6s the same chain with one central release counter: %.0f ns (central/tree %.2f)\n", "", t[6],
                    t[6] / t[0]);
        report.add("overhead_central", {{"cores", cores}, {"kernels", double(k)}, {"central_ns", t[6]},
                                        {"tree_ns", t[0]}, {"central_over_tree", t[6] / t[0]}});
      }
    }
    sk_superkernel_destroy(fused_central);
    sk_superkernel_destroy(fused);
    sk_superkernel_destroy(fused_overlap);
  }
  sk_module_unload(mod);
  sk_device_close(dev);
  if (central_mod) sk_module_unload(central_mod);
  if (central_dev) sk_device_close(central_dev);
  return ok;
}

}  // namespace bench
