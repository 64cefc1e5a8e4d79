// Block-local edges: a chain of 256 element-wise kernels (axpy, y = a x + y, each block on its
// own range) fused with a block-local edge between every two kernels, against the same chain
// fused with a barrier per kernel and launched unfused; the outputs are checked equal first.
// Each block's range is whole cache lines of 64-byte aligned buffers: cores writing the two
// halves of one line at every kernel would pay a line transfer per kernel, about what the
// barrier the edge saves costs.
#include <cstdio>
#include <cstring>
#include <vector>

#include "measure.hpp"
#include "scenarios.hpp"

namespace bench {
namespace {

constexpr size_t kKernels = 256;

struct AxpyChain {
  sk_device *dev = nullptr;
  sk_kernel *axpy = nullptr;
  uint32_t block_dim = 1, n = 0;
  float *x = nullptr, *y = nullptr;  // sk_mem_alloc: 64-byte aligned
  std::vector<uint64_t> slots;       // per kernel: x, y, a, n
  std::vector<void *> args;
  sk_superkernel *block_local = nullptr, *barrier = nullptr;

  AxpyChain(sk_device *d, sk_kernel *k, uint32_t blocks, uint32_t floats)
      : dev(d), axpy(k), block_dim(blocks), n(floats) {
    void *mx = nullptr, *my = nullptr;
    if (sk_ok(sk_mem_alloc(dev, n * sizeof(float), &mx), "sk_mem_alloc")) x = static_cast<float *>(mx);
    if (sk_ok(sk_mem_alloc(dev, n * sizeof(float), &my), "sk_mem_alloc")) y = static_cast<float *>(my);
    slots.resize(4 * kKernels);
    for (size_t i = 0; i < kKernels; ++i) {
      // a alternates in sign so that y stays bounded.
      const float a = (i % 2 ? -0.5f : 0.5f) + 0.001f * float(i % 7);
      std::memcpy(&slots[4 * i], &x, sizeof x);
      std::memcpy(&slots[4 * i + 1], &y, sizeof y);
      std::memcpy(&slots[4 * i + 2], &a, sizeof a);
      std::memcpy(&slots[4 * i + 3], &n, sizeof n);
    }
    for (uint64_t &s : slots) args.push_back(&s);
  }
  ~AxpyChain() {
    sk_superkernel_destroy(block_local);
    sk_superkernel_destroy(barrier);
    sk_mem_free(dev, x);
    sk_mem_free(dev, y);
  }
  sk_superkernel *fuse(uint32_t flags, const char *name) {
    sk_scope *scope = nullptr;
    sk_superkernel *sk = nullptr;
    if (!sk_ok(sk_scope_begin(dev, name, nullptr, &scope), name)) return nullptr;
    for (size_t i = 0; i < kKernels; ++i) {
      sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
      o.flags = i ? flags : 0;
      if (!sk_ok(sk_add_kernel(scope, axpy, block_dim, &args[4 * i], &o), name)) {
        sk_scope_abort(scope);
        return nullptr;
      }
    }
    return sk_ok(sk_finalize(scope, &sk), name) ? sk : nullptr;
  }
  void reset() {
    for (uint32_t i = 0; i < n; ++i) x[i] = float(i % 97) * 0.01f, y[i] = float(i % 13) * 0.1f;
  }
  void run(sk_superkernel *sk) {
    sk_launch(sk, nullptr);
    sk_stream_synchronize(nullptr);
  }
  void run_unfused() {
    for (size_t i = 0; i < kKernels; ++i) sk_launch_kernel(axpy, block_dim, &args[4 * i], nullptr);
    sk_stream_synchronize(nullptr);
  }
  // Every method once from the same state: the outputs must be equal bit for bit.
  bool same_results(const char *what) {
    std::vector<float> ref(n);
    reset();
    run_unfused();
    std::memcpy(ref.data(), y, n * sizeof(float));
    reset();
    run(block_local);
    const bool local_ok = std::memcmp(ref.data(), y, n * sizeof(float)) == 0;
    reset();
    run(barrier);
    const bool barrier_ok = std::memcmp(ref.data(), y, n * sizeof(float)) == 0;
    if (!local_ok || !barrier_ok)
      std::fprintf(stderr, "sk-bench: %s: outputs differ (block-local %s, barrier %s)\n", what,
                   local_ok ? "ok" : "DIFFERS", barrier_ok ? "ok" : "DIFFERS");
    return local_ok && barrier_ok;
  }
};

}  // namespace

bool run_block_local(const Options &opt, uint32_t cores, Report &report) {
  sk_device *dev = open_host(opt, cores);
  sk_module *ops = nullptr;
  sk_kernel *axpy = nullptr;
  if (!dev) return false;
  bool ok = load_kernel(dev, "bench_kernels", "bench_axpy", &ops, &axpy);
  std::printf("\nblock-local edges on %u cores: %zu axpy kernels (ns per kernel)\n", cores, kKernels);
  std::printf("%-22s %11s %9s %9s | %15s %17s\n", "floats per block", "block-local", "barrier", "unfused",
              "barrier/local", "unfused/local");
  for (uint32_t per_block : {32u, 512u, 8192u}) {
    if (!ok) break;
    AxpyChain c(dev, axpy, cores, per_block * cores);  // block_dim = cores: each block on whole lines
    ok = c.x && c.y;
    c.block_local = ok ? c.fuse(SK_KERNEL_FLAG_BLOCK_LOCAL, "axpy256_block_local") : nullptr;
    c.barrier = ok ? c.fuse(0, "axpy256_barrier") : nullptr;
    ok = c.block_local && c.barrier && c.same_results("block-local axpy chain");
    if (!ok) break;
    std::vector<Method> methods = {
        {"block-local", [&] { c.run(c.block_local); }},
        {"barrier", [&] { c.run(c.barrier); }},
        {"unfused", [&] { c.run_unfused(); }},
    };
    Row r = measure(methods, kKernels, opt.rounds());
    const double *t = r.median_ns.data();
    std::printf("%-22u %11.0f %9.0f %9.0f | %15.2f %17.2f\n", per_block, t[0], t[1], t[2], t[1] / t[0], t[2] / t[0]);
    report.add("block-local axpy x256", {{"cores", cores},
                                         {"floats_per_block", double(per_block)},
                                         {"block_local_ns", t[0]},
                                         {"barrier_ns", t[1]},
                                         {"unfused_ns", t[2]},
                                         {"barrier_over_block_local", t[1] / t[0]},
                                         {"unfused_over_block_local", t[2] / t[0]}});
  }
  sk_module_unload(ops);
  sk_device_close(dev);
  return ok;
}

}  // namespace bench
