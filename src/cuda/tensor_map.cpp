#include "cuda/tensor_map.hpp"

#include <cstdio>
#include <cstring>

#include "common/error.hpp"

namespace sk::cuda {

namespace {

// Bytes of an element of each CUtensorMapDataType sk.h lists (0 to 12); the floating-point
// ones start at 6 (f16).
constexpr uint32_t kElementBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
constexpr uint32_t kDataTypes = sizeof kElementBytes / sizeof kElementBytes[0];
constexpr uint32_t kFirstFloatType = 6;
constexpr uint32_t kMaxRank = 5;
constexpr uint32_t kInterleave32 = 2;
constexpr uint32_t kSwizzle32 = 1;

}  // namespace

sk_status check_tensor_map(const sk_tensor_map_desc &d, const char *call) {
  if (d.struct_size < sizeof(sk_tensor_map_desc))
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: desc->struct_size %u is too small (sizeof(sk_tensor_map_desc) is %zu)",
                call, d.struct_size, sizeof(sk_tensor_map_desc));
  auto bad = [&](const char *field, const char *why, uint64_t value) {
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: desc->%s is %llu: %s", call, field, (unsigned long long)value, why);
  };
  if (d.data_type >= kDataTypes) return bad("data_type", "not a data type sk.h lists", d.data_type);
  if (d.interleave > 2) return bad("interleave", "not 0 (none), 1 (16 B) or 2 (32 B)", d.interleave);
  if (d.swizzle > 3) return bad("swizzle", "not 0 (none), 1 (32 B), 2 (64 B) or 3 (128 B)", d.swizzle);
  if (d.l2_promotion > 3)
    return bad("l2_promotion", "not 0 (none), 1 (64 B), 2 (128 B) or 3 (256 B)", d.l2_promotion);
  if (d.oob_fill > 1) return bad("oob_fill", "not 0 (zeros) or 1 (NaN)", d.oob_fill);
  if (d.oob_fill && d.data_type < kFirstFloatType)
    return bad("oob_fill", "NaN fills only a floating-point data type (6 to 12)", d.oob_fill);
  if (d.rank < 1 || d.rank > kMaxRank) return bad("rank", "a tensor map has 1 to 5 dimensions", d.rank);
  if (d.interleave && d.rank < 3) return bad("rank", "an interleaved tensor map has 3 to 5 dimensions", d.rank);
  if (d.interleave == kInterleave32 && d.swizzle != kSwizzle32)
    return bad("swizzle", "interleave 2 (32 B) needs swizzle 1 (32 B)", d.swizzle);
  const uint64_t align = d.interleave == kInterleave32 ? 32 : 16;
  const auto address = reinterpret_cast<uintptr_t>(d.address);
  if (address == 0 || address % align)
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: desc->address %p is not %llu-byte aligned device memory", call,
                d.address, (unsigned long long)align);
  bool element_strides = false;  // given for each dimension, or for none (1 each)
  for (uint32_t i = 0; i < d.rank; i++) element_strides |= d.element_strides[i] != 0;
  char field[32];
  for (uint32_t i = 0; i < d.rank; i++) {
    std::snprintf(field, sizeof field, "dims[%u]", i);
    if (d.dims[i] == 0 || d.dims[i] > (uint64_t{1} << 32))
      return bad(field, "each dimension has 1 to 2^32 elements", d.dims[i]);
    std::snprintf(field, sizeof field, "box[%u]", i);
    if (d.box[i] == 0 || d.box[i] > 256)
      return bad(field, "a box has 1 to 256 elements in each dimension", d.box[i]);
    std::snprintf(field, sizeof field, "element_strides[%u]", i);
    if (d.element_strides[i] > 8) return bad(field, "an element stride is 1 to 8 (0: 1)", d.element_strides[i]);
    if (element_strides && !d.element_strides[i])
      return bad(field, "give every element stride or none", d.element_strides[i]);
  }
  for (uint32_t i = 0; i + 1 < d.rank; i++) {
    std::snprintf(field, sizeof field, "strides[%u]", i);
    if (d.strides[i] % align || d.strides[i] == 0 || d.strides[i] >= (uint64_t{1} << 40))
      return bad(field,
                 align == 32 ? "a stride is a nonzero multiple of 32 bytes below 2^40 with interleave 2"
                             : "a stride is a nonzero multiple of 16 bytes below 2^40",
                 d.strides[i]);
  }
  const uint64_t inner = uint64_t{d.box[0]} * kElementBytes[d.data_type];
  if (!d.interleave && inner % 16) return bad("box[0]", "its elements are not a multiple of 16 bytes", d.box[0]);
  if (!d.interleave && d.swizzle && inner > (uint64_t{16} << d.swizzle))
    return bad("box[0]", "its elements span more bytes than the swizzle (32, 64 or 128)", d.box[0]);
  return SK_OK;
}

sk_status encode_tensor_map(const CudaDevice &gpu, const sk_tensor_map_desc &d, void *out) {
  const char *call = "sk_tensor_map_encode";
  if (sk_status st = check_tensor_map(d, call)) return st;
  uint32_t element_strides[kMaxRank] = {1, 1, 1, 1, 1};
  for (uint32_t i = 0; i < d.rank; i++)
    if (d.element_strides[i]) element_strides[i] = d.element_strides[i];
  // Encoding reads no device state, but a driver may want a context, as every other call has.
  ContextScope ctx(gpu, call);
  if (ctx.status() != SK_OK) return ctx.status();
  // The driver writes a CUtensorMap, which cuda.h aligns to 128 bytes; the caller's buffer
  // need not be.
  alignas(128) unsigned char map[SK_TENSOR_MAP_BYTES];
  CUresult r = gpu.api().cuTensorMapEncodeTiled(map, (int)d.data_type, d.rank, d.address, d.dims, d.strides, d.box,
                                                element_strides, (int)d.interleave, (int)d.swizzle,
                                                (int)d.l2_promotion, (int)d.oob_fill);
  if (sk_status st = gpu.check(r, call, "cuTensorMapEncodeTiled")) return st;
  std::memcpy(out, map, sizeof map);
  return SK_OK;
}

}  // namespace sk::cuda
