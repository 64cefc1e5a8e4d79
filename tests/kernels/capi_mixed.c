/* Mixed cube/vector kernels and hard cross-core sync for the C API tests (test_capi_mixed.c). */
#include <sk_kernel.h>

/* The guide's way for a 1:1 kernel that may land in a 1:2 super kernel: every vector core of the
 * group takes part in the hard sync, and the work is split by sub-block. Group g sums tile g of
 * `in` (tile = n / groups elements): the vector cores each sum their share into part[2g + sub]
 * and set flag 0; the cube core waits for them, adds the parts into sums[g] and sets flag 1; the
 * vector cores wait for it and write out[i] = in[i] * sums[g] over their share. */
SK_KERNEL_TYPED(mix_tile_scale, "ptr,ptr,ptr,ptr,u32", SK_CORE_MIX_1_1)
void mix_tile_scale(const uint32_t *in, uint32_t *part, uint32_t *sums, uint32_t *out, uint32_t n) {
  uint32_t g = sk_block_idx(), tile = n / sk_block_num();
  uint32_t sub = sk_sub_block_idx(), subs = sk_sub_block_num();
  uint32_t share = tile / subs, begin = g * tile + sub * share, end = begin + share;
  if (sk_core_type() == SK_CORE_TYPE_CUBE) {
    uint32_t s = 0;
    sk_cross_core_wait_flag(0);
    for (uint32_t v = 0; v < subs; ++v) s += part[2 * g + v];
    sums[g] = s;
    sk_cross_core_set_flag(1);
    return;
  }
  uint32_t s = 0;
  for (uint32_t i = begin; i < end; ++i) s += in[i];
  part[2 * g + sub] = s;
  sk_cross_core_set_flag(0);
  sk_cross_core_wait_flag(1);
  for (uint32_t i = begin; i < end; ++i) out[i] = in[i] * sums[g];
}

/* The wrong way: written as if a group had one vector core. Fine in a 1:1 super kernel; in a 1:2
 * one the cube core waits for vector core 1's flag, which never comes. */
SK_KERNEL_TYPED(mix_tile_scale_wrong, "ptr,ptr,ptr,ptr,u32", SK_CORE_MIX_1_1)
void mix_tile_scale_wrong(const uint32_t *in, uint32_t *part, uint32_t *sums, uint32_t *out, uint32_t n) {
  uint32_t g = sk_block_idx(), tile = n / sk_block_num();
  if (sk_core_type() == SK_CORE_TYPE_CUBE) {
    sk_cross_core_wait_flag(0);
    sums[g] = part[2 * g];
    sk_cross_core_set_flag(1);
    return;
  }
  if (sk_sub_block_idx() != 0) return;
  uint32_t s = 0;
  for (uint32_t i = g * tile; i < (g + 1) * tile; ++i) s += in[i];
  part[2 * g] = s;
  sk_cross_core_set_flag(0);
  sk_cross_core_wait_flag(1);
  for (uint32_t i = g * tile; i < (g + 1) * tile; ++i) out[i] = in[i] * sums[g];
}

/* Where each core of a 1:2 group sits: out[3g] from the cube core, out[3g + 1 + sub] from the
 * vector cores: (core type << 8) | (sub-block << 4) | sub-block count, plus 0x1000 * (g + 1). */
SK_KERNEL_TYPED(mix12_where, "ptr", SK_CORE_MIX_1_2)
void mix12_where(uint32_t *out) {
  uint32_t g = sk_block_idx(), cube = sk_core_type() == SK_CORE_TYPE_CUBE;
  uint32_t slot = cube ? 3 * g : 3 * g + 1 + sk_sub_block_idx();
  out[slot] = 0x1000u * (g + 1) | (sk_core_type() << 8) | (sk_sub_block_idx() << 4) | sk_sub_block_num();
}

/* A cube-only and a vector-only kernel: out[block] = tag + block, and the core type seen. */
SK_KERNEL_TYPED(cube_tag, "ptr,u32", SK_CORE_CUBE)
void cube_tag(uint32_t *out, uint32_t tag) { out[sk_block_idx()] = tag + sk_block_idx() + (sk_core_type() << 16); }

SK_KERNEL(vector_tag, "ptr,u32")
void vector_tag(uint32_t *out, uint32_t tag) { out[sk_block_idx()] = tag + sk_block_idx() + (sk_core_type() << 16); }

/* Whole-core hard sync: like a two-phase reduction with sk_sync_all, but through the hard flag,
 * which counts the super kernel's cores. out[i] = in[i] + sum of all partials. */
SK_KERNEL(hard_sync_sum, "ptr,ptr,ptr,u32")
void hard_sync_sum(const uint32_t *in, uint32_t *partials, uint32_t *out, uint32_t n) {
  uint32_t idx = sk_block_idx(), num = sk_block_num(), s = 0, total = 0;
  for (uint32_t i = idx; i < n; i += num) s += in[i];
  partials[idx] = s;
  sk_cross_core_set_flag_all(3);
  sk_cross_core_wait_flag_all(3);
  for (uint32_t j = 0; j < num; ++j) total += partials[j];
  for (uint32_t i = idx; i < n; i += num) out[i] = in[i] + total;
}

/* A vector kernel that uses group flags: refused (group flags pair cube and vector cores). */
SK_KERNEL(vector_uses_group_flag, "ptr")
void vector_uses_group_flag(uint32_t *out) {
  sk_cross_core_set_flag(0);
  out[0] = 1;
}

/* A flag id out of range: the launch is aborted with a report naming the call. */
SK_KERNEL_TYPED(mix_bad_flag, "ptr", SK_CORE_MIX_1_1)
void mix_bad_flag(uint32_t *out) {
  sk_cross_core_set_flag(99);
  out[sk_block_idx()] = 1;
}
