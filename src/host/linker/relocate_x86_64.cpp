// One switch over relocation types, in the spirit of the Linux kernel's apply_relocate_add:
// compute the psABI formula, check that the result fits the field, write it little-endian.
#include "host/linker/relocate_x86_64.hpp"

#include <elf.h>

#include <cstring>

#include "common/error.hpp"

namespace sk::host::x86_64 {
namespace {

constexpr uint64_t k2GiB = 1ull << 31;
constexpr uint64_t k4GiB = 1ull << 32;

const char *const kNames[] = {"R_X86_64_NONE",
                              "R_X86_64_64",
                              "R_X86_64_PC32",
                              "R_X86_64_GOT32",
                              "R_X86_64_PLT32",
                              "R_X86_64_COPY",
                              "R_X86_64_GLOB_DAT",
                              "R_X86_64_JUMP_SLOT",
                              "R_X86_64_RELATIVE",
                              "R_X86_64_GOTPCREL",
                              "R_X86_64_32",
                              "R_X86_64_32S",
                              "R_X86_64_16",
                              "R_X86_64_PC16",
                              "R_X86_64_8",
                              "R_X86_64_PC8",
                              "R_X86_64_DTPMOD64",
                              "R_X86_64_DTPOFF64",
                              "R_X86_64_TPOFF64",
                              "R_X86_64_TLSGD",
                              "R_X86_64_TLSLD",
                              "R_X86_64_DTPOFF32",
                              "R_X86_64_GOTTPOFF",
                              "R_X86_64_TPOFF32",
                              "R_X86_64_PC64",
                              "R_X86_64_GOTOFF64",
                              "R_X86_64_GOTPC32",
                              "R_X86_64_GOT64",
                              "R_X86_64_GOTPCREL64",
                              "R_X86_64_GOTPC64",
                              "R_X86_64_GOTPLT64",
                              "R_X86_64_PLTOFF64",
                              "R_X86_64_SIZE32",
                              "R_X86_64_SIZE64",
                              "R_X86_64_GOTPC32_TLSDESC",
                              "R_X86_64_TLSDESC_CALL",
                              "R_X86_64_TLSDESC",
                              "R_X86_64_IRELATIVE",
                              "R_X86_64_RELATIVE64",
                              "R_X86_64_PC32_BND",
                              "R_X86_64_PLT32_BND",
                              "R_X86_64_GOTPCRELX",
                              "R_X86_64_REX_GOTPCRELX"};

// R_X86_64_16 / _8 are "bitfield" fields: either reading (signed or unsigned) must be exact.
bool fits_either(int64_t v, unsigned bits) {
  return fits_signed(v, bits) || (v >= 0 && uint64_t(v) < (uint64_t(1) << bits));
}

}  // namespace

RelocKind classify(uint32_t type) {
  RelocKind k;
  k.known = true;
  switch (type) {
    case R_X86_64_NONE: break;
    case R_X86_64_64:
    case R_X86_64_PC64:
    case R_X86_64_GOTOFF64:
    case R_X86_64_GOTPC64:
    case R_X86_64_SIZE64:
    case R_X86_64_PLTOFF64: k.width = 8; break;
    case R_X86_64_GOT64:
    case R_X86_64_GOTPCREL64:
      k.width = 8;
      k.got_entry = true;
      break;
    case R_X86_64_PC32:
      k.width = 4;
      k.pc32 = true;
      break;
    case R_X86_64_PLT32:
      k.width = 4;
      k.pc32 = true;
      k.branch = true;
      break;
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
    case R_X86_64_GOT32:
      k.width = 4;
      k.got_entry = true;
      break;
    case R_X86_64_GOTPC32:
    case R_X86_64_SIZE32: k.width = 4; break;
    case R_X86_64_32:
      k.width = 4;
      k.abs_limit = k4GiB;
      break;
    case R_X86_64_32S:
      k.width = 4;
      k.abs_limit = k2GiB;
      break;
    case R_X86_64_16:
    case R_X86_64_PC16: k.width = 2; break;
    case R_X86_64_8:
    case R_X86_64_PC8: k.width = 1; break;
    // Thread-local: the code sequences stay as compiled (no relaxation); the GOT entries they
    // name are the module's TLS entries.
    case R_X86_64_TLSGD: k.tls_use = TlsUse::GdEntry, k.width = 4; break;
    case R_X86_64_TLSLD: k.tls_use = TlsUse::LdEntry, k.width = 4; break;
    case R_X86_64_GOTTPOFF: k.tls_use = TlsUse::IeEntry, k.width = 4; break;
    case R_X86_64_GOTPC32_TLSDESC: k.tls_use = TlsUse::DescEntry, k.width = 4; break;
    case R_X86_64_TPOFF32: k.tls_use = TlsUse::TpOffset, k.width = 4; break;
    case R_X86_64_TPOFF64: k.tls_use = TlsUse::TpOffset, k.width = 8; break;
    case R_X86_64_DTPOFF32: k.tls_use = TlsUse::DtpOffset, k.width = 4; break;
    case R_X86_64_DTPOFF64: k.tls_use = TlsUse::DtpOffset, k.width = 8; break;
    case R_X86_64_TLSDESC_CALL: k.tls_use = TlsUse::Marker; break;
    case R_X86_64_DTPMOD64:  // dynamic relocations: not in objects
    case R_X86_64_TLSDESC:
      k.known = false;
      k.tls = true;
      break;
    default: k.known = false; break;
  }
  k.tls = k.tls || k.tls_use != TlsUse::None;
  return k;
}

std::string reloc_name(uint32_t type) {
  if (type < sizeof kNames / sizeof kNames[0]) return kNames[type];
  return "type " + std::to_string(type);
}

bool is_branch_displacement(const uint8_t *section, uint64_t offset) {
  if (!section || offset < 1) return false;
  uint8_t op = section[offset - 1];
  if (op == 0xe8 || op == 0xe9) return true;
  return offset >= 2 && section[offset - 2] == 0x0f && (op & 0xf0) == 0x80;
}

sk_status apply(uint32_t type, uint8_t *where, const RelocValues &v, const RelocSite &site) {
  const uint64_t S = v.S, P = v.P, G = v.G, GOT = v.GOT, L = v.L, Z = v.Z;
  const uint64_t A = static_cast<uint64_t>(v.A);  // wrapping arithmetic, as the psABI intends
  uint64_t value = 0;
  unsigned width = 0;
  enum { kNone, kSigned, kUnsigned, kEither } check = kNone;
  switch (type) {
    case R_X86_64_NONE: return SK_OK;
    case R_X86_64_64:
      value = S + A;
      width = 8;
      break;
    case R_X86_64_PC64:
      value = S + A - P;
      width = 8;
      break;
    case R_X86_64_GOTOFF64:
      value = S + A - GOT;
      width = 8;
      break;
    case R_X86_64_GOTPC64:
      value = GOT + A - P;
      width = 8;
      break;
    case R_X86_64_GOTPCREL64:
      value = G + A - P;
      width = 8;
      break;
    case R_X86_64_GOT64:
      value = G - GOT + A;
      width = 8;
      break;
    case R_X86_64_PLTOFF64:
      value = L + A - GOT;
      width = 8;
      break;
    case R_X86_64_SIZE64:
      value = Z + A;
      width = 8;
      break;
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
      value = L + A - P;
      width = 4;
      check = kSigned;
      break;
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
      // The GOT is used as is, never relaxed: the entry holds the symbol's address.
      value = G + A - P;
      width = 4;
      check = kSigned;
      break;
    case R_X86_64_GOT32:
      value = G - GOT + A;
      width = 4;
      check = kSigned;
      break;
    case R_X86_64_GOTPC32:
      value = GOT + A - P;
      width = 4;
      check = kSigned;
      break;
    case R_X86_64_SIZE32:
      value = Z + A;
      width = 4;
      check = kUnsigned;
      break;
    case R_X86_64_32:
      value = S + A;
      width = 4;
      check = kUnsigned;
      break;
    case R_X86_64_32S:
      value = S + A;
      width = 4;
      check = kSigned;
      break;
    case R_X86_64_16:
      value = S + A;
      width = 2;
      check = kEither;
      break;
    case R_X86_64_PC16:
      value = S + A - P;
      width = 2;
      check = kSigned;
      break;
    case R_X86_64_8:
      value = S + A;
      width = 1;
      check = kEither;
      break;
    case R_X86_64_PC8:
      value = S + A - P;
      width = 1;
      check = kSigned;
      break;
    case R_X86_64_TLSGD:  // G: the TLS entry
    case R_X86_64_TLSLD:
    case R_X86_64_GOTTPOFF:
    case R_X86_64_GOTPC32_TLSDESC:
      value = G + A - P;
      width = 4;
      check = kSigned;
      break;
    case R_X86_64_TPOFF32:
      value = static_cast<uint64_t>(v.TP) + v.TLS + A;
      width = 4;
      check = kSigned;
      break;
    case R_X86_64_TPOFF64:
      value = static_cast<uint64_t>(v.TP) + v.TLS + A;
      width = 8;
      break;
    case R_X86_64_DTPOFF32:
      value = v.TLS + A;
      width = 4;
      check = kSigned;
      break;
    case R_X86_64_DTPOFF64:
      value = v.TLS + A;
      width = 8;
      break;
    case R_X86_64_TLSDESC_CALL: return SK_OK;
    default:
      return fail(SK_ERR_UNSUPPORTED, "%s: unsupported relocation %s at %s+0x%llx against '%s'", site.label,
                  reloc_name(type).c_str(), site.section, (unsigned long long)site.offset, site.symbol);
  }
  const unsigned bits = width * 8;
  bool ok = true;
  if (check == kSigned) ok = fits_signed(static_cast<int64_t>(value), bits);
  if (check == kUnsigned) ok = value < (uint64_t(1) << bits);
  if (check == kEither) ok = fits_either(static_cast<int64_t>(value), bits);
  if (!ok)
    return fail(SK_ERR_UNSUPPORTED,
                "%s: relocation %s at %s+0x%llx against '%s' overflows: 0x%llx does not fit in "
                "%u bits%s",
                site.label, reloc_name(type).c_str(), site.section, (unsigned long long)site.offset, site.symbol,
                (unsigned long long)value, bits,
                check == kSigned     ? " (signed)"
                : check == kUnsigned ? " (unsigned)"
                                     : "");
  std::memcpy(where, &value, width);  // x86-64 is little-endian: the low bytes come first
  return SK_OK;
}

namespace {

// The linker's view of a type: a PC32 that is a call or jump's displacement is a branch too.
RelocNeeds needs(uint32_t type, const uint8_t *section, uint64_t offset) {
  RelocKind k = classify(type);
  RelocNeeds n;
  n.known = k.known;
  n.tls = k.tls;
  n.tls_use = k.tls_use;
  n.none = type == R_X86_64_NONE;
  n.got_entry = k.got_entry;
  n.branch = k.branch || (type == R_X86_64_PC32 && is_branch_displacement(section, offset));
  n.reach = k.pc32 ? k2GiB : 0;
  n.abs_limit = k.abs_limit;
  n.width = k.width;
  return n;
}

// jmp *0(%rip) reads the absolute target stored right after it: any distance, no register.
void write_stub(uint8_t *at, uint64_t target) {
  uint8_t stub[16] = {0xff, 0x25, 0, 0, 0, 0};
  std::memcpy(stub + 6, &target, 8);
  stub[14] = stub[15] = 0xcc;
  std::memcpy(at, stub, sizeof stub);
}

// xor %esi,%esi / %edx / %ecx, and movabs $imm64 to %rsi / %rdx / %rcx: arguments 1 to 3.
constexpr uint8_t kZeroArg[4][2] = {{}, {0x31, 0xf6}, {0x31, 0xd2}, {0x31, 0xc9}};
constexpr uint8_t kLoadArg[4][2] = {{}, {0x48, 0xbe}, {0x48, 0xba}, {0x48, 0xb9}};
constexpr size_t kForwardStubSize = 32;

// The zeroed arguments, the handle, then `movabs $target, %r11; jmp *%r11` (r11: scratch at a
// call): 27 bytes at most, padded with int3.
void write_forward_stub(uint8_t *at, uint64_t target, uint64_t dso, unsigned dso_arg, unsigned zero_from) {
  uint8_t code[kForwardStubSize];
  std::memset(code, 0xcc, sizeof code);
  size_t n = 0;
  for (unsigned a = zero_from; a < dso_arg; ++a) code[n++] = kZeroArg[a][0], code[n++] = kZeroArg[a][1];
  code[n++] = kLoadArg[dso_arg][0], code[n++] = kLoadArg[dso_arg][1];
  std::memcpy(code + n, &dso, 8);
  n += 8;
  code[n++] = 0x49, code[n++] = 0xbb;
  std::memcpy(code + n, &target, 8);
  n += 8;
  code[n++] = 0x41, code[n++] = 0xff, code[n++] = 0xe3;
  std::memcpy(at, code, sizeof code);
}

// jmp *disp32(%rip), padded to 8 bytes.
void write_slot_jump(uint8_t *at, uint64_t at_address, uint64_t slot) {
  uint8_t code[8] = {0xff, 0x25, 0, 0, 0, 0, 0xcc, 0xcc};
  const int32_t disp = static_cast<int32_t>(static_cast<int64_t>(slot - (at_address + 6)));
  std::memcpy(code + 2, &disp, 4);
  std::memcpy(at, code, sizeof code);
}

}  // namespace

// mov 8(%rax), %rax; ret: the descriptor's argument is the offset (_dl_tlsdesc_return).
constexpr uint8_t kTlsdescReturn[] = {0x48, 0x8b, 0x40, 0x08, 0xc3};

const RelocArch kArch = {
    EM_X86_64,  "x86-64",         "EM_X86_64",        16, k2GiB,           needs,          reloc_name,
    write_stub, kForwardStubSize, write_forward_stub, 8,  write_slot_jump, kTlsdescReturn, sizeof kTlsdescReturn,
    apply};

}  // namespace sk::host::x86_64
