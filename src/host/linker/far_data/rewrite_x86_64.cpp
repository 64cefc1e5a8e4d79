// The stub for `op ..., [rip+disp32]`, entered by a jmp that replaces the instruction:
//
//   lea rsp, [rsp-128]       ; step over the red zone, which the code may be using
//   push scratch             ; a general register the instruction does not name
//   movabs scratch, target
//   op ..., [scratch]        ; the original instruction, re-encoded
//   pop scratch
//   lea rsp, [rsp+128]
//   jmp <after the original instruction>
//
// lea, push, pop, movabs and jmp leave the flags alone, so the instruction sees and sets them
// as it did in place. The instruction may not use the stack pointer (it moved) nor be a branch.
#include "host/linker/far_data/rewrite_x86_64.hpp"

#include <Zydis/Zydis.h>
#include <elf.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace sk::host::x86_64 {
namespace {

constexpr size_t kStubSize = 64;
constexpr uint8_t kInt3 = 0xcc;

struct Decoded {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

bool decode(const uint8_t *code, size_t size, Decoded *d) {
  ZydisDecoder decoder;
  ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code, size, &d->insn, d->ops));
}

std::string text(const Decoded &d) {
  ZydisFormatter f;
  ZydisFormatterInit(&f, ZYDIS_FORMATTER_STYLE_INTEL);
  char buf[128];
  if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&f, &d.insn, d.ops, d.insn.operand_count_visible, buf,
                                                    sizeof buf, ZYDIS_RUNTIME_ADDRESS_NONE, nullptr)))
    return "(unformattable)";
  return buf;
}

ZydisRegister full(ZydisRegister r) {
  return r == ZYDIS_REGISTER_NONE ? r : ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
}

bool is_stack_pointer(ZydisRegister r) { return full(r) == ZYDIS_REGISTER_RSP; }

// The memory operand addressed as [rip+disp] (index of it in d.ops), or -1.
int rip_operand(const Decoded &d) {
  for (int i = 0; i < d.insn.operand_count; ++i)
    if (d.ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && d.ops[i].mem.base == ZYDIS_REGISTER_RIP) return i;
  return -1;
}

// Why the instruction cannot run from a stub, or "" when it can.
std::string refusal(const Decoded &d) {
  switch (d.insn.meta.category) {
    case ZYDIS_CATEGORY_CALL:
    case ZYDIS_CATEGORY_COND_BR:
    case ZYDIS_CATEGORY_UNCOND_BR:
    case ZYDIS_CATEGORY_RET: return "it is a branch";
    default: break;
  }
  if (d.insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE && rip_operand(d) < 0) return "it is a branch";
  if (d.insn.address_width != 64) return "it uses 32-bit addressing";
  if (d.insn.length < 5) return "it is shorter than a jump";
  for (int i = 0; i < d.insn.operand_count; ++i) {
    const ZydisDecodedOperand &op = d.ops[i];
    if ((op.type == ZYDIS_OPERAND_TYPE_REGISTER && is_stack_pointer(op.reg.value)) ||
        (op.type == ZYDIS_OPERAND_TYPE_MEMORY && (is_stack_pointer(op.mem.base) || is_stack_pointer(op.mem.index))))
      return "it uses the stack pointer, which the stub moves";
    if (op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.base == ZYDIS_REGISTER_RIP &&
        op.mem.segment != ZYDIS_REGISTER_DS && op.mem.segment != ZYDIS_REGISTER_NONE)
      return "it has a segment override";
  }
  return "";
}

void put(uint8_t *&p, std::initializer_list<uint8_t> bytes) {
  for (uint8_t b : bytes) *p++ = b;
}

void put_jmp(uint8_t *&p, uint64_t at, uint64_t to) {  // at: run-time address of this jmp
  const int32_t rel = static_cast<int32_t>(static_cast<int64_t>(to - (at + 5)));
  *p++ = 0xe9;
  std::memcpy(p, &rel, 4);
  p += 4;
}

bool encode(ZydisEncoderRequest *req, uint8_t *&p, std::string *why) {
  ZyanUSize n = 15;
  uint8_t buf[15];
  if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstruction(req, buf, &n))) {
    if (why) *why = "Zydis cannot re-encode it";
    return false;
  }
  std::memcpy(p, buf, n);
  p += n;
  return true;
}

