// A sub-kernel taking C structs by value (aggregate signatures, passed as the PTX ABI passes
// them) and a position that a super kernel may read by reference (sk_kernel_options.arg_refs):
// block 0's first thread writes every value it received, member by member, into the 64-byte
// record at out + 64 * pos.
#include <sk_kernel.h>
#include <stdint.h>

struct cu_f2 {
  float x, y;
};
struct cu_di {
  double d;
  int32_t i;
};
struct cu_i5 {
  int32_t a[5];
};
struct cu_cf {
  int8_t c;
  float f;
};

__device__ unsigned char *put(unsigned char *o, const void *v, size_t n) {
  memcpy(o, v, n);
  return o + n;
}

SK_KERNEL_CUDA(cu_agg, "ptr,i32,{f32,f32},{f64,i32},{i32[5]},{i8,f32},i16", 128)
extern "C" __device__ void cu_agg(unsigned char *out, int32_t pos, cu_f2 p, cu_di q, cu_i5 r, cu_cf s, int16_t h) {
  if (threadIdx.x != 0 || sk_block_idx() != 0) return;
  unsigned char *o = out + 64 * pos;
  o = put(o, &p.x, 4);
  o = put(o, &p.y, 4);
  o = put(o, &q.d, 8);
  o = put(o, &q.i, 4);
  o = put(o, r.a, 20);
  o = put(o, &s.c, 1);
  o = put(o, &s.f, 4);
  put(o, &h, 2);
}
