// Aggregate signatures: parsed, printed back as libsk prints them, laid out as the compiler lays
// out the same struct (size, alignment, slots), copied into argument slots as its bytes; and
// every malformed one refused naming the parameter. The end-to-end checks that kernels receive
// such structs as their compilers expect are tests/c/test_capi_aggregates.c (host) and
// CudaLink.AggregatesAndArgumentsReadByReferenceFollowThePtxAbi (CUDA).
#include "common/signature.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "common/error.hpp"

namespace sk {
namespace {

Signature parse(const std::string &text) {
  Signature sig;
  EXPECT_EQ(parse_signature(text, "kernel 'k'", &sig), SK_OK) << last_error();
  return sig;
}

struct F2 {
  float x, y;
};
struct DI {
  double d;
  int32_t i;
};
struct I5 {
  int32_t a[5];
};
struct CF {
  int8_t c;
  float f;
};
struct Nest {
  F2 p[2];
  int16_t t;
};
struct Bytes3 {
  uint8_t b[3];
};
struct Mixed {
  int8_t c;
  Nest n;
  double d;
  uint16_t h;
};

template <class T>
void expect_layout(const std::string &token) {
  SCOPED_TRACE(token);
  const Signature sig = parse("ptr," + token);
  ASSERT_EQ(sig.size(), 2u);
  const ParamType &t = sig[1];
  EXPECT_TRUE(t.is_struct());
  EXPECT_EQ(t.size, sizeof(T));
  EXPECT_EQ(t.align, alignof(T));
  EXPECT_EQ(slot_count(t), (sizeof(T) + 7) / 8);
  EXPECT_EQ(type_to_string(t), token);
  EXPECT_EQ(signature_to_string(sig), "ptr," + token);
}

TEST(Signature, AggregatesAreLaidOutAsTheCompilerLaysOutTheStruct) {
  expect_layout<F2>("{f32,f32}");
  expect_layout<DI>("{f64,i32}");
  expect_layout<I5>("{i32[5]}");
  expect_layout<CF>("{i8,f32}");
  expect_layout<Nest>("{{f32,f32}[2],i16}");
  expect_layout<Bytes3>("{u8[3]}");
  expect_layout<Mixed>("{i8,{{f32,f32}[2],i16},f64,u16}");
}

TEST(Signature, SpacesAreAllowedAroundEveryToken) {
  EXPECT_EQ(signature_to_string(parse(" ptr , { f32 , { i8 , u16 } [ 3 ] } ,f64 ")), "ptr,{f32,{i8,u16}[3]},f64");
  EXPECT_EQ(parse("").size(), 0u);
}

TEST(Signature, EachParameterHasItsFirstSlot) {
  const Signature sig = parse("ptr,{f64,i32},u8,{i32[5]},{f32,f32}");
  EXPECT_EQ(slot_offsets(sig), (std::vector<uint32_t>{0, 1, 3, 4, 7, 8}));
  EXPECT_EQ(signature_slots(sig), 8u);
}

// `@N` is C's alignas(N) on an aggregate: the alignment raised (never lowered), the size a
// multiple of it; printed back where it exceeds the members' own. Such a parameter starts on a
// slot of its alignment.
struct alignas(64) TensorMapLike {
  uint64_t words[16];
};
struct Inner16 {
  alignas(16) struct { uint8_t b; } c;
};
TEST(Signature, AnAggregateMayBeAlignedBeyondItsMembers) {
  const Signature sig = parse("u32,{u64[16]}@64,{u8[3]}@16,f32,{f64}@8");
  EXPECT_EQ(sig[1].align, alignof(TensorMapLike));
  EXPECT_EQ(sig[1].size, sizeof(TensorMapLike));
  EXPECT_EQ(sig[2].size, 16u);
  EXPECT_EQ(signature_to_string(sig), "u32,{u64[16]}@64,{u8[3]}@16,f32,{f64}");
  EXPECT_EQ(slot_offsets(sig), (std::vector<uint32_t>{0, 8, 24, 26, 27, 28}));
  EXPECT_EQ(signature_slots(sig), 28u);
  EXPECT_EQ(signature_slot_align(sig), 8u);
  EXPECT_EQ(parse("{{u8}@16,u8}")[0].size, 32u);
  EXPECT_EQ(parse("{{u8}@16}")[0].align, alignof(Inner16));
  Signature bad;
  EXPECT_EQ(parse_signature("{u8}@3", "k", &bad), SK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sk::last_error())
                .find("parameter 0 has an alignment at byte 4 that is not a power of two from 1 to 256"),
            std::string::npos)
      << sk::last_error();
  EXPECT_EQ(parse_signature("i8,{f64}@4", "k", &bad), SK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sk::last_error())
                .find("parameter 1 aligns the aggregate (the '{' at byte 3) to 4, less than its members' 8"),
            std::string::npos)
      << sk::last_error();
  EXPECT_EQ(parse_signature("{u8[1000]}@512", "k", &bad), SK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(parse("{u8[1000]}@256")[0].size, 1024u) << "the largest aggregate, rounded up";
}

TEST(Signature, AnAggregatesSlotsHoldItsBytesThenZeros) {
  const Signature sig = parse("{i32[5]}");
  const I5 value{{1, -2, 3, -4, 5}};
  uint64_t slots[3];
  std::memset(slots, 0xee, sizeof slots);
  to_slots(sig[0], &value, slots);
  EXPECT_EQ(std::memcmp(slots, &value, sizeof value), 0);
  EXPECT_EQ(slots[2] >> 32, 0u);
  // A scalar is widened as before: an i8 sign-extended into its one slot.
  const int8_t minus = -3;
  to_slots(ArgType::I8, &minus, slots);
  EXPECT_EQ(slots[0], static_cast<uint64_t>(int64_t{-3}));
}

// NCCL's kernels take a 4096-byte struct aligned 16 (what their PTX declares, `.param .align
// 16 .b8 p[4096]`): the largest aggregate, its bytes in 512 slots.
TEST(Signature, AFourKiBStructIsTheLargestAggregate) {
  const Signature sig = parse("ptr,{u64[4096]}@16");
  ASSERT_EQ(sig.size(), 2u);
  EXPECT_EQ(sig[1].size, 32768u);
  EXPECT_EQ(sig[1].align, 16u);
  std::vector<uint8_t> value(32768);
  for (size_t i = 0; i < value.size(); ++i) value[i] = (uint8_t)(i * 7);
  std::vector<uint64_t> slots(4096, ~uint64_t{0});
  to_slots(sig[1], value.data(), slots.data());
  EXPECT_EQ(std::memcmp(slots.data(), value.data(), value.size()), 0);
  Signature more;
  EXPECT_NE(parse_signature("{u64[4096],u8}", "k", &more), SK_OK);
}

TEST(Signature, MalformedAggregatesNameTheParameterAndTheFault) {
  const std::pair<const char *, const char *> bad[] = {
      {"ptr,{f32", "parameter 1 has a '{' at byte 4 that is not closed"},
      {"ptr,{}", "parameter 1 has an empty aggregate '{}' at byte 4"},
      {"{f32,f33}", "parameter 0 has a member 'f33', expected one of"},
      {"ptr,i32[4]", "parameter 1 is an array 'i32[...]'"},
      {"{i32[0]}", "array length '0'"},
      {"{i32[x]}", "array length 'x'"},
      {"{i32[4}", "'[' at byte 4 that is not closed"},
      {"{u8[32769]}", "array length '32769' (at byte 3) that is not a number from 1 to 32768"},
      {"{f64[3000],f64[3000]}", "of more than 32768 bytes"},
      {"{{{{{{{{{u8}}}}}}}}}", "nests aggregates more than 8 deep"},
      {"f32}", "parameter 0 has an unexpected '}' at byte 3"},
      {"{f32}f32", "unexpected 'f' at byte 5"},
      {"ptr,,u32", "parameter 1 is ''"},
  };
  for (const auto &[text, needle] : bad) {
    Signature sig{ArgType::U8};
    EXPECT_EQ(parse_signature(text, "kernel 'k'", &sig), SK_ERR_INVALID_ARGUMENT) << text;
    EXPECT_NE(std::string(last_error()).find(needle), std::string::npos) << text << ": " << last_error();
    EXPECT_NE(std::string(last_error()).find("kernel 'k'"), std::string::npos) << last_error();
    EXPECT_EQ(sig.size(), 1u) << "out is untouched on failure";
  }
  // Eight levels are allowed.
  EXPECT_EQ(type_to_string(parse("{{{{{{{{u8}}}}}}}}")[0]), "{{{{{{{{u8}}}}}}}}");
}

TEST(Signature, AStructIsNotItsMembers) {
  EXPECT_NE(parse("ptr,{f32,f32}"), parse("ptr,f32,f32"));
  EXPECT_NE(parse("{f32,f32}"), parse("{f32[2]}"));  // the same bytes, another type
  EXPECT_EQ(parse("{ f32 , f32 }"), parse("{f32,f32}"));
}

}  // namespace
}  // namespace sk
