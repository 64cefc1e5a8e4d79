// A decode-shaped step: 30 layers of three 1-block 128x128 mat-vecs (q, k and v projections),
// each layer reading stream 0's output of the layer before. The streams row builds it three
// ways (scenario_streams.cpp); the core-0 row times its placed form.
#pragma once
#include <sk.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace bench {

struct DecodeStep {
  static constexpr uint32_t kLayers = 30, kStreams = 3, kDim = 128;
  static constexpr size_t kKernels = size_t{kLayers} * kStreams;
  std::vector<float> m = std::vector<float>(size_t{kLayers} * kStreams * kDim * kDim);  // the matrices
  std::vector<float> y = std::vector<float>(size_t{kLayers + 1} * kStreams * kDim);     // y[0]: the input
  float *matrix(uint32_t l, uint32_t s) { return m.data() + (size_t{l} * kStreams + s) * kDim * kDim; }
  float *vec(uint32_t l, uint32_t s) { return y.data() + (size_t{l} * kStreams + s) * kDim; }
  void reset() {
    for (size_t i = 0; i < m.size(); ++i) m[i] = float(int(i % 23) - 11) * 0.01f;
    std::memset(y.data(), 0, y.size() * sizeof(float));
    for (uint32_t i = 0; i < kDim; ++i) vec(0, 0)[i] = float(i % 7) * 0.1f - 0.3f;
  }
};

// The step as a super kernel of `matvec` (bench_mixed's bench_matvec) over `st`. mode 0: one
// stream; 1: three streams, every kernel pinned to core 0; 2: three streams, placed by the
// planner. Null after printing the error.
sk_superkernel *build_decode_step(sk_device *dev, sk_kernel *matvec, DecodeStep &st, int mode);

}  // namespace bench
