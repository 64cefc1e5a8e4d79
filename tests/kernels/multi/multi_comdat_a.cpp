// COMDAT across objects (with multi_comdat_b.cpp): both define the template instance and the
// inline variable; one copy is kept, so the two kernels share multi_counter.
#include <sk_kernel.h>

template <typename T>
__attribute__((noinline)) T multi_twice(T v) {
  return v + v;
}
inline int multi_counter = 0;

extern "C" {
// out[0] = 40 + (multi_counter += 1)
SK_KERNEL(multi_comdat_a, "ptr")
void multi_comdat_a(int *out) {
  multi_counter += 1;
  out[0] = multi_twice(20) + multi_counter;
}
}
