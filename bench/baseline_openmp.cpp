#include <omp.h>

#include "baselines.hpp"

namespace bench {
namespace {
void omp_sync_all() {
#pragma omp barrier
}
}  // namespace

void openmp_run(const Step *steps, size_t count, uint32_t threads) {
  g_sync_all = omp_sync_all;
  for (size_t k = 0; k < count; ++k) {
    const Step &s = steps[k];
    // One region per kernel; thread t runs blocks t, t+T, ... like the runtime's cores do.
#pragma omp parallel num_threads(threads)
    {
      const uint32_t t = static_cast<uint32_t>(omp_get_thread_num());
      const uint32_t team = static_cast<uint32_t>(omp_get_num_threads());
      for (uint32_t b = t; b < s.block_dim; b += team) {
        t_block = {b, s.block_dim};
        s.thunk(s.args);
      }
    }
  }
}

}  // namespace bench