// Builds the stub of `d` (executed from `stub_at`, returning to `back`) into `out` (kStubSize
// bytes). `target` is the address [rip+disp] stood for.
bool build_stub(const Decoded &d, uint64_t target, uint64_t stub_at, uint64_t back, uint8_t *out, std::string *why) {
  std::memset(out, kInt3, kStubSize);
  uint8_t *p = out;
  if (d.insn.mnemonic == ZYDIS_MNEMONIC_LEA && d.ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER) {
    ZydisEncoderRequest req{};
    req.machine_mode = ZYDIS_MACHINE_MODE_LONG_64;
    req.mnemonic = ZYDIS_MNEMONIC_MOV;
    req.operand_count = 2;
    req.operands[0].type = ZYDIS_OPERAND_TYPE_REGISTER;
    req.operands[0].reg.value = d.ops[0].reg.value;
    req.operands[1].type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
    // lea eax, [rip+x] keeps the low 32 bits: the same bits as a sign-extended immediate.
    const unsigned shift = 64 - d.ops[0].size;
    req.operands[1].imm.s = static_cast<int64_t>(target << shift) >> shift;
    if (!encode(&req, p, why)) return false;
    put_jmp(p, stub_at + (p - out), back);
    return true;
  }
  // A scratch register the instruction does not name, explicitly or implicitly; the legacy ones
  // first, which need no REX prefix (an instruction naming ah..bh cannot have one).
  static const ZydisRegister kScratch[] = {
      ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RBX, ZYDIS_REGISTER_RSI,
      ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RBP, ZYDIS_REGISTER_R8,  ZYDIS_REGISTER_R9,  ZYDIS_REGISTER_R10,
      ZYDIS_REGISTER_R11, ZYDIS_REGISTER_R12, ZYDIS_REGISTER_R13, ZYDIS_REGISTER_R14, ZYDIS_REGISTER_R15};
  for (ZydisRegister scratch : kScratch) {
    bool used = false;
    for (int i = 0; i < d.insn.operand_count && !used; ++i) {
      const ZydisDecodedOperand &op = d.ops[i];
      if (op.type == ZYDIS_OPERAND_TYPE_REGISTER) used = full(op.reg.value) == scratch;
      if (op.type == ZYDIS_OPERAND_TYPE_MEMORY) used = full(op.mem.base) == scratch || full(op.mem.index) == scratch;
    }
    if (used) continue;
    ZydisEncoderRequest req{};
    if (!ZYAN_SUCCESS(
            ZydisEncoderDecodedInstructionToEncoderRequest(&d.insn, d.ops, d.insn.operand_count_visible, &req))) {
      if (why) *why = "Zydis cannot re-encode it";
      return false;
    }
    for (int i = 0; i < req.operand_count; ++i)
      if (req.operands[i].type == ZYDIS_OPERAND_TYPE_MEMORY && req.operands[i].mem.base == ZYDIS_REGISTER_RIP) {
        req.operands[i].mem.base = scratch;
        req.operands[i].mem.index = ZYDIS_REGISTER_NONE;
        req.operands[i].mem.scale = 0;
        req.operands[i].mem.displacement = 0;
      }
    uint8_t body[15];
    uint8_t *b = body;
    if (!encode(&req, b, nullptr)) continue;  // another scratch may avoid a REX conflict
    const uint8_t id = static_cast<uint8_t>(ZydisRegisterGetId(scratch));
    const uint8_t rex_b = id >= 8 ? 0x41 : 0;
    put(p, {0x48, 0x8d, 0x64, 0x24, 0x80});  // lea rsp, [rsp-128]
    if (rex_b) *p++ = rex_b;
    *p++ = static_cast<uint8_t>(0x50 + (id & 7));     // push scratch
    *p++ = static_cast<uint8_t>(0x48 | (rex_b & 1));  // movabs scratch, target
    *p++ = static_cast<uint8_t>(0xb8 + (id & 7));
    std::memcpy(p, &target, 8);
    p += 8;
    std::memcpy(p, body, b - body);
    p += b - body;
    if (rex_b) *p++ = rex_b;
    *p++ = static_cast<uint8_t>(0x58 + (id & 7));              // pop scratch
    put(p, {0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00});  // lea rsp, [rsp+128]
    put_jmp(p, stub_at + (p - out), back);
    return true;
  }
  if (why) *why = "no scratch register can be used with it";
  return false;
}

// PC32 that is not a branch displacement (the linker tells those apart) and lies in code.
bool applies(uint32_t type) { return type == R_X86_64_PC32; }

bool plan(const uint8_t *code, size_t size, uint64_t start, uint64_t field, FarDataSite *out, std::string *why) {
  Decoded d;
  uint64_t at = start;
  char buf[256];
  for (;;) {
    if (at >= size || !decode(code + at, size - at, &d)) {
      std::snprintf(buf, sizeof buf, "the bytes at +0x%" PRIx64 " do not decode as an instruction", at);
      *why = buf;
      return false;
    }
    if (field < at + d.insn.length) break;
    at += d.insn.length;
  }
  const std::string insn = "'" + text(d) + "'";
  if (rip_operand(d) < 0 || d.insn.raw.disp.size != 32 || at + d.insn.raw.disp.offset != field) {
    *why = "the relocated field is not the RIP-relative displacement of the instruction " + insn;
    return false;
  }
  std::string reason = refusal(d);
  uint8_t stub[kStubSize];
  if (reason.empty() && !build_stub(d, 0x7fff00001000, 0x100000, 0x200000, stub, &reason) && reason.empty())
    reason = "it cannot be re-encoded";
  if (!reason.empty()) {
    *why = "the instruction " + insn + " cannot be rewritten: " + reason;
    return false;
  }
  out->offset = at;
  out->length = d.insn.length;
  return true;
}

bool write(uint8_t *insn, uint64_t insn_at, const FarDataSite &site, unsigned field, uint8_t *stub, uint64_t stub_at,
           uint64_t target, std::string *why) {
  Decoded d;
  if (!decode(insn, site.length, &d) || d.insn.length != site.length) {
    *why = "the instruction no longer decodes";
    return false;
  }
  // [rip+disp] = end of the instruction + (S + A - P), P being the field.
  const uint64_t address = target + site.length - field;
  if (!build_stub(d, address, stub_at, insn_at + site.length, stub, why)) return false;
  uint8_t *p = insn;
  put_jmp(p, insn_at, stub_at);
  std::memset(p, kInt3, site.length - 5);  // never reached: the stub returns past them
  return true;
}

}  // namespace

const FarDataRewriter kFarDataRewriter = {kStubSize, applies, plan, write};

}  // namespace sk::host::x86_64

namespace sk::host {

const FarDataRewriter *far_data_rewriter() { return &x86_64::kFarDataRewriter; }

}  // namespace sk::host
