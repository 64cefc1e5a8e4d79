// Kernel calls: what each of the ways the step loop calls a kernel costs (direct, register
// map, libffi; src/host/executor/kernel_call.hpp), as a fused chain of K empty kernels per way. The
// way each chain took is read from explain, not assumed.
#include <cstdio>
#include <string>
#include <vector>

#include "measure.hpp"
#include "scenarios.hpp"

namespace bench {
namespace {

constexpr size_t kChain = 256;

// The way explain's "calls" counts every step of `sk` under (empty if they differ).
std::string call_way(sk_superkernel *sk) {
  const std::string json = explain_of(sk);
  for (const char *way : {"direct", "register map", "libffi"})
    if (json.find("\"" + std::string(way) + "\":" + std::to_string(kChain)) != std::string::npos) return way;
  return {};
}

struct Chain {
  const char *kernel;
  const char *params;  // as the table shows them
  std::vector<void *> args;
  sk_superkernel *sk = nullptr;
  std::string way;
};

}  // namespace

bool run_kernel_calls(const Options &opt, uint32_t cores, Report &report) {
  sk_device *dev = open_host(opt, cores);
  sk_module *mod = nullptr;
  if (!dev) return false;
  bool ok = sk_ok(sk_module_load_file(dev, kernel_object("bench_kernels").c_str(), &mod), "load");
  float *buf = nullptr;
  ok = ok && sk_ok(sk_mem_alloc(dev, 64, reinterpret_cast<void **>(&buf)), "sk_mem_alloc");
  float a = 0.5f;
  uint32_t n = 16;
  double d = 1.0;
  std::vector<void *> doubles(17, &d);
  std::vector<Chain> chains = {
      {"bench_empty", "none", {}},
      {"bench_call_axpy_shape", "ptr,ptr,f32,u32", {&buf, &buf, &a, &n}},
      {"bench_call_16d", "ptr + 16 f64", {&buf}},
      {"bench_call_17d", "ptr + 17 f64", {&buf}},
  };
  chains[2].args.insert(chains[2].args.end(), doubles.begin(), doubles.end() - 1);
  chains[3].args.insert(chains[3].args.end(), doubles.begin(), doubles.end());
  std::vector<Method> methods;
  for (Chain &c : chains) {
    sk_kernel *k = nullptr;
    ok = ok && sk_ok(sk_module_get_kernel(mod, c.kernel, &k), c.kernel) &&
         (c.sk = chain_of(dev, k, kChain, cores, c.kernel, c.args.empty() ? nullptr : c.args.data())) != nullptr;
    if (!ok) break;
    c.way = call_way(c.sk);
    methods.push_back({c.kernel, [sk = c.sk] { sk_launch(sk, nullptr); sk_stream_synchronize(nullptr); }});
  }
  if (ok) {
    Row r = measure(methods, kChain, opt.rounds());
    ok = sk_ok(sk_stream_synchronize(nullptr), "kernel-call chains");
    std::printf("\nkernel calls on %u cores: K = %zu empty kernels per chain, fused (ns per kernel)\n", cores, kChain);
    std::printf("%-24s %-18s %-14s %8s | %10s\n", "kernel", "parameters", "called by", "fused", "over none");
    for (size_t i = 0; i < chains.size(); ++i) {
      const double t = r.median_ns[i], base = r.median_ns[0];
      std::printf("%-24s %-18s %-14s %8.0f | %10.2f\n", chains[i].kernel, chains[i].params,
                  chains[i].way.empty() ? "?" : chains[i].way.c_str(), t, t / base);
      report.add("kernel_calls", {{"cores", cores}, {"kernels", double(kChain)}, {"params", double(chains[i].args.size())},
                                  {"libffi", chains[i].way == "libffi" ? 1.0 : 0.0}, {"fused_ns", t},
                                  {"over_no_params", t / base}});
    }
  }
  for (Chain &c : chains) sk_superkernel_destroy(c.sk);
  sk_mem_free(dev, buf);
  sk_module_unload(mod);
  sk_device_close(dev);
  return ok;
}

}  // namespace bench
