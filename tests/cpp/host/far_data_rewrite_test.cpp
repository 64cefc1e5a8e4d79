// The far-data rewriter on hand-picked instructions: each runs once in place, reaching its
// variable with a 32-bit displacement, and once rewritten into a jump to a stub that reaches it
// through an absolute address. Both runs start from the same registers, flags and variable, and
// must end with the same registers, flags, variable and an untouched red zone.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "host/linker/far_data/far_data.hpp"

namespace sk::test {
namespace {

struct Page {  // [code | data]: the code page sealed read+execute before running
  uint8_t *base = nullptr;
  size_t size = 0;
  Page() {
    size = 2 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
  }
  ~Page() {
    if (base) munmap(base, size);
  }
  uint8_t *code() const { return base; }
  uint8_t *data() const { return base + size / 2; }
  void seal(bool executable) const {
    ASSERT_EQ(mprotect(base, size / 2, executable ? PROT_READ | PROT_EXEC : PROT_READ | PROT_WRITE), 0);
  }
};

constexpr size_t kStubAt = 256;

}  // namespace
}  // namespace sk::test

#if defined(__x86_64__)
#include "host/linker/far_data/rewrite_x86_64.hpp"

namespace sk::test {
namespace {

// Registers in the encoding's order (rsp's slot unused), the flags, xmm0-3, and the 128 bytes
// below the callee's stack pointer after the call.
struct State {
  uint64_t gpr[16];
  uint64_t flags;
  uint8_t xmm[4][16];
  uint8_t red_zone[128];
};
static_assert(sizeof(State) == 128 + 8 + 64 + 128);

extern "C" void sk_far_data_harness(State *state, void (*code)());

// Loads every register from the state, calls the code, stores every register back. The red zone
// of the code (the 128 bytes below its stack pointer) is filled with 0xa5 first and copied out.
asm(R"(
  .intel_syntax noprefix
  .text
  .globl sk_far_data_harness
  .type sk_far_data_harness, @function
sk_far_data_harness:
  push rbx
  push rbp
  push r12
  push r13
  push r14
  push r15
  push rdi
  push rsi
  lea rax, [rsp-136]
  mov ecx, 128
1:
  mov byte ptr [rax], 0xa5
  inc rax
  dec ecx
  jnz 1b
  push qword ptr [rdi+128]
  popfq
  movdqu xmm0, [rdi+136]
  movdqu xmm1, [rdi+152]
  movdqu xmm2, [rdi+168]
  movdqu xmm3, [rdi+184]
  mov rax, [rdi]
  mov rcx, [rdi+8]
  mov rdx, [rdi+16]
  mov rbx, [rdi+24]
  mov rbp, [rdi+40]
  mov rsi, [rdi+48]
  mov r8, [rdi+64]
  mov r9, [rdi+72]
  mov r10, [rdi+80]
  mov r11, [rdi+88]
  mov r12, [rdi+96]
  mov r13, [rdi+104]
  mov r14, [rdi+112]
  mov r15, [rdi+120]
  mov rdi, [rdi+56]
  call qword ptr [rsp]
  push rdi
  mov rdi, [rsp+16]
  pop qword ptr [rdi+56]
  mov [rdi], rax
  mov [rdi+8], rcx
  mov [rdi+16], rdx
  mov [rdi+24], rbx
  mov [rdi+40], rbp
  mov [rdi+48], rsi
  mov [rdi+64], r8
  mov [rdi+72], r9
  mov [rdi+80], r10
  mov [rdi+88], r11
  mov [rdi+96], r12
  mov [rdi+104], r13
  mov [rdi+112], r14
  mov [rdi+120], r15
  pushfq
  pop qword ptr [rdi+128]
  movdqu [rdi+136], xmm0
  movdqu [rdi+152], xmm1
  movdqu [rdi+168], xmm2
  movdqu [rdi+184], xmm3
  cld
  lea rsi, [rsp-136]
  add rdi, 200
  mov ecx, 128
  rep movsb
  add rsp, 16
  pop r15
  pop r14
  pop r13
  pop r12
  pop rbp
  pop rbx
  ret
  .size sk_far_data_harness, .-sk_far_data_harness
  .att_syntax
)");

struct Case {
  const char *name;
  std::vector<uint8_t> bytes;  // the displacement (zero) at `disp`
  unsigned disp;
  bool avx = false;
};

// Encodings as GNU as writes them.
const Case kCases[] = {
    {"mov rax, [rip+v]", {0x48, 0x8b, 0x05, 0, 0, 0, 0}, 3},
    {"mov [rip+v], rcx", {0x48, 0x89, 0x0d, 0, 0, 0, 0}, 3},
    {"mov eax, [rip+v]", {0x8b, 0x05, 0, 0, 0, 0}, 2},
    {"movss xmm0, [rip+v]", {0xf3, 0x0f, 0x10, 0x05, 0, 0, 0, 0}, 4},
    {"movsd xmm1, [rip+v]", {0xf2, 0x0f, 0x10, 0x0d, 0, 0, 0, 0}, 4},
    {"movsd [rip+v], xmm2", {0xf2, 0x0f, 0x11, 0x15, 0, 0, 0, 0}, 4},
    {"cmp dword [rip+v], 5", {0x83, 0x3d, 0, 0, 0, 0, 0x05}, 2},
    {"cmp dword [rip+v], 0x12345", {0x81, 0x3d, 0, 0, 0, 0, 0x45, 0x23, 0x01, 0x00}, 2},
    {"add [rip+v], eax", {0x01, 0x05, 0, 0, 0, 0}, 2},
    {"or [rip+v], rdx", {0x48, 0x09, 0x15, 0, 0, 0, 0}, 3},
    {"and dword [rip+v], 0xff00ff", {0x81, 0x25, 0, 0, 0, 0, 0xff, 0x00, 0xff, 0x00}, 2},
    {"lea rax, [rip+v]", {0x48, 0x8d, 0x05, 0, 0, 0, 0}, 3},
    {"lea r11, [rip+v]", {0x4c, 0x8d, 0x1d, 0, 0, 0, 0}, 3},
    {"lea esi, [rip+v]", {0x8d, 0x35, 0, 0, 0, 0}, 2},
    {"movzx eax, byte [rip+v]", {0x0f, 0xb6, 0x05, 0, 0, 0, 0}, 3},
    {"movzx r9d, word [rip+v]", {0x44, 0x0f, 0xb7, 0x0d, 0, 0, 0, 0}, 4},
    {"addsd xmm0, [rip+v]", {0xf2, 0x0f, 0x58, 0x05, 0, 0, 0, 0}, 4},
    {"vaddps xmm0, xmm1, [rip+v]", {0xc5, 0xf0, 0x58, 0x05, 0, 0, 0, 0}, 4, true},
    {"vmovups ymm2, [rip+v]", {0xc5, 0xfc, 0x10, 0x15, 0, 0, 0, 0}, 4, true},
    {"lock cmpxchg [rip+v], rcx", {0xf0, 0x48, 0x0f, 0xb1, 0x0d, 0, 0, 0, 0}, 5},
    {"mov ah, [rip+v]", {0x8a, 0x25, 0, 0, 0, 0}, 2},
    {"inc qword [rip+v]", {0x48, 0xff, 0x05, 0, 0, 0, 0}, 3},
    {"sub r15, [rip+v]", {0x4c, 0x2b, 0x3d, 0, 0, 0, 0}, 3},
    {"imul rbx, [rip+v], 7", {0x48, 0x6b, 0x1d, 0, 0, 0, 0, 0x07}, 3},
};

State initial(uint64_t salt) {
  State s{};
  for (int i = 0; i < 16; ++i) s.gpr[i] = 0x0101010101010101ull * (i + 1) ^ salt;
  s.gpr[0] = 0x0000000012345678ull;    // rax: cmpxchg compares with it
  s.flags = 0x2 | 0x1 | 0x80 | 0x800;  // CF, SF, OF set; ZF, PF, AF clear
  for (int r = 0; r < 4; ++r)
    for (int b = 0; b < 16; ++b) s.xmm[r][b] = static_cast<uint8_t>(0x40 + 16 * r + b);
  return s;
}

void fill_variable(uint8_t *v) {  // 32 bytes: ymm loads read them all
  const uint8_t bytes[32] = {0x78, 0x56, 0x34, 0x12, 0, 0, 0, 0, 0x00, 0x00, 0x80, 0x3f, 0,  0,  0xf0, 0x3f,
                             1,    2,    3,    4,    5, 6, 7, 8, 9,    10,   11,   12,   13, 14, 15,   16};
  std::memcpy(v, bytes, sizeof bytes);
}

// Runs `c` on the variable at data()+64, in place or rewritten; returns the state afterwards and
// the variable's bytes.
void run(const Case &c, bool rewrite, Page &page, State *state, std::vector<uint8_t> *variable) {
  const host::FarDataRewriter &rw = host::x86_64::kFarDataRewriter;
  page.seal(false);
  uint8_t *code = page.code();
  std::memset(code, 0xcc, page.size / 2);
  std::memcpy(code, c.bytes.data(), c.bytes.size());
  code[c.bytes.size()] = 0xc3;  // ret
  uint8_t *var = page.data() + 64;
  fill_variable(var);
  const uint64_t at = reinterpret_cast<uint64_t>(code), end = at + c.bytes.size();
  const uint64_t v = reinterpret_cast<uint64_t>(var);
  if (rewrite) {
    host::FarDataSite site;
    std::string why;
    ASSERT_TRUE(rw.plan(code, c.bytes.size() + 1, 0, c.disp, &site, &why)) << c.name << ": " << why;
    ASSERT_EQ(site.offset, 0u);
    ASSERT_EQ(site.length, c.bytes.size());
    // S + A of the relocation: A = -(bytes from the field to the end of the instruction).
    const uint64_t target = v - (c.bytes.size() - c.disp);
    ASSERT_TRUE(rw.write(code, at, site, c.disp, code + kStubAt, at + kStubAt, target, &why))
        << c.name << ": " << why;
    ASSERT_EQ(code[0], 0xe9) << c.name;  // a jmp to the stub
  } else {
    const int32_t disp = static_cast<int32_t>(static_cast<int64_t>(v - end));
    std::memcpy(code + c.disp, &disp, 4);
  }
  page.seal(true);
  *state = initial(0x5a5a0000);
  sk_far_data_harness(state, reinterpret_cast<void (*)()>(code));
  variable->assign(var, var + 32);
}

TEST(FarDataRewriteX86, EveryRegisterFlagAndTheRedZoneAsInPlace) {
  Page page;
  ASSERT_NE(page.base, nullptr);
  for (const Case &c : kCases) {
    if (c.avx && !__builtin_cpu_supports("avx")) {
      std::printf("skipping %s: no AVX on this CPU\n", c.name);
      continue;
    }
    State direct, rewritten;
    std::vector<uint8_t> var_direct, var_rewritten;
    run(c, false, page, &direct, &var_direct);
    run(c, true, page, &rewritten, &var_rewritten);
    for (int i = 0; i < 16; ++i)
      if (i != 4) EXPECT_EQ(direct.gpr[i], rewritten.gpr[i]) << c.name << ": register " << i;
    EXPECT_EQ(direct.flags & 0xcd5, rewritten.flags & 0xcd5) << c.name << ": flags";
    EXPECT_EQ(0, std::memcmp(direct.xmm, rewritten.xmm, sizeof direct.xmm)) << c.name << ": xmm0-3";
    EXPECT_EQ(var_direct, var_rewritten) << c.name << ": the variable";
    for (uint8_t b : rewritten.red_zone) ASSERT_EQ(b, 0xa5) << c.name << ": the red zone";
  }
  // The cases change what they should: a load is seen, a store lands.
  State s;
  std::vector<uint8_t> var;
  run(kCases[0], true, page, &s, &var);
  EXPECT_EQ(s.gpr[0], 0x12345678u);
  run(kCases[1], true, page, &s, &var);
  uint64_t stored;
  std::memcpy(&stored, var.data(), 8);
  EXPECT_EQ(stored, initial(0x5a5a0000).gpr[1]);
}

TEST(FarDataRewriteX86, RefusesWhatCannotRunFromAStub) {
  const struct {
    std::vector<uint8_t> bytes;
    const char *why;
  } refused[] = {
      {{0xff, 0x35, 0, 0, 0, 0}, "stack pointer"},  // push qword [rip+v]
      {{0xff, 0x25, 0, 0, 0, 0}, "branch"},         // jmp qword [rip+v]
      {{0xff, 0x15, 0, 0, 0, 0}, "branch"},         // call qword [rip+v]
  };
  for (const auto &r : refused) {
    host::FarDataSite site;
    std::string why;
    EXPECT_FALSE(host::x86_64::kFarDataRewriter.plan(r.bytes.data(), r.bytes.size(), 0, 2, &site, &why));
    EXPECT_NE(why.find(r.why), std::string::npos) << why;
    EXPECT_NE(why.find("[rip]"), std::string::npos) << why;  // names the instruction
  }
  // The field must be the displacement of the instruction decoding reaches.
  const uint8_t mov[] = {0x48, 0x8b, 0x05, 0, 0, 0, 0, 0x90};
  host::FarDataSite site;
  std::string why;
  EXPECT_FALSE(host::x86_64::kFarDataRewriter.plan(mov, sizeof mov, 0, 4, &site, &why));
  EXPECT_NE(why.find("not the RIP-relative displacement"), std::string::npos) << why;
  const uint8_t junk[] = {0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06};  // push es: not in 64-bit mode
  EXPECT_FALSE(host::x86_64::kFarDataRewriter.plan(junk, sizeof junk, 0, 4, &site, &why));
  EXPECT_NE(why.find("do not decode"), std::string::npos) << why;
}

}  // namespace
}  // namespace sk::test
#elif defined(__aarch64__)

