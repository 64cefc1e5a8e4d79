// bench_cuda: the per-kernel cost of a static chain of tiny kernels on one GPU, measured side
// by side in one run: plain stream launches, CUDA Graph replay of the same launches, and one
// libsk super kernel (the same kernel body fused from a relocatable cubin) per chain; then the
// per-run cost of 16 runs of a super kernel as 16 sk_launch vs one sk_launch_repeat (one
// launch whose entry loops, with a stop flag nobody sets).
//
//   bench_cuda <tiny.cubin> [--rounds R] [--blocks B]
//
// tiny.cubin is tests/kernels/cuda/tiny.cu built with nvcc -dc -cubin for this GPU. Each
// chain has N kernels (10, 100, 1000) of B blocks x 128 threads doing x[i] += 1; every method
// is checked against the count of increments it made. Prints one table (ratios are what to
// read: these numbers move with clocks and drivers).
#include <cuda_runtime.h>
#include <sk.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kThreads = 128;

__global__ void tiny_global(uint32_t *x, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

#define CHECK_CUDA(call)                                                                      \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "bench_cuda: %s failed: %s\n", #call, cudaGetErrorString(e_));     \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
#define CHECK_SK(call)                                                                        \
  do {                                                                                        \
    sk_status s_ = (call);                                                                    \
    if (s_ != SK_OK) {                                                                        \
      std::fprintf(stderr, "bench_cuda: %s failed: %s: %s\n", #call, sk_status_name(s_),      \
                   sk_last_error());                                                          \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_cuda <tiny.cubin> [--rounds R] [--blocks B]\n");
    return 2;
  }
  const char *cubin = argv[1];
  int rounds = 5;
  uint32_t blocks = 4;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--blocks")) blocks = (uint32_t)std::max(1, std::atoi(argv[i + 1]));
  }
  sk_device *dev = nullptr;
  CHECK_SK(sk_device_open("cuda:0", &dev));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  sk_module *mod = nullptr;
  CHECK_SK(sk_module_load_file(dev, cubin, &mod));
  sk_kernel *tiny = nullptr;
  CHECK_SK(sk_module_get_kernel(mod, "tiny_add", &tiny));

  const uint32_t n = blocks * kThreads;
  void *raw = nullptr;
  CHECK_SK(sk_mem_alloc(dev, n * sizeof(uint32_t), &raw));
  uint32_t *x = static_cast<uint32_t *>(raw);
  CHECK_CUDA(cudaMemset(x, 0, n * sizeof(uint32_t)));
  uint64_t expected = 0;  // increments every element received

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("CUDA per-kernel cost on %s (sm_%d%d, %d SMs): chains of tiny kernels, %u blocks x %u threads "
              "each, median of %d rounds\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, blocks, kThreads, rounds);
  std::printf("%8s | %14s | %14s | %14s | %12s | %12s | %10s\n", "kernels", "stream us/kern", "graph us/kern",
              "super us/kern", "stream/super", "graph/super", "build ms");
  bool ok = true;
  for (uint32_t chain : {10u, 100u, 1000u}) {
    const int reps = std::max(3, (int)(20000 / chain));
    // CUDA Graph of the chain.
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (uint32_t k = 0; k < chain; ++k) tiny_global<<<blocks, kThreads, 0, stream>>>(x, n);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    // Super kernel of the chain.
    const double build0 = now_us();
    sk_scope *scope = nullptr;
    CHECK_SK(sk_scope_begin(dev, "bench_chain", nullptr, &scope));
    for (uint32_t k = 0; k < chain; ++k) {
      void *args[] = {&x, (void *)&n};
      CHECK_SK(sk_add_kernel(scope, tiny, blocks, args, nullptr));
    }
    sk_superkernel *sk = nullptr;
    CHECK_SK(sk_finalize(scope, &sk));
    const double build_ms = (now_us() - build0) / 1000;
    // Warm up each.
    tiny_global<<<blocks, kThreads, 0, stream>>>(x, n);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_SK(sk_launch(sk, nullptr));
    CHECK_SK(sk_stream_synchronize(nullptr));
    expected += 1 + 2 * chain;
    std::vector<double> plain_t, graph_t, super_t;
    for (int r = 0; r < rounds; ++r) {
      double t0 = now_us();
      for (int i = 0; i < reps; ++i)
        for (uint32_t k = 0; k < chain; ++k) tiny_global<<<blocks, kThreads, 0, stream>>>(x, n);
      CHECK_CUDA(cudaStreamSynchronize(stream));
      plain_t.push_back((now_us() - t0) / (reps * (double)chain));
      t0 = now_us();
      for (int i = 0; i < reps; ++i) CHECK_CUDA(cudaGraphLaunch(exec, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
      graph_t.push_back((now_us() - t0) / (reps * (double)chain));
      t0 = now_us();
      for (int i = 0; i < reps; ++i) CHECK_SK(sk_launch(sk, nullptr));
      CHECK_SK(sk_stream_synchronize(nullptr));
      super_t.push_back((now_us() - t0) / (reps * (double)chain));
      expected += 3ull * reps * chain;
    }
    const double p = median(plain_t), g = median(graph_t), s = median(super_t);
    std::printf("%8u | %14.3f | %14.3f | %14.3f | %11.2fx | %11.2fx | %10.1f\n", chain, p, g, s, p / s, g / s,
                build_ms);
    std::fflush(stdout);
    sk_superkernel_destroy(sk);
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
  }
  // A decode loop of kRuns steps: kRuns launches, or one launch that runs kRuns times.
  constexpr uint32_t kRuns = 16;
  void *flag = nullptr;
  CHECK_SK(sk_mem_alloc(dev, sizeof(uint32_t), &flag));
  CHECK_CUDA(cudaMemset(flag, 0, sizeof(uint32_t)));
  std::printf("\nsk_launch_repeat: %u runs of a chain, us per run, median of %d rounds\n", kRuns, rounds);
  std::printf("%8s | %14s | %14s | %14s\n", "kernels", "launches us", "repeat us", "launches/repeat");
  for (uint32_t chain : {1u, 10u, 100u}) {
    sk_scope *scope = nullptr;
    CHECK_SK(sk_scope_begin(dev, "bench_repeat", nullptr, &scope));
    for (uint32_t k = 0; k < chain; ++k) {
      void *args[] = {&x, (void *)&n};
      CHECK_SK(sk_add_kernel(scope, tiny, blocks, args, nullptr));
    }
    sk_superkernel *sk = nullptr;
    CHECK_SK(sk_finalize(scope, &sk));
    CHECK_SK(sk_launch_repeat(sk, kRuns, static_cast<const uint32_t *>(flag), nullptr));  // warm-up
    CHECK_SK(sk_stream_synchronize(nullptr));
    expected += (uint64_t)kRuns * chain;
    const int reps = std::max(3, (int)(2000 / chain));
    std::vector<double> launches_t, repeat_t;
    for (int r = 0; r < rounds; ++r) {
      double t0 = now_us();
      for (int i = 0; i < reps; ++i)
        for (uint32_t k = 0; k < kRuns; ++k) CHECK_SK(sk_launch(sk, nullptr));
      CHECK_SK(sk_stream_synchronize(nullptr));
      launches_t.push_back((now_us() - t0) / (reps * (double)kRuns));
      t0 = now_us();
      for (int i = 0; i < reps; ++i)
        CHECK_SK(sk_launch_repeat(sk, kRuns, static_cast<const uint32_t *>(flag), nullptr));
      CHECK_SK(sk_stream_synchronize(nullptr));
      repeat_t.push_back((now_us() - t0) / (reps * (double)kRuns));
      expected += 2ull * reps * kRuns * chain;
    }
    const double l = median(launches_t), rp = median(repeat_t);
    std::printf("%8u | %14.3f | %14.3f | %14.2fx\n", chain, l, rp, l / rp);
    std::fflush(stdout);
    sk_superkernel_destroy(sk);
  }
  sk_mem_free(dev, flag);

  std::vector<uint32_t> host(n);
  CHECK_SK(sk_memcpy(dev, host.data(), x, n * sizeof(uint32_t)));
  for (uint32_t i = 0; i < n; ++i)
    if (host[i] != (uint32_t)expected) {
      std::printf("check: FAILED: x[%u] = %u, expected %u\n", i, host[i], (uint32_t)expected);
      ok = false;
      break;
    }
  if (ok) std::printf("check: every element was incremented %llu times, as expected\n", (unsigned long long)expected);
  CHECK_CUDA(cudaStreamDestroy(stream));
  sk_mem_free(dev, x);
  sk_module_unload(mod);
  sk_device_close(dev);
  return ok ? 0 : 1;
}
