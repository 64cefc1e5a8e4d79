// Linker test kernel: half of a pair linked as one module (cxx_comdat_a.cpp, cxx_comdat_b.cpp)
// that both define the same template, which throws: its COMDAT group is kept from one object,
// and the unwinder must use that object's unwind table for it, not the other's.
#include <sk_kernel.h>
#include <stdint.h>

#include <stdexcept>

template <typename T>
__attribute__((noinline)) T cxx_must_be_positive(T v) {
  if (v < 0) throw std::runtime_error("negative");
  return v * 2;
}

SK_KERNEL(cxx_comdat_a, "ptr,i32")
SK_EXTERN_C void cxx_comdat_a(int32_t *out, int32_t v) {
  try {
    out[0] = cxx_must_be_positive(v) + 1;
  } catch (const std::exception &) {
    out[0] = -1;
  }
}
