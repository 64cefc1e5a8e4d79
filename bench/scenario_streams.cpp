// A decode-shaped multi-stream step: 30 layers of three 1-block mat-vecs (q, k and v
// projections) on three scope streams, each layer reading stream 0's output of the layer
// before (an event). Streams off (one chain), streams on with every kernel pinned to core 0
// (what the plan did before it placed steps: small kernels queue on the low cores), and
// streams on as the planner places them; every method's output checked equal first.
#include <cstdio>
#include <cstring>
#include <vector>

#include "decode_step.hpp"
#include "measure.hpp"
#include "scenarios.hpp"

namespace bench {

sk_superkernel *build_decode_step(sk_device *dev, sk_kernel *matvec, DecodeStep &st, int mode) {
  static const char *const names[] = {"streams-off", "streams-on-core0", "streams-on-placed"};
  sk_scope *scope = nullptr;
  if (!sk_ok(sk_scope_begin(dev, names[mode], mode ? "stream-fusion=1" : nullptr, &scope), names[mode]))
    return nullptr;
  uint32_t dim = DecodeStep::kDim;
  bool ok = true;
  for (uint32_t l = 0; l < DecodeStep::kLayers && ok; ++l) {
    for (uint32_t s = 0; s < DecodeStep::kStreams && ok; ++s) {
      if (mode && s != 0 && l > 0) ok = sk_ok(sk_scope_wait_event(scope, s, l - 1), "sk_scope_wait_event");
      float *m = st.matrix(l, s), *x = st.vec(l, 0), *y = st.vec(l + 1, s);
      void *args[] = {&m, &x, &y, &dim, &dim};
      sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
      o.stream = mode ? s : 0;
      if (mode == 1) o.core_count = 1;  // first_core 0
      ok = ok && sk_ok(sk_add_kernel(scope, matvec, 1, args, &o), names[mode]);
      if (ok && mode && s == 0) ok = sk_ok(sk_scope_record_event(scope, 0, l), "sk_scope_record_event");
    }
  }
  sk_superkernel *sk = nullptr;
  if (!ok) {
    sk_scope_abort(scope);
    return nullptr;
  }
  return sk_ok(sk_finalize(scope, &sk), names[mode]) ? sk : nullptr;
}

namespace {

void run(sk_superkernel *sk) {
  sk_launch(sk, nullptr);
  sk_stream_synchronize(nullptr);
}

}  // namespace

bool run_streams(const Options &opt, uint32_t cores, Report &report) {
  sk_device *dev = open_host(opt, cores);
  sk_module *mod = nullptr;
  sk_kernel *matvec = nullptr;
  if (!dev) return false;
  bool ok = load_kernel(dev, "bench_mixed", "bench_matvec", &mod, &matvec);
  DecodeStep st;
  sk_superkernel *sk[3] = {};
  for (int mode = 0; mode < 3 && ok; ++mode) ok = (sk[mode] = build_decode_step(dev, matvec, st, mode)) != nullptr;
  // Every method from the same state, outputs compared bit for bit with streams off.
  std::vector<float> ref;
  for (int mode = 0; mode < 3 && ok; ++mode) {
    st.reset();
    run(sk[mode]);
    if (mode == 0) {
      ref = st.y;
    } else if (std::memcmp(ref.data(), st.y.data(), ref.size() * sizeof(float)) != 0) {
      std::fprintf(stderr, "sk-bench: multi-stream step: mode %d's outputs differ from streams off\n", mode);
      ok = false;
    }
  }
  if (ok) {
    std::printf(
        "\nmulti-stream decode step on %u cores: %u layers x %u mat-vecs %ux%u, 1 block each (ns per kernel)\n",
        cores, DecodeStep::kLayers, DecodeStep::kStreams, DecodeStep::kDim, DecodeStep::kDim);
    std::printf("%-22s %6s %9s %9s %9s | %11s %12s\n", "step", "K", "off", "on-core0", "on-placed", "off/placed",
                "core0/placed");
    std::vector<Method> methods = {
        {"streams off", [&] { run(sk[0]); }},
        {"streams on, core 0", [&] { run(sk[1]); }},
        {"streams on, placed", [&] { run(sk[2]); }},
    };
    const size_t kernels = DecodeStep::kKernels;
    Row r = measure(methods, kernels, opt.rounds());
    const double *t = r.median_ns.data();
    std::printf("%-22s %6zu %9.0f %9.0f %9.0f | %11.2f %12.2f\n", "q/k/v x30", kernels, t[0], t[1], t[2],
                t[0] / t[2], t[1] / t[2]);
    report.add("multi_stream_step", {{"cores", cores},
                                     {"kernels", double(kernels)},
                                     {"streams_off_ns", t[0]},
                                     {"streams_core0_ns", t[1]},
                                     {"streams_placed_ns", t[2]},
                                     {"off_over_placed", t[0] / t[2]},
                                     {"core0_over_placed", t[1] / t[2]}});
  }
  for (sk_superkernel *s : sk) sk_superkernel_destroy(s);
  sk_module_unload(mod);
  sk_device_close(dev);
  return ok;
}

}  // namespace bench
