/*
 * Attention over a KV cache for one decode position, H heads of HD = n / H dimensions each.
 * The position comes from device memory (*pos), as it would on a GPU: the fused step is built
 * once and replayed, and the last kernel of the step advances *pos.
 *
 * Every value is produced by exactly one block in a fixed order (SIMD reductions too, see
 * matvec.c), so fused and unfused runs agree bit for bit.
 */
#include <math.h>
#include <stddef.h>

#include <sk_kernel.h>

/* Rotary position embedding, in place on q and k (n floats each, pairs (2i, 2i+1) per head). */
SK_KERNEL(rope, "ptr,ptr,ptr,u32,u32")
void rope(float *restrict q, float *restrict k, const uint32_t *restrict pos, uint32_t n,
          uint32_t heads) {
  uint32_t hd = n / heads, begin, end;
  sk_block_range(n / 2, &begin, &end);
  for (uint32_t p = begin; p < end; ++p) {
    uint32_t i = 2 * p, d = i % hd;
    float theta = (float)*pos * powf(10000.0f, -(float)d / (float)hd);
    float c = cosf(theta), s = sinf(theta);
    float q0 = q[i], q1 = q[i + 1], k0 = k[i], k1 = k[i + 1];
    q[i] = q0 * c - q1 * s, q[i + 1] = q0 * s + q1 * c;
    k[i] = k0 * c - k1 * s, k[i + 1] = k0 * s + k1 * c;
  }
}

/* Appends k and v (n floats each) to the caches as row *pos. */
SK_KERNEL(kv_append, "ptr,ptr,ptr,ptr,ptr,u32")
void kv_append(const float *restrict k, const float *restrict v, float *restrict k_cache,
               float *restrict v_cache, const uint32_t *restrict pos, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  float *kr = k_cache + (size_t)*pos * n, *vr = v_cache + (size_t)*pos * n;
  for (uint32_t i = begin; i < end; ++i) kr[i] = k[i], vr[i] = v[i];
}

/* scores[h * ctx + t] = q_h . k_cache[t]_h / sqrt(HD) for t <= *pos; one block per head(s). */
SK_KERNEL(attn_scores, "ptr,ptr,ptr,ptr,u32,u32,u32")
void attn_scores(const float *restrict q, const float *restrict k_cache, float *restrict scores,
                 const uint32_t *restrict pos, uint32_t n, uint32_t heads, uint32_t ctx) {
  uint32_t hd = n / heads, len = *pos + 1, begin, end;
  float inv = 1.0f / sqrtf((float)hd);
  sk_block_range(heads, &begin, &end);
  for (uint32_t h = begin; h < end; ++h)
    for (uint32_t t = 0; t < len; ++t) {
      const float *kr = k_cache + (size_t)t * n + h * hd, *qh = q + h * hd;
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (uint32_t d = 0; d < hd; ++d) acc += qh[d] * kr[d];
      scores[h * ctx + t] = acc * inv;
    }
}

/* Softmax over each head's first *pos + 1 scores, in place (max-subtracted). libm's expf, one
 * call per score, is most of its time: without -ffast-math only the division vectorises. */
SK_KERNEL(softmax, "ptr,ptr,u32,u32")
void softmax(float *restrict scores, const uint32_t *restrict pos, uint32_t heads, uint32_t ctx) {
  uint32_t len = *pos + 1, begin, end;
  sk_block_range(heads, &begin, &end);
  for (uint32_t h = begin; h < end; ++h) {
    float *row = scores + (size_t)h * ctx, max = row[0], sum = 0.0f;
    for (uint32_t t = 1; t < len; ++t) max = row[t] > max ? row[t] : max;
    for (uint32_t t = 0; t < len; ++t) sum += row[t] = expf(row[t] - max);
    for (uint32_t t = 0; t < len; ++t) row[t] /= sum;
  }
}

/* out_h = sum_t scores[h][t] * v_cache[t]_h; blocks split the n output values, and each
 * block's share of a head is accumulated row by row (a vector of outputs per cache row). */
SK_KERNEL(attn_values, "ptr,ptr,ptr,ptr,u32,u32,u32")
void attn_values(const float *restrict scores, const float *restrict v_cache, float *restrict out,
                 const uint32_t *restrict pos, uint32_t n, uint32_t heads, uint32_t ctx) {
  uint32_t hd = n / heads, len = *pos + 1, begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end;) {
    uint32_t head = i / hd, stop = (head + 1) * hd < end ? (head + 1) * hd : end;
    const float *p = scores + (size_t)head * ctx;
    for (uint32_t j = i; j < stop; ++j) out[j] = 0.0f;
    for (uint32_t t = 0; t < len; ++t) {
      const float *row = v_cache + (size_t)t * n;
      for (uint32_t j = i; j < stop; ++j) out[j] += p[t] * row[j];
    }
    i = stop;
  }
}
