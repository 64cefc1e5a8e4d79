// prepare_call: which way a signature is called (direct, register map, libffi) and, for a
// register map, which argument slot each register and stack word carries. The end-to-end
// check that kernels compiled by gcc and clang receive their arguments this way is
// Fusion.WideSignaturesArriveIntactThroughRegisterMapAndLibffi and
// Fusion.EveryParameterTypeArrivesIntact.
#include "host/executor/kernel_call.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace sk::host {
namespace {

std::unique_ptr<CallInterface> plan(const Signature &sig) {
  std::unique_ptr<CallInterface> ci;
  EXPECT_EQ(prepare_call(sig, "test", &ci), SK_OK);
  return ci;
}

// The expected map: integer registers, FP registers and stack words, each padded with slot 0.
std::vector<uint8_t> map_of(std::vector<uint8_t> ints, std::vector<uint8_t> fps, std::vector<uint8_t> words) {
  ints.resize(kIntRegs, 0);
  fps.resize(kFpRegs, 0);
  words.resize(kStackWords, 0);
  std::vector<uint8_t> m = ints;
  m.insert(m.end(), fps.begin(), fps.end());
  m.insert(m.end(), words.begin(), words.end());
  return m;
}

std::vector<uint8_t> map_of(const CallInterface &ci) { return {std::begin(ci.map), std::end(ci.map)}; }

constexpr ArgType P = ArgType::Ptr, U32 = ArgType::U32, I8 = ArgType::I8, F32 = ArgType::F32, F64 = ArgType::F64;

TEST(KernelCall, PointersAndIntegersUpToSixAreCalledDirectly) {
  for (const Signature &sig : {Signature{}, Signature{P}, Signature{P, P, U32, I8, P, U32}}) {
    auto ci = plan(sig);
    EXPECT_EQ(ci->kind, CallKind::Direct) << signature_to_string(sig);
  }
}

TEST(KernelCall, AFloatParameterGoesToTheFpRegistersInOrder) {
  // axpy(x, y, a, n): x, y and n in integer registers 0-2, a in FP register 0.
  auto ci = plan({P, P, F32, U32});
  ASSERT_EQ(ci->kind, CallKind::Mapped);
  EXPECT_EQ(ci->stack_words, 0);
  EXPECT_EQ(map_of(*ci), map_of({0, 1, 3}, {2}, {}));
  // Floats and doubles share the FP registers; integers keep their own count.
  ci = plan({F64, P, F32, F64, U32});
  ASSERT_EQ(ci->kind, CallKind::Mapped);
  EXPECT_EQ(map_of(*ci), map_of({1, 4}, {0, 2, 3}, {}));
}

TEST(KernelCall, ParametersPastTheRegistersBecomeStackWordsInParameterOrder) {
  // Seven integers: the seventh is a stack word on x86-64 (6 registers), a register on AArch64.
  auto ci = plan({P, P, P, P, P, P, U32});
  ASSERT_EQ(ci->kind, CallKind::Mapped);
  if (kIntRegs == 6) {
    EXPECT_EQ(ci->stack_words, 1);
    EXPECT_EQ(map_of(*ci), map_of({0, 1, 2, 3, 4, 5}, {}, {6}));
  } else {
    EXPECT_EQ(ci->stack_words, 0);
    EXPECT_EQ(map_of(*ci), map_of({0, 1, 2, 3, 4, 5, 6}, {}, {}));
  }
  // Ten doubles and a pointer between them: eight FP registers, then stack words for the
  // ninth and tenth, with the pointer still in an integer register.
  Signature sig(10, F64);
  sig.insert(sig.begin() + 9, P);
  ci = plan(sig);
  ASSERT_EQ(ci->kind, CallKind::Mapped);
  EXPECT_EQ(ci->stack_words, 2);
  EXPECT_EQ(map_of(*ci), map_of({9}, {0, 1, 2, 3, 4, 5, 6, 7}, {8, 10}));
}

TEST(KernelCall, MoreStackWordsThanTheMappedCallPassesGoThroughLibffi) {
  Signature fits(1 + kFpRegs + kStackWords, F64);  // a pointer, then exactly enough doubles
  fits[0] = P;
  auto ci = plan(fits);
  ASSERT_EQ(ci->kind, CallKind::Mapped);
  EXPECT_EQ(ci->stack_words, kStackWords);
  fits.push_back(F32);
  ci = plan(fits);
  EXPECT_EQ(ci->kind, CallKind::Libffi);
}

TEST(KernelCall, AggregatesGoThroughLibffiAsStructTypes) {
  // libffi classifies a struct as the convention does; the register map knows no struct.
  Signature sig;
  ASSERT_EQ(parse_signature("ptr,{f32,f32},{i32[5]},{{f32,f32}[2],i16}", "k", &sig), SK_OK);
  auto ci = plan(sig);
  ASSERT_EQ(ci->kind, CallKind::Libffi);
  ASSERT_EQ(ci->aggregates.size(), 4u);  // the nested {f32,f32} too
  EXPECT_EQ(ci->types[1]->type, FFI_TYPE_STRUCT);
  for (size_t i = 1; i < sig.size(); ++i) {
    EXPECT_EQ(ci->types[i]->size, sig[i].size) << i;
    EXPECT_EQ(ci->types[i]->alignment, sig[i].align) << i;
  }
  // {i32[5]}: an array member is its elements.
  size_t n = 0;
  while (ci->types[2]->elements[n]) ++n;
  EXPECT_EQ(n, 5u);
}

TEST(KernelCall, KindsHaveNames) {
  EXPECT_STREQ(call_kind_name(CallKind::Direct), "direct");
  EXPECT_STREQ(call_kind_name(CallKind::Mapped), "register map");
  EXPECT_STREQ(call_kind_name(CallKind::Libffi), "libffi");
}

}  // namespace
}  // namespace sk::host