namespace sk::test {
namespace {

// adrp x5, <page>; add x0, x5, :lo12:<variable>; ret, with the ADRP rewritten into a branch to a
// veneer. The address comes out the same, the flags are untouched, and a variable beyond ADRP's
// ±4 GiB (a page mapped far away) is reached as well.
uint64_t run_adrp(Page &page, uint64_t variable, uint32_t nzcv_in, uint32_t *nzcv_out) {
  const host::FarDataRewriter *rw = host::far_data_rewriter();
  page.seal(false);
  uint32_t *code = reinterpret_cast<uint32_t *>(page.code());
  // msr nzcv, x1; adrp x5, 0; add x0, x5, #lo12; mrs x1, nzcv; str w1, [x2]; ret
  code[0] = 0xd51b4201;
  code[1] = 0x90000005;
  code[2] = 0x910000a0 | static_cast<uint32_t>((variable & 0xfff) << 10);
  code[3] = 0xd53b4201;
  code[4] = 0xb9000041;
  code[5] = 0xd65f03c0;
  const uint64_t at = reinterpret_cast<uint64_t>(code);
  host::FarDataSite site;
  std::string why;
  EXPECT_TRUE(rw->plan(page.code(), 24, 0, 4, &site, &why)) << why;
  EXPECT_TRUE(rw->write(page.code() + 4, at + 4, site, 0, page.code() + kStubAt, at + kStubAt, variable, &why))
      << why;
  page.seal(true);
  __builtin___clear_cache(reinterpret_cast<char *>(page.code()),
                          reinterpret_cast<char *>(page.code() + page.size / 2));
  auto fn = reinterpret_cast<uint64_t (*)(uint64_t, uint64_t, uint32_t *)>(page.code());
  return fn(0, static_cast<uint64_t>(nzcv_in), nzcv_out);
}

TEST(FarDataVeneerAArch64, AdrpBecomesALiteralLoadOfThePage) {
  Page page;
  ASSERT_NE(page.base, nullptr);
  uint32_t nzcv = 0;
  const uint64_t near_var = reinterpret_cast<uint64_t>(page.data() + 0x123);
  EXPECT_EQ(run_adrp(page, near_var, 0xa0000000u, &nzcv), near_var);
  EXPECT_EQ(nzcv, 0xa0000000u);
  const uint64_t far_var = near_var ^ (1ull << 40);  // beyond ±4 GiB: only an address reaches it
  EXPECT_EQ(run_adrp(page, far_var, 0x60000000u, &nzcv), far_var);
  EXPECT_EQ(nzcv, 0x60000000u);
  std::string why;
  host::FarDataSite site;
  const uint32_t nop = 0xd503201f;
  EXPECT_FALSE(host::far_data_rewriter()->plan(reinterpret_cast<const uint8_t *>(&nop), 4, 0, 0, &site, &why));
  EXPECT_NE(why.find("not an ADRP"), std::string::npos) << why;
}

}  // namespace
}  // namespace sk::test
#endif
