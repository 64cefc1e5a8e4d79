// Build costs: scope build + finalize per sub-kernel (first build and a rebuild of the same
// scope), linking an object vs dlopen of the same code as a shared object, memory per
// sub-kernel, what the first launch pays after the cores went to sleep, and the cost of a
// module load with few and with many modules loaded.
#include <dlfcn.h>
#include <elf.h>
#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "scenarios.hpp"

namespace bench {
namespace {

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Builds a K-kernel scope whose block dims follow `pattern`; returns ns spent, or -1.
double build_scope(sk_device *dev, sk_kernel *k, size_t count, uint32_t pattern, sk_superkernel **out,
                   double *finalize_ns) {
  double t0 = now_ns();
  sk_scope *scope = nullptr;
  if (!sk_ok(sk_scope_begin(dev, "build", nullptr, &scope), "sk_scope_begin")) return -1;
  for (size_t i = 0; i < count; ++i)
    if (!sk_ok(sk_add_kernel(scope, k, 1 + (uint32_t)((i * 7 + pattern) % 4), nullptr, nullptr), "add")) {
      sk_scope_abort(scope);
      return -1;
    }
  double t1 = now_ns();
  if (!sk_ok(sk_finalize(scope, out), "sk_finalize")) return -1;
  double t2 = now_ns();
  *finalize_ns = t2 - t1;
  return t2 - t0;
}

size_t heap_bytes() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// Offset of the bytes of section .comment in an ELF64 object (0: none of 8 bytes or more).
size_t comment_offset(const std::vector<unsigned char> &o) {
  Elf64_Ehdr eh;
  if (o.size() < sizeof eh) return 0;
  std::memcpy(&eh, o.data(), sizeof eh);
  auto header = [&](size_t i) {
    Elf64_Shdr sh{};
    if (eh.e_shoff + (i + 1) * sizeof sh <= o.size()) std::memcpy(&sh, o.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  const Elf64_Shdr names = header(eh.e_shstrndx);
  for (size_t i = 1; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = header(i);
    if (names.sh_offset + sh.sh_name + 9 > o.size() || sh.sh_size < 8) continue;
    if (!std::memcmp(o.data() + names.sh_offset + sh.sh_name, ".comment", 9)) return sh.sh_offset;
  }
  return 0;
}

// Per-load time while many distinct modules stay loaded: the first `window` loads, and the last
// `window` of `total` (distinct bytes: the object with a number written over its .comment).
bool module_loads(const Options &opt, Report &report) {
  const std::string path = kernel_object("bench_kernels");
  std::ifstream f(path, std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t at = comment_offset(bytes);
  if (!at) {
    std::fprintf(stderr, "sk-bench: %s has no .comment section to vary\n", path.c_str());
    return false;
  }
  sk_device *dev = open_host(opt, 1);
  if (!dev) return false;
  const size_t window = 1000, total = opt.quick ? 5000 : 20000;
  std::vector<sk_module *> mods;
  double first = 0, last = 0;
  bool ok = true;
  for (uint64_t i = 0; i < total && ok; ++i) {
    std::memcpy(bytes.data() + at, &i, sizeof i);
    double t0 = now_ns();
    sk_module *m = nullptr;
    ok = sk_ok(sk_module_load(dev, bytes.data(), bytes.size(), &m), "sk_module_load");
    double t = now_ns() - t0;
    if (i < window) first += t;
    if (i >= total - window) last += t;
    mods.push_back(m);
  }
  for (sk_module *m : mods) sk_module_unload(m);
  sk_device_close(dev);
  if (!ok) return false;
  std::printf("module load, distinct objects kept loaded: %.1f us per load with up to %zu loaded, %.1f us "
              "with up to %zu\n",
              first / window / 1e3, window, last / window / 1e3, total);
  report.add("module_loads", {{"loaded_small", double(window)}, {"load_us_small", first / window / 1e3},
                              {"loaded_large", double(total)}, {"load_us_large", last / window / 1e3}});
  return true;
}

}  // namespace

bool run_build_costs(const Options &opt, Report &report) {
  sk_device *dev = open_host(opt, 2);
  sk_module *mod = nullptr;
  sk_kernel *empty = nullptr;
  if (!dev) return false;
  if (!load_kernel(dev, "bench_kernels", "bench_empty", &mod, &empty)) return false;
  const int rounds = opt.quick ? 3 : 9;
  const size_t k = 4096;
  bool ok = true;

  // Scope build: a new block-dim pattern each round (first build), then the same again.
  std::vector<double> first, first_fin, again, again_fin;
  size_t heap_per_kernel = 0;
  for (int r = 0; r < rounds && ok; ++r) {
    sk_superkernel *a = nullptr, *b = nullptr;
    double fa = 0, fb = 0;
    size_t before = heap_bytes();
    double ta = build_scope(dev, empty, k, 1000 + r, &a, &fa);
    heap_per_kernel = (heap_bytes() - before) / k;
    double tb = build_scope(dev, empty, k, 1000 + r, &b, &fb);
    ok = ta >= 0 && tb >= 0;
    first.push_back(ta / k), first_fin.push_back(fa / k), again.push_back(tb / k), again_fin.push_back(fb / k);
    sk_superkernel_destroy(a);
    sk_superkernel_destroy(b);
  }
  if (!ok) return false;
  std::printf("\nbuild costs (device host:cores=2)\n");
  std::printf("scope of %zu kernels, per sub-kernel: build %.0f ns (finalize %.0f ns); same scope again: "
              "build %.0f ns (finalize %.0f ns); heap %zu bytes\n",
              k, median(first), median(first_fin), median(again), median(again_fin), heap_per_kernel);
  report.add("build", {{"kernels", double(k)}, {"build_ns_per_kernel", median(first)},
                       {"finalize_ns_per_kernel", median(first_fin)}, {"rebuild_ns_per_kernel", median(again)},
                       {"refinalize_ns_per_kernel", median(again_fin)},
                       {"heap_bytes_per_kernel", double(heap_per_kernel)}});

  // Link an object vs dlopen the same code built as a shared object.
  const std::string obj = kernel_object("bench_mixed"), so = obj.substr(0, obj.size() - 2) + ".so";
  struct stat st {};
  stat(obj.c_str(), &st);
  const double kib = double(st.st_size) / 1024.0;
  std::vector<double> link, dl;
  for (int r = 0; r < rounds * 5 && ok; ++r) {
    // Unloading the only module drops the link from the device's cache: every load links.
    double t0 = now_ns();
    sk_module *m = nullptr;
    sk_kernel *kk = nullptr;
    ok = sk_ok(sk_module_load_file(dev, obj.c_str(), &m), "link") && sk_ok(sk_module_get_kernel(m, "bench_softmax", &kk), "get");
    sk_module_unload(m);
    link.push_back(now_ns() - t0);
    t0 = now_ns();
    void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    void *sym = h ? dlsym(h, "bench_softmax") : nullptr;
    if (!h || !sym) {
      std::fprintf(stderr, "sk-bench: dlopen %s: %s\n", so.c_str(), dlerror());
      ok = false;
    }
    if (h) dlclose(h);
    dl.push_back(now_ns() - t0);
  }
  if (!ok) return false;
  std::printf("link %s (%.1f KiB): %.1f us (%.2f us/KiB); dlopen+dlsym+dlclose of the .so: %.1f us; link/dlopen %.2f\n",
              "bench_mixed.o", kib, median(link) / 1e3, median(link) / 1e3 / kib, median(dl) / 1e3,
              median(link) / median(dl));
  report.add("link", {{"object_kib", kib}, {"link_us", median(link) / 1e3}, {"link_us_per_kib", median(link) / 1e3 / kib},
                      {"dlopen_us", median(dl) / 1e3}, {"link_over_dlopen", median(link) / median(dl)}});

  // Cold launch: after the cores went to sleep, the first launch pays one wake-up, not one per
  // sub-kernel: compare the extra cost of a cold 1-kernel and a cold 256-kernel super kernel.
  double extra[2] = {0, 0};
  const size_t sizes[2] = {1, 256};
  for (int s = 0; s < 2 && ok; ++s) {
    sk_superkernel *sk = nullptr;
    double fin = 0;
    ok = build_scope(dev, empty, sizes[s], 0, &sk, &fin) >= 0;
    std::vector<double> warm, cold;
    for (int r = 0; r < 50 && ok; ++r) {
      double t0 = now_ns();
      sk_launch(sk, nullptr);
      sk_stream_synchronize(nullptr);
      warm.push_back(now_ns() - t0);
    }
    for (int r = 0; r < rounds && ok; ++r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      double t0 = now_ns();
      sk_launch(sk, nullptr);
      sk_stream_synchronize(nullptr);
      cold.push_back(now_ns() - t0);
    }
    extra[s] = median(cold) - median(warm);
    std::printf("cold launch of %3zu kernels: %.1f us (warm %.1f us): wake-up costs %.1f us\n", sizes[s],
                median(cold) / 1e3, median(warm) / 1e3, extra[s] / 1e3);
    sk_superkernel_destroy(sk);
  }
  report.add("cold_launch", {{"extra_us_1_kernel", extra[0] / 1e3}, {"extra_us_256_kernels", extra[1] / 1e3}});
  sk_module_unload(mod);
  sk_device_close(dev);
  return ok && module_loads(opt, report);
}

}  // namespace bench
