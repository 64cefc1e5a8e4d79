// The other half of multi_comdat_a.cpp: the same template instance and inline variable.
#include <sk_kernel.h>

template <typename T>
__attribute__((noinline)) T multi_twice(T v) {
  return v + v;
}
inline int multi_counter = 0;

extern "C" {
// out[0] = 2000 + (multi_counter += 10)
SK_KERNEL(multi_comdat_b, "ptr")
void multi_comdat_b(int *out) {
  multi_counter += 10;
  out[0] = multi_twice(1) * 1000 + multi_counter;
}
}
