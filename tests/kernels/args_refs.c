/* Kernels for arguments read by reference (sk_kernel_options.arg_refs): each takes what a decode
 * step's kernels take per token, a position and values that change from launch to launch. One
 * kernel per way the host calls a kernel: direct, by register map and through libffi. */
#include <sk_kernel.h>

struct ref_f2 {
  float x, y;
};

/* Direct (pointers and integers only): out[pos] += v. */
SK_KERNEL(ref_add_at, "ptr,u32,u32")
void ref_add_at(uint32_t *out, uint32_t pos, uint32_t v) {
  if (sk_block_idx() == 0) out[pos] += v;
}

/* Register map (a float): block b writes out[pos * blocks + b] from in[b], scaled. */
SK_KERNEL(ref_scale_at, "ptr,ptr,i32,f32")
void ref_scale_at(float *out, const float *in, int32_t pos, float scale) {
  const uint32_t b = sk_block_idx(), n = sk_block_num();
  out[(uint32_t)pos * n + b] = in[b] * scale + (float)pos;
}

/* libffi (an aggregate, which may be read by reference too): out[2 pos], out[2 pos + 1] = p. */
SK_KERNEL(ref_point_at, "ptr,i32,{f32,f32}")
void ref_point_at(float *out, int32_t pos, struct ref_f2 p) {
  if (sk_block_idx() != 0) return;
  out[2 * pos] = p.x;
  out[2 * pos + 1] = p.y;
}

/* Narrow integers, which a reference must read as wide as their type and extend. */
SK_KERNEL(ref_narrow, "ptr,i8,i16,u8,u16")
void ref_narrow(int64_t *out, int8_t a, int16_t b, uint8_t c, uint16_t d) {
  if (sk_block_idx() != 0) return;
  out[0] = a;
  out[1] = b;
  out[2] = c;
  out[3] = d;
}

/* The next position, written where the other kernels read theirs: each run of
 * sk_launch_repeat reads the one the run before left. */
SK_KERNEL(ref_advance, "ptr")
void ref_advance(int32_t *pos) {
  if (sk_block_idx() == 0) ++*pos;
}
