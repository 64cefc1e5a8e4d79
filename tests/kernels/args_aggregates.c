/* Kernels taking C structs by value, for the aggregate signatures ("{f32,f32}"...): each
 * writes every value it received, member by member, to `out`, so that a test compares the
 * bytes of a fused, an unfused and a native call. The structs cover the classes the SysV x86-64
 * and AAPCS64 conventions tell apart: two floats (one SSE eightbyte; an HFA), a double and an
 * int (SSE + INTEGER), 20 bytes (memory; a copy passed by reference), padding, nesting, and a
 * call that runs out of registers. The tests compile this file natively too (no device API). */
#include <sk_kernel.h>
#include <string.h>

struct agg_f2 {
  float x, y;
};
struct agg_di {
  double d;
  int32_t i;
};
struct agg_i5 {
  int32_t a[5];
};
struct agg_cf {
  int8_t c; /* 3 bytes of padding follow */
  float f;
};
struct agg_nest {
  struct agg_f2 p[2];
  int16_t t;
};

static unsigned char *put(unsigned char *o, const void *v, size_t n) {
  memcpy(o, v, n);
  return o + n;
}
#define PUT(o, v) ((o) = put((o), &(v), sizeof(v)))

static unsigned char *put_f2(unsigned char *o, struct agg_f2 p) {
  PUT(o, p.x);
  return PUT(o, p.y);
}
static unsigned char *put_di(unsigned char *o, struct agg_di q) {
  PUT(o, q.d);
  return PUT(o, q.i);
}
static unsigned char *put_i5(unsigned char *o, struct agg_i5 r) { return put(o, r.a, sizeof r.a); }
static unsigned char *put_cf(unsigned char *o, struct agg_cf s) {
  PUT(o, s.c);
  return PUT(o, s.f);
}

SK_KERNEL(agg_f2, "ptr,{f32,f32}")
void agg_f2(unsigned char *out, struct agg_f2 p) { put_f2(out, p); }

SK_KERNEL(agg_di, "ptr,{f64,i32}")
void agg_di(unsigned char *out, struct agg_di q) { put_di(out, q); }

SK_KERNEL(agg_i5, "ptr,{i32[5]}")
void agg_i5(unsigned char *out, struct agg_i5 r) { put_i5(out, r); }

SK_KERNEL(agg_cf, "ptr,{i8,f32}")
void agg_cf(unsigned char *out, struct agg_cf s) { put_cf(out, s); }

SK_KERNEL(agg_nest, "ptr,{{f32,f32}[2],i16},f32")
void agg_nest(unsigned char *out, struct agg_nest n, float after) {
  out = put_f2(out, n.p[0]);
  out = put_f2(out, n.p[1]);
  PUT(out, n.t);
  PUT(out, after);
}

/* More integer-class and SSE-class values than either convention has registers for: the later
 * aggregates go on the stack whole, the scalars after them still take free registers. */
SK_KERNEL(agg_mixed,
          "ptr,i64,{f32,f32},f64,{f64,i32},i32,{i32[5]},{i8,f32},f32,i8,{f32,f32},f64,u16,{f64,i32},f32,"
          "u64,f64,{i8,f32}")
void agg_mixed(unsigned char *out, int64_t a, struct agg_f2 p, double d, struct agg_di q, int32_t b, struct agg_i5 r,
               struct agg_cf s, float f, int8_t c, struct agg_f2 p2, double e, uint16_t h, struct agg_di q2, float g,
               uint64_t z, double k, struct agg_cf s2) {
  PUT(out, a);
  out = put_f2(out, p);
  PUT(out, d);
  out = put_di(out, q);
  PUT(out, b);
  out = put_i5(out, r);
  out = put_cf(out, s);
  PUT(out, f);
  PUT(out, c);
  out = put_f2(out, p2);
  PUT(out, e);
  PUT(out, h);
  out = put_di(out, q2);
  PUT(out, g);
  PUT(out, z);
  PUT(out, k);
  put_cf(out, s2);
}
