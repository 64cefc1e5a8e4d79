// Small real kernels: 256 axpy kernels on 16 Ki floats, and a mixed norm / mat-vec / softmax
// chain; fused vs unfused vs OpenMP, with every method's output checked equal first.
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "baselines.hpp"
#include "measure.hpp"
#include "scenarios.hpp"

extern "C" {
void bench_axpy(const float *x, float *y, float a, uint32_t n);
void bench_rmsnorm(const float *x, const float *w, float *y, float *partials, uint32_t n);
void bench_matvec(const float *m, const float *x, float *y, uint32_t rows, uint32_t cols);
void bench_softmax(float *x, float *partials, uint32_t n);
}

namespace bench {
namespace {

// One kernel launch: its sk kernel, argument values (8-byte slots) and the direct call the
// baselines make with the same values.
struct Launch {
  sk_kernel *kernel = nullptr;
  uint32_t block_dim = 1;
  std::vector<uint64_t> slots;
  std::vector<void *> args;
  void (*thunk)(const void *) = nullptr;

  template <class... T>
  void set(T... values) {
    slots.clear();
    (push(values), ...);
    args.clear();
    for (uint64_t &s : slots) args.push_back(&s);
  }
  template <class T>
  void push(T v) {
    uint64_t s = 0;
    std::memcpy(&s, &v, sizeof v);
    slots.push_back(s);
  }
  template <class T>
  T get(size_t i) const {
    T v;
    std::memcpy(&v, &slots[i], sizeof v);
    return v;
  }
};

void axpy_thunk(const void *p) {
  auto *l = static_cast<const Launch *>(p);
  bench_axpy(l->get<float *>(0), l->get<float *>(1), l->get<float>(2), l->get<uint32_t>(3));
}
void rmsnorm_thunk(const void *p) {
  auto *l = static_cast<const Launch *>(p);
  bench_rmsnorm(l->get<float *>(0), l->get<float *>(1), l->get<float *>(2), l->get<float *>(3), l->get<uint32_t>(4));
}
void matvec_thunk(const void *p) {
  auto *l = static_cast<const Launch *>(p);
  bench_matvec(l->get<float *>(0), l->get<float *>(1), l->get<float *>(2), l->get<uint32_t>(3), l->get<uint32_t>(4));
}
void softmax_thunk(const void *p) {
  auto *l = static_cast<const Launch *>(p);
  bench_softmax(l->get<float *>(0), l->get<float *>(1), l->get<uint32_t>(2));
}

struct Chain {
  std::vector<Launch> launches;
  sk_superkernel *fused = nullptr;
  std::vector<Step> steps;

