// A kernel written in C++: templates and lambdas inside, a C-ABI entry recorded by SK_KERNEL.
#include <sk_kernel.h>

namespace {
template <typename T, typename F>
void for_my_part(T *x, uint32_t n, F f) {
  const uint32_t per = (n + sk_block_num() - 1) / sk_block_num();
  const uint32_t lo = sk_block_idx() * per;
  for (uint32_t i = lo; i < n && i < lo + per; ++i) x[i] = f(x[i], i);
}
}  // namespace

SK_KERNEL(cxx_scale_shift, "ptr,f32,u32")
SK_EXTERN_C void cxx_scale_shift(float *x, float s, uint32_t n) {
  for_my_part(x, n, [s](float v, uint32_t i) { return v * s + static_cast<float>(i % 3); });
}
