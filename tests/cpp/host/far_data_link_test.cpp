// Kernels (tests/kernels/far_data.c, every variant) whose external variables lie too far apart
// for one placement to reach them all with 32-bit displacements (x86-64) or ADRP (AArch64): one
// in this executable, the others in pages mapped terabytes away. The loaded object must share
// the variables (the host sees its stores and it sees the host's) and compute exactly what the
// same source linked statically into this executable computes.
#include <sys/mman.h>

#include <cstring>

#include "linker_test_support.hpp"

extern "C" {
// The statically linked twin (tests/kernels/far_data.c is part of this executable too) and its
// variables; the loaded kernels bind far_data_a here and the others to far pages.
int far_data_a;
int far_data_b;
double far_data_d;
long far_data_counts[4];
unsigned char far_data_bytes[8];
int far_data_step(int x);
int *far_data_b_address(void);
}

namespace sk::test {
namespace {

struct Vars {
  int *a, *b;
  double *d;
  long *counts;
  unsigned char *bytes;
};

struct Result {
  std::vector<int> returns;
  int a, b;
  double d;
  long counts[4];
  unsigned char bytes[8];
  bool operator==(const Result &o) const {
    return returns == o.returns && a == o.a && b == o.b && d == o.d &&
           !std::memcmp(counts, o.counts, sizeof counts) && !std::memcmp(bytes, o.bytes, sizeof bytes);
  }
};

void reset(const Vars &v) {
  *v.a = 5, *v.b = -3, *v.d = 1.5;
  for (int i = 0; i < 4; ++i) v.counts[i] = i + 1;
  for (int i = 0; i < 8; ++i) v.bytes[i] = static_cast<unsigned char>(0x11 * i);
}

// Steps, with a host store between them that the next step must see.
Result run(const Vars &v, int (*step)(int)) {
  reset(v);
  Result r;
  for (int x : {1, 2, 3, 7, 11}) {
    r.returns.push_back(step(x));
    if (x == 3) *v.b -= 1000, *v.a += 7;
  }
  r.a = *v.a, r.b = *v.b, r.d = *v.d;
  std::memcpy(r.counts, v.counts, sizeof r.counts);
  std::memcpy(r.bytes, v.bytes, sizeof r.bytes);
  return r;
}

// A page at the first free one of `hints`, addresses far from everything a process maps by default.
void *map_far(std::initializer_list<uint64_t> hints) {
  for (uint64_t hint : hints) {
    void *p = mmap(reinterpret_cast<void *>(hint), 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == reinterpret_cast<void *>(hint)) return p;
    if (p != MAP_FAILED) munmap(p, 4096);
  }
  return nullptr;
}

class FarData : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // The second of each: under ThreadSanitizer, whose application ranges leave only low memory.
    far1_ = map_far({0x200000000000ull, 0x4000000000ull});
    far2_ = map_far({0x300000000000ull, 0x6000000000ull});
    if (!far1_ || !far2_) GTEST_SKIP() << "no far page could be mapped at the addresses tried";
  }
  void TearDown() override {
    if (far1_) munmap(far1_, 4096);
    if (far2_) munmap(far2_, 4096);
  }
  void *far1_ = nullptr, *far2_ = nullptr;
};

TEST_P(FarData, SharedVariablesAsInAStaticLink) {
  auto *p1 = static_cast<uint8_t *>(far1_), *p2 = static_cast<uint8_t *>(far2_);
  Vars far{&far_data_a, reinterpret_cast<int *>(p1), reinterpret_cast<double *>(p2),
           reinterpret_cast<long *>(p2 + 64), p1 + 64};
  Resolver r;
  r.names["far_data_a"] = far.a;
  r.names["far_data_b"] = far.b;
  r.names["far_data_d"] = far.d;
  r.names["far_data_counts"] = far.counts;
  r.names["far_data_bytes"] = far.bytes;
  Loaded l;
  sk_status s = load_kernel(GetParam(), "far_data", r.options(), &l);
  if (is_nopic(GetParam()) && s != SK_OK) {
    // Absolute 32-bit addresses of far symbols (movl far_data_b, %eax; R_X86_64_32S) cannot
    // be rewritten: the message names the symbol and the overflow.
    EXPECT_EQ(s, SK_ERR_UNSUPPORTED);
    EXPECT_NE(l.message.find("'far_data_"), std::string::npos) << l.message;
    std::printf("%s: refused as expected: %s\n", GetParam().c_str(), l.message.c_str());
    return;
  }
  ASSERT_EQ(s, SK_OK) << l.message;
#if defined(__x86_64__)
  // gcc's PIE code reaches both with 32-bit displacements: a plain placement could not load it.
  if (GetParam().rfind("gcc", 0) == 0 && !is_pic(GetParam())) {
    bool near_pc32 = false, far_pc32 = false;
    for (const elf::RelocationSection &rs : l.object.relocation_sections)
      for (const elf::Relocation &rel : rs.relocations) {
        near_pc32 |= rel.type == R_X86_64_PC32 && l.object.symbols[rel.symbol].name == "far_data_a";
        far_pc32 |= rel.type == R_X86_64_PC32 && l.object.symbols[rel.symbol].name == "far_data_b";
      }
    EXPECT_TRUE(near_pc32 && far_pc32);
  }
#endif
  EXPECT_EQ(l.fn<int *(*)()>("far_data_b_address")(), far.b);  // the variable itself, no copy
  Vars local{&far_data_a, &far_data_b, &far_data_d, far_data_counts, far_data_bytes};
  const Result expected = run(local, far_data_step);
  const Result got = run(far, l.fn<int (*)(int)>("far_data_step"));
  EXPECT_TRUE(got == expected) << "a=" << got.a << "/" << expected.a << " b=" << got.b << "/" << expected.b
                               << " d=" << got.d << "/" << expected.d;
  *far.d = 42.25;  // a host store the kernel reads
  EXPECT_EQ(l.fn<double (*)()>("far_data_read_d")(), 42.25);
}

// An instruction that cannot run from a stub: the load is refused, naming the object, where the
// instruction is, the function, the symbol, the instruction and why.
TEST_P(FarData, UnrewritableInstructionIsRefusedByName) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "far_data_refused.c is x86-64 assembly (push [rip+x])";
#else
  Resolver r;
  r.names["far_data_a"] = &far_data_a;
  r.names["far_data_b"] = far1_;
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "far_data_refused", r.options(), &l), SK_ERR_UNSUPPORTED);
  for (const char *needle : {"far_data_refused.o", ".text+0x", "'far_data_push'", "'far_data_b'", "'push [rip]'",
                             "stack pointer", "-fPIC"})
    EXPECT_NE(l.message.find(needle), std::string::npos) << needle << " in: " << l.message;
#endif
}

INSTANTIATE_TEST_SUITE_P(AllVariants, FarData, testing::ValuesIn(kernel_variants()), variant_name);

}  // namespace
}  // namespace sk::test