  bool finalize(sk_device *dev, const char *name) {
    // Launches were copied into the vector: point their args at their own slots again.
    for (Launch &l : launches) {
      l.args.clear();
      for (uint64_t &s : l.slots) l.args.push_back(&s);
    }
    sk_scope *scope = nullptr;
    if (!sk_ok(sk_scope_begin(dev, name, nullptr, &scope), name)) return false;
    for (Launch &l : launches)
      if (!sk_ok(sk_add_kernel(scope, l.kernel, l.block_dim, l.args.data(), nullptr), name)) {
        sk_scope_abort(scope);
        return false;
      }
    for (Launch &l : launches) steps.push_back(Step{l.thunk, &l, l.block_dim});
    return sk_ok(sk_finalize(scope, &fused), name);
  }
  void run_fused() {
    sk_launch(fused, nullptr);
    sk_stream_synchronize(nullptr);
  }
  void run_unfused() {
    for (Launch &l : launches) sk_launch_kernel(l.kernel, l.block_dim, l.args.data(), nullptr);
    sk_stream_synchronize(nullptr);
  }
  void run_openmp(uint32_t cores) { openmp_run(steps.data(), steps.size(), cores); }
  ~Chain() { sk_superkernel_destroy(fused); }
};

// Runs each method once from the same state and compares the outputs bit for bit.
bool same_results(const char *what, Chain &c, uint32_t cores, const std::function<void()> &reset,
                  const float *out, size_t n) {
  std::vector<float> ref(n), got(n);
  reset();
  c.run_unfused();
  std::memcpy(ref.data(), out, n * sizeof(float));
  reset();
  c.run_fused();
  std::memcpy(got.data(), out, n * sizeof(float));
  bool fused_ok = std::memcmp(ref.data(), got.data(), n * sizeof(float)) == 0;
  reset();
  c.run_openmp(cores);
  bool omp_ok = std::memcmp(ref.data(), out, n * sizeof(float)) == 0;
  if (!fused_ok || !omp_ok)
    std::fprintf(stderr, "sk-bench: %s: outputs differ (fused %s, openmp %s)\n", what, fused_ok ? "ok" : "DIFFERS",
                 omp_ok ? "ok" : "DIFFERS");
  return fused_ok && omp_ok;
}

void print_and_record(const char *name, size_t kernels, uint32_t cores, Chain &c, const Options &opt,
                      Report &report) {
  std::vector<Method> methods = {
      {"fused", [&] { c.run_fused(); }},
      {"unfused", [&] { c.run_unfused(); }},
      {"openmp", [&] { c.run_openmp(cores); }, std::chrono::milliseconds(20)},
  };
  Row r = measure(methods, kernels, opt.rounds());
  const double *t = r.median_ns.data();
  std::printf("%-28s %6zu %9.0f %9.0f %9.0f | %13.2f %11.2f\n", name, kernels, t[0], t[1], t[2], t[1] / t[0],
              t[2] / t[0]);
  report.add(name, {{"cores", cores}, {"kernels", double(kernels)}, {"fused_ns", t[0]}, {"unfused_ns", t[1]},
                    {"openmp_ns", t[2]}, {"unfused_over_fused", t[1] / t[0]}, {"openmp_over_fused", t[2] / t[0]}});
}

}  // namespace

bool run_small_ops(const Options &opt, uint32_t cores, Report &report) {
  sk_device *dev = open_host(opt, cores);
  sk_module *ops = nullptr, *mixed = nullptr;
  sk_kernel *axpy = nullptr, *rmsnorm = nullptr, *matvec = nullptr, *softmax = nullptr;
  if (!dev) return false;
  bool ok = load_kernel(dev, "bench_kernels", "bench_axpy", &ops, &axpy) &&
            load_kernel(dev, "bench_mixed", "bench_rmsnorm", &mixed, &rmsnorm) &&
            sk_ok(sk_module_get_kernel(mixed, "bench_matvec", &matvec), "bench_matvec") &&
            sk_ok(sk_module_get_kernel(mixed, "bench_softmax", &softmax), "bench_softmax");
  std::printf("\nsmall ops on %u cores (ns per kernel)\n", cores);
  std::printf("%-28s %6s %9s %9s %9s | %13s %11s\n", "chain", "K", "fused", "unfused", "openmp", "unfused/fused",
              "omp/fused");
  // 256 axpy kernels on 16 Ki floats; a alternates in sign so that y stays bounded.
  const uint32_t n = 16384;
  std::vector<float> x(n), y(n);
  if (ok) {
    Chain c;
    c.launches.resize(256);
    for (size_t k = 0; k < c.launches.size(); ++k) {
      Launch &l = c.launches[k];
      l.kernel = axpy;
      l.block_dim = cores;
      l.thunk = axpy_thunk;
      l.set(x.data(), y.data(), (k % 2 ? -0.5f : 0.5f) + 0.001f * float(k % 7), n);
    }
    ok = c.finalize(dev, "axpy256");
    auto reset = [&] {
      for (uint32_t i = 0; i < n; ++i) x[i] = float(i % 97) * 0.01f, y[i] = float(i % 13) * 0.1f;
    };
    ok = ok && same_results("axpy chain", c, cores, reset, y.data(), n);
    if (ok) print_and_record("axpy x256 (16 Ki floats)", c.launches.size(), cores, c, opt, report);
  }
  // Mixed: 32 layers of rmsnorm -> mat-vec 256x256 -> softmax.
  const uint32_t d = 256;
  std::vector<float> v(d), w(d), h(d), m(size_t{d} * d), partials(64);
  if (ok) {
    Chain c;
    for (int layer = 0; layer < 32; ++layer) {
      Launch norm, mv, sm;
      norm.kernel = rmsnorm, norm.block_dim = cores, norm.thunk = rmsnorm_thunk;
      norm.set(v.data(), w.data(), h.data(), partials.data(), d);
      mv.kernel = matvec, mv.block_dim = cores * 2, mv.thunk = matvec_thunk;  // multiplexed blocks
      mv.set(m.data(), h.data(), v.data(), d, d);
      sm.kernel = softmax, sm.block_dim = cores, sm.thunk = softmax_thunk;
      sm.set(v.data(), partials.data(), d);
      c.launches.push_back(norm);
      c.launches.push_back(mv);
      c.launches.push_back(sm);
    }
    ok = c.finalize(dev, "mixed96");
    auto reset = [&] {
      for (uint32_t i = 0; i < d; ++i) v[i] = float(i % 11) * 0.1f - 0.5f, w[i] = 1.0f + float(i % 5) * 0.01f;
      for (size_t i = 0; i < m.size(); ++i) m[i] = float(int(i % 17) - 8) * 0.01f;
    };
    ok = ok && same_results("mixed chain", c, cores, reset, v.data(), d);
    if (ok) print_and_record("norm/matvec/softmax x32", c.launches.size(), cores, c, opt, report);
  }
  sk_module_unload(ops);
  sk_module_unload(mixed);
  sk_device_close(dev);
  return ok;
}

}  // namespace bench
