// One switch over AArch64 relocation types, as relocate_x86_64.cpp: compute the AAELF64 formula,
// check the documented range, then write a data word or patch an instruction's immediate.
#include "host/linker/relocate_aarch64.hpp"

#include <elf.h>

#include <cstring>

#include "common/error.hpp"

namespace sk::host::aarch64 {
namespace {

constexpr uint64_t KiB = 1ull << 10, MiB = 1ull << 20, GiB = 1ull << 30;

// clang-format off: the names as a table, not one per line
#define N(x) \
  { R_AARCH64_##x, "R_AARCH64_" #x }
const struct {
  uint32_t type;
  const char *name;
} kNames[] = {
    N(NONE),
    N(ABS64),
    N(ABS32),
    N(ABS16),
    N(PREL64),
    N(PREL32),
    N(PREL16),
    N(MOVW_UABS_G0),
    N(MOVW_UABS_G0_NC),
    N(MOVW_UABS_G1),
    N(MOVW_UABS_G1_NC),
    N(MOVW_UABS_G2),
    N(MOVW_UABS_G2_NC),
    N(MOVW_UABS_G3),
    N(MOVW_SABS_G0),
    N(MOVW_SABS_G1),
    N(MOVW_SABS_G2),
    N(LD_PREL_LO19),
    N(ADR_PREL_LO21),
    N(ADR_PREL_PG_HI21),
    N(ADR_PREL_PG_HI21_NC),
    N(ADD_ABS_LO12_NC),
    N(LDST8_ABS_LO12_NC),
    N(TSTBR14),
    N(CONDBR19),
    N(JUMP26),
    N(CALL26),
    N(LDST16_ABS_LO12_NC),
    N(LDST32_ABS_LO12_NC),
    N(LDST64_ABS_LO12_NC),
    N(MOVW_PREL_G0),
    N(MOVW_PREL_G0_NC),
    N(MOVW_PREL_G1),
    N(MOVW_PREL_G1_NC),
    N(MOVW_PREL_G2),
    N(MOVW_PREL_G2_NC),
    N(MOVW_PREL_G3),
    N(LDST128_ABS_LO12_NC),
    N(MOVW_GOTOFF_G0),
    N(MOVW_GOTOFF_G0_NC),
    N(MOVW_GOTOFF_G1),
    N(MOVW_GOTOFF_G1_NC),
    N(MOVW_GOTOFF_G2),
    N(MOVW_GOTOFF_G2_NC),
    N(MOVW_GOTOFF_G3),
    N(GOTREL64),
    N(GOTREL32),
    N(GOT_LD_PREL19),
    N(LD64_GOTOFF_LO15),
    N(ADR_GOT_PAGE),
    N(LD64_GOT_LO12_NC),
    N(LD64_GOTPAGE_LO15),
    N(TLSGD_ADR_PREL21),
    N(TLSGD_ADR_PAGE21),
    N(TLSGD_ADD_LO12_NC),
    N(TLSGD_MOVW_G1),
    N(TLSGD_MOVW_G0_NC),
    N(TLSLD_ADR_PREL21),
    N(TLSLD_ADR_PAGE21),
    N(TLSLD_ADD_LO12_NC),
    N(TLSLD_MOVW_G1),
    N(TLSLD_MOVW_G0_NC),
    N(TLSLD_LD_PREL19),
    N(TLSLD_MOVW_DTPREL_G2),
    N(TLSLD_MOVW_DTPREL_G1),
    N(TLSLD_MOVW_DTPREL_G1_NC),
    N(TLSLD_MOVW_DTPREL_G0),
    N(TLSLD_MOVW_DTPREL_G0_NC),
    N(TLSLD_ADD_DTPREL_HI12),
    N(TLSLD_ADD_DTPREL_LO12),
    N(TLSLD_ADD_DTPREL_LO12_NC),
    N(TLSLD_LDST8_DTPREL_LO12),
    N(TLSLD_LDST8_DTPREL_LO12_NC),
    N(TLSLD_LDST16_DTPREL_LO12),
    N(TLSLD_LDST16_DTPREL_LO12_NC),
    N(TLSLD_LDST32_DTPREL_LO12),
    N(TLSLD_LDST32_DTPREL_LO12_NC),
    N(TLSLD_LDST64_DTPREL_LO12),
    N(TLSLD_LDST64_DTPREL_LO12_NC),
    N(TLSIE_MOVW_GOTTPREL_G1),
    N(TLSIE_MOVW_GOTTPREL_G0_NC),
    N(TLSIE_ADR_GOTTPREL_PAGE21),
    N(TLSIE_LD64_GOTTPREL_LO12_NC),
    N(TLSIE_LD_GOTTPREL_PREL19),
    N(TLSLE_MOVW_TPREL_G2),
    N(TLSLE_MOVW_TPREL_G1),
    N(TLSLE_MOVW_TPREL_G1_NC),
    N(TLSLE_MOVW_TPREL_G0),
    N(TLSLE_MOVW_TPREL_G0_NC),
    N(TLSLE_ADD_TPREL_HI12),
    N(TLSLE_ADD_TPREL_LO12),
    N(TLSLE_ADD_TPREL_LO12_NC),
    N(TLSLE_LDST8_TPREL_LO12),
    N(TLSLE_LDST8_TPREL_LO12_NC),
    N(TLSLE_LDST16_TPREL_LO12),
    N(TLSLE_LDST16_TPREL_LO12_NC),
    N(TLSLE_LDST32_TPREL_LO12),
    N(TLSLE_LDST32_TPREL_LO12_NC),
    N(TLSLE_LDST64_TPREL_LO12),
    N(TLSLE_LDST64_TPREL_LO12_NC),
    N(TLSDESC_LD_PREL19),
    N(TLSDESC_ADR_PREL21),
    N(TLSDESC_ADR_PAGE21),
    N(TLSDESC_LD64_LO12),
    N(TLSDESC_ADD_LO12),
    N(TLSDESC_OFF_G1),
    N(TLSDESC_OFF_G0_NC),
    N(TLSDESC_LDR),
    N(TLSDESC_ADD),
    N(TLSDESC_CALL),
    N(TLSLE_LDST128_TPREL_LO12),
    N(TLSLE_LDST128_TPREL_LO12_NC),
    N(TLSLD_LDST128_DTPREL_LO12),
    N(TLSLD_LDST128_DTPREL_LO12_NC),
    N(COPY),
    N(GLOB_DAT),
    N(JUMP_SLOT),
    N(RELATIVE),
    N(TLS_DTPMOD),
    N(TLS_DTPREL),
    N(TLS_TPREL),
    N(TLSDESC),
    N(IRELATIVE),
};
#undef N
// clang-format on

bool is_tls(uint32_t type) {
  return (type >= R_AARCH64_TLSGD_ADR_PREL21 && type <= R_AARCH64_TLSLD_LDST128_DTPREL_LO12_NC) ||
         (type >= R_AARCH64_TLS_DTPMOD && type <= R_AARCH64_TLSDESC);
}

uint64_t page(uint64_t a) { return a & ~uint64_t(0xfff); }

uint32_t read32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Replaces bits [lsb, lsb + bits) of the instruction at `where` with the low bits of `value`.
void set_field(uint8_t *where, uint64_t value, unsigned lsb, unsigned bits) {
  const uint32_t mask = ((bits == 32 ? 0 : (1u << bits)) - 1u) << lsb;
  uint32_t insn = (read32(where) & ~mask) | ((static_cast<uint32_t>(value) << lsb) & mask);
  std::memcpy(where, &insn, 4);
}

// ADR and ADRP split a 21-bit immediate: immlo in bits 30:29, immhi in bits 23:5.
void set_adr_imm(uint8_t *where, uint64_t imm21) {
  set_field(where, imm21 & 3, 29, 2);
  set_field(where, (imm21 >> 2) & 0x7ffff, 5, 19);
}

}  // namespace

RelocNeeds needs(uint32_t type) {
  RelocNeeds n;
  n.known = true;
  n.width = 4;
  switch (type) {
    case R_AARCH64_NONE:
    case 256:  // 256: the withdrawn alternative encoding of NONE
      n.none = true;
      n.width = 0;
      break;
    case R_AARCH64_ABS64:
    case R_AARCH64_PREL64: n.width = 8; break;
    case R_AARCH64_ABS32: n.abs_limit = 4 * GiB; break;
    case R_AARCH64_ABS16:
    case R_AARCH64_PREL16: n.width = 2; break;
    case R_AARCH64_PREL32: n.reach = 2 * GiB; break;
    case R_AARCH64_MOVW_UABS_G0: n.abs_limit = 64 * KiB; break;
    case R_AARCH64_MOVW_UABS_G1: n.abs_limit = 4 * GiB; break;
    case R_AARCH64_MOVW_UABS_G2: n.abs_limit = 1ull << 48; break;
    case R_AARCH64_MOVW_UABS_G0_NC:
    case R_AARCH64_MOVW_UABS_G1_NC:
    case R_AARCH64_MOVW_UABS_G2_NC:
    case R_AARCH64_MOVW_UABS_G3:
    case R_AARCH64_ADD_ABS_LO12_NC:
    case R_AARCH64_LDST8_ABS_LO12_NC:
    case R_AARCH64_LDST16_ABS_LO12_NC:
    case R_AARCH64_LDST32_ABS_LO12_NC:
    case R_AARCH64_LDST64_ABS_LO12_NC:
    case R_AARCH64_LDST128_ABS_LO12_NC: break;
    case R_AARCH64_LD_PREL_LO19:
    case R_AARCH64_ADR_PREL_LO21:
    case R_AARCH64_CONDBR19: n.reach = 1 * MiB; break;
    case R_AARCH64_TSTBR14: n.reach = 32 * KiB; break;
    case R_AARCH64_ADR_PREL_PG_HI21:
    case R_AARCH64_ADR_PREL_PG_HI21_NC: n.reach = 4 * GiB; break;
    case R_AARCH64_JUMP26:
    case R_AARCH64_CALL26:
      n.branch = true;
      n.reach = 128 * MiB;
      break;
    case R_AARCH64_ADR_GOT_PAGE:
    case R_AARCH64_LD64_GOT_LO12_NC: n.got_entry = true; break;
    // Thread-local: the code sequences stay as compiled (no relaxation); the GOT entries they
    // name are the module's TLS entries, one per symbol and addend.
    case R_AARCH64_TLSGD_ADR_PAGE21:
    case R_AARCH64_TLSGD_ADR_PREL21:
    case R_AARCH64_TLSGD_ADD_LO12_NC: n.tls_use = TlsUse::GdEntry; break;
    case R_AARCH64_TLSLD_ADR_PAGE21:
    case R_AARCH64_TLSLD_ADR_PREL21:
    case R_AARCH64_TLSLD_ADD_LO12_NC: n.tls_use = TlsUse::LdEntry; break;
    case R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21:
    case R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC:
    case R_AARCH64_TLSIE_LD_GOTTPREL_PREL19: n.tls_use = TlsUse::IeEntry; break;
    case R_AARCH64_TLSDESC_ADR_PAGE21:
    case R_AARCH64_TLSDESC_ADR_PREL21:
    case R_AARCH64_TLSDESC_LD_PREL19:
    case R_AARCH64_TLSDESC_LD64_LO12:
    case R_AARCH64_TLSDESC_ADD_LO12: n.tls_use = TlsUse::DescEntry; break;
    case R_AARCH64_TLSDESC_CALL:
    case R_AARCH64_TLSDESC_LDR:
    case R_AARCH64_TLSDESC_ADD: n.tls_use = TlsUse::Marker; break;
    case R_AARCH64_TLSLE_ADD_TPREL_HI12:
    case R_AARCH64_TLSLE_ADD_TPREL_LO12:
    case R_AARCH64_TLSLE_ADD_TPREL_LO12_NC:
    case R_AARCH64_TLSLE_LDST8_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST8_TPREL_LO12_NC:
    case R_AARCH64_TLSLE_LDST16_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST16_TPREL_LO12_NC:
    case R_AARCH64_TLSLE_LDST32_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST32_TPREL_LO12_NC:
    case R_AARCH64_TLSLE_LDST64_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST64_TPREL_LO12_NC:
    case R_AARCH64_TLSLE_LDST128_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST128_TPREL_LO12_NC:
    case R_AARCH64_TLSLE_MOVW_TPREL_G0:
    case R_AARCH64_TLSLE_MOVW_TPREL_G0_NC:
    case R_AARCH64_TLSLE_MOVW_TPREL_G1:
    case R_AARCH64_TLSLE_MOVW_TPREL_G1_NC:
    case R_AARCH64_TLSLE_MOVW_TPREL_G2: n.tls_use = TlsUse::TpOffset; break;
    case R_AARCH64_TLSLD_ADD_DTPREL_HI12:
    case R_AARCH64_TLSLD_ADD_DTPREL_LO12:
    case R_AARCH64_TLSLD_ADD_DTPREL_LO12_NC:
    case R_AARCH64_TLSLD_LDST8_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST8_DTPREL_LO12_NC:
    case R_AARCH64_TLSLD_LDST16_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST16_DTPREL_LO12_NC:
    case R_AARCH64_TLSLD_LDST32_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST32_DTPREL_LO12_NC:
    case R_AARCH64_TLSLD_LDST64_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST64_DTPREL_LO12_NC:
    case R_AARCH64_TLSLD_LDST128_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST128_DTPREL_LO12_NC:
    case R_AARCH64_TLSLD_MOVW_DTPREL_G0:
    case R_AARCH64_TLSLD_MOVW_DTPREL_G0_NC:
    case R_AARCH64_TLSLD_MOVW_DTPREL_G1:
    case R_AARCH64_TLSLD_MOVW_DTPREL_G1_NC:
    case R_AARCH64_TLSLD_MOVW_DTPREL_G2: n.tls_use = TlsUse::DtpOffset; break;
    case R_AARCH64_TLS_DTPREL: n.tls_use = TlsUse::DtpOffset, n.width = 8; break;  // debug info
    default:
      n = RelocNeeds();
      n.tls = is_tls(type);
      break;
  }
  if (n.tls_use != TlsUse::None) n.tls = true, n.tls_addend_in_entry = true;
  return n;
}

std::string reloc_name(uint32_t type) {
  for (const auto &n : kNames)
    if (n.type == type) return n.name;
  return "type " + std::to_string(type);
}

void write_stub(uint8_t *at, uint64_t target) {
  const uint32_t code[2] = {0x58000050u /* ldr x16, #8 */, 0xd61f0200u /* br x16 */};
  std::memcpy(at, code, 8);
  std::memcpy(at + 8, &target, 8);
}

sk_status apply(uint32_t type, uint8_t *where, const RelocValues &v, const RelocSite &site) {
  const uint64_t S = v.S, P = v.P, G = v.G, L = v.L;
  const uint64_t A = static_cast<uint64_t>(v.A);  // wrapping arithmetic, as AAELF64 intends
  auto overflow = [&](uint64_t value, const char *range) {
    return fail(SK_ERR_UNSUPPORTED, "%s: relocation %s at %s+0x%llx against '%s' overflows: 0x%llx is outside %s",
                site.label, reloc_name(type).c_str(), site.section, (unsigned long long)site.offset, site.symbol,
                (unsigned long long)value, range);
  };
  auto misaligned = [&](uint64_t value, unsigned align) {
    return fail(SK_ERR_UNSUPPORTED, "%s: relocation %s at %s+0x%llx against '%s': 0x%llx is not a multiple of %u",
                site.label, reloc_name(type).c_str(), site.section, (unsigned long long)site.offset, site.symbol,
                (unsigned long long)value, align);
  };
  // A PC-relative instruction immediate: `bits` signed bits of byte offset, in units of `scale`.
  auto pc_field = [&](uint64_t x, unsigned bits, unsigned scale, unsigned lsb, unsigned width,
                      const char *range) -> sk_status {
    if (!fits_signed(static_cast<int64_t>(x), bits)) return overflow(x, range);
    if (x % scale) return misaligned(x, scale);
    set_field(where, static_cast<uint64_t>(static_cast<int64_t>(x) / scale), lsb, width);
    return SK_OK;
  };
  // The :lo12: part of an address as a load/store's scaled unsigned offset.
  auto lo12 = [&](uint64_t x, unsigned scale) -> sk_status {
    if (x % scale) return misaligned(x, scale);
    set_field(where, (x & 0xfff) / scale, 10, 12);
    return SK_OK;
  };
  // MOVZ/MOVK: 16 bits of X starting at bit `shift`; `limit` (0: none) for the checked forms.
  auto movw = [&](uint64_t x, unsigned shift, uint64_t limit, const char *range) -> sk_status {
    if (limit && x >= limit) return overflow(x, range);
    set_field(where, (x >> shift) & 0xffff, 5, 16);
    return SK_OK;
  };
  // ABS32/16, PREL32/16: either the signed or the unsigned reading of the field must be exact.
  auto data = [&](uint64_t x, unsigned bytes, const char *range) -> sk_status {
    const unsigned bits = bytes * 8;
    if (bits < 64 && !fits_signed(static_cast<int64_t>(x), bits) && x >= (uint64_t(1) << bits))
      return overflow(x, range);
    std::memcpy(where, &x, bytes);  // little-endian: the low bytes come first
    return SK_OK;
  };
  const bool got = type == R_AARCH64_ADR_GOT_PAGE || type == R_AARCH64_LD64_GOT_LO12_NC;
  if (got && v.A != 0)  // one GOT entry per symbol holds S: an addend would need its own entry
    return fail(SK_ERR_UNSUPPORTED,
                "%s: relocation %s at %s+0x%llx against '%s' has addend %lld (only 0 is supported)", site.label,
                reloc_name(type).c_str(), site.section, (unsigned long long)site.offset, site.symbol,
                (long long)v.A);
  switch (type) {
    case R_AARCH64_NONE:
    case 256: return SK_OK;
    case R_AARCH64_ABS64: return data(S + A, 8, "");
    case R_AARCH64_PREL64: return data(S + A - P, 8, "");
    case R_AARCH64_ABS32: return data(S + A, 4, "[-2^31, 2^32)");
    case R_AARCH64_PREL32: return data(S + A - P, 4, "[-2^31, 2^32)");
    case R_AARCH64_ABS16: return data(S + A, 2, "[-2^15, 2^16)");
    case R_AARCH64_PREL16: return data(S + A - P, 2, "[-2^15, 2^16)");
    case R_AARCH64_CALL26:
    case R_AARCH64_JUMP26: return pc_field(L + A - P, 28, 4, 0, 26, "±128 MiB");
    case R_AARCH64_CONDBR19: return pc_field(S + A - P, 21, 4, 5, 19, "±1 MiB");
    case R_AARCH64_LD_PREL_LO19: return pc_field(S + A - P, 21, 4, 5, 19, "±1 MiB");
    case R_AARCH64_TSTBR14: return pc_field(S + A - P, 16, 4, 5, 14, "±32 KiB");
    case R_AARCH64_ADR_PREL_LO21: {
      const uint64_t x = S + A - P;
      if (!fits_signed(static_cast<int64_t>(x), 21)) return overflow(x, "±1 MiB");
      set_adr_imm(where, x);
      return SK_OK;
    }
    case R_AARCH64_ADR_PREL_PG_HI21:
    case R_AARCH64_ADR_PREL_PG_HI21_NC:
    case R_AARCH64_ADR_GOT_PAGE: {
      const uint64_t x = page(got ? G : S + A) - page(P);
      if (type != R_AARCH64_ADR_PREL_PG_HI21_NC && !fits_signed(static_cast<int64_t>(x), 33))
        return overflow(x, "±4 GiB");
      set_adr_imm(where, static_cast<uint64_t>(static_cast<int64_t>(x) >> 12));
      return SK_OK;
    }
    case R_AARCH64_ADD_ABS_LO12_NC: set_field(where, (S + A) & 0xfff, 10, 12); return SK_OK;
    case R_AARCH64_LDST8_ABS_LO12_NC: return lo12(S + A, 1);
    case R_AARCH64_LDST16_ABS_LO12_NC: return lo12(S + A, 2);
    case R_AARCH64_LDST32_ABS_LO12_NC: return lo12(S + A, 4);
    case R_AARCH64_LDST64_ABS_LO12_NC: return lo12(S + A, 8);
    case R_AARCH64_LDST128_ABS_LO12_NC: return lo12(S + A, 16);
    case R_AARCH64_LD64_GOT_LO12_NC: return lo12(G, 8);
    case R_AARCH64_MOVW_UABS_G0: return movw(S + A, 0, 1ull << 16, "[0, 2^16)");
    case R_AARCH64_MOVW_UABS_G0_NC: return movw(S + A, 0, 0, "");
    case R_AARCH64_MOVW_UABS_G1: return movw(S + A, 16, 1ull << 32, "[0, 2^32)");
    case R_AARCH64_MOVW_UABS_G1_NC: return movw(S + A, 16, 0, "");
    case R_AARCH64_MOVW_UABS_G2: return movw(S + A, 32, 1ull << 48, "[0, 2^48)");
    case R_AARCH64_MOVW_UABS_G2_NC: return movw(S + A, 32, 0, "");
    case R_AARCH64_MOVW_UABS_G3: return movw(S + A, 48, 0, "");
    default: break;
  }
  // Thread-local: G is the TLS entry (which holds the addend), TPREL and DTPREL the offsets.
  const uint64_t tprel = static_cast<uint64_t>(v.TP) + v.TLS + A, dtprel = v.TLS + A;
  switch (type) {
    case R_AARCH64_TLSGD_ADR_PAGE21:
    case R_AARCH64_TLSLD_ADR_PAGE21:
    case R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21:
    case R_AARCH64_TLSDESC_ADR_PAGE21: {
      const uint64_t x = page(G) - page(P);
      if (!fits_signed(static_cast<int64_t>(x), 33)) return overflow(x, "±4 GiB");
      set_adr_imm(where, static_cast<uint64_t>(static_cast<int64_t>(x) >> 12));
      return SK_OK;
    }
    case R_AARCH64_TLSGD_ADR_PREL21:
    case R_AARCH64_TLSLD_ADR_PREL21:
    case R_AARCH64_TLSDESC_ADR_PREL21: {
      const uint64_t x = G - P;
      if (!fits_signed(static_cast<int64_t>(x), 21)) return overflow(x, "±1 MiB");
      set_adr_imm(where, x);
      return SK_OK;
    }
    case R_AARCH64_TLSIE_LD_GOTTPREL_PREL19:
    case R_AARCH64_TLSDESC_LD_PREL19: return pc_field(G - P, 21, 4, 5, 19, "±1 MiB");
    case R_AARCH64_TLSGD_ADD_LO12_NC:
    case R_AARCH64_TLSLD_ADD_LO12_NC:
    case R_AARCH64_TLSDESC_ADD_LO12: set_field(where, G & 0xfff, 10, 12); return SK_OK;
    case R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC:
    case R_AARCH64_TLSDESC_LD64_LO12: return lo12(G, 8);
    case R_AARCH64_TLSDESC_CALL:
    case R_AARCH64_TLSDESC_LDR:
    case R_AARCH64_TLSDESC_ADD: return SK_OK;
    case R_AARCH64_TLSLE_ADD_TPREL_HI12:
    case R_AARCH64_TLSLD_ADD_DTPREL_HI12: {
      const uint64_t x = type == R_AARCH64_TLSLE_ADD_TPREL_HI12 ? tprel : dtprel;
      if (x >= (1ull << 24)) return overflow(x, "[0, 2^24)");
      set_field(where, (x >> 12) & 0xfff, 10, 12);
      return SK_OK;
    }
    case R_AARCH64_TLSLE_ADD_TPREL_LO12:
    case R_AARCH64_TLSLD_ADD_DTPREL_LO12: {
      const uint64_t x = type == R_AARCH64_TLSLE_ADD_TPREL_LO12 ? tprel : dtprel;
      if (x >= (1ull << 12)) return overflow(x, "[0, 2^12)");
      set_field(where, x, 10, 12);
      return SK_OK;
    }
    case R_AARCH64_TLSLE_ADD_TPREL_LO12_NC: set_field(where, tprel & 0xfff, 10, 12); return SK_OK;
    case R_AARCH64_TLSLD_ADD_DTPREL_LO12_NC: set_field(where, dtprel & 0xfff, 10, 12); return SK_OK;
    case R_AARCH64_TLSLE_LDST8_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST8_TPREL_LO12_NC: return lo12(tprel, 1);
    case R_AARCH64_TLSLE_LDST16_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST16_TPREL_LO12_NC: return lo12(tprel, 2);
    case R_AARCH64_TLSLE_LDST32_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST32_TPREL_LO12_NC: return lo12(tprel, 4);
    case R_AARCH64_TLSLE_LDST64_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST64_TPREL_LO12_NC: return lo12(tprel, 8);
    case R_AARCH64_TLSLE_LDST128_TPREL_LO12:
    case R_AARCH64_TLSLE_LDST128_TPREL_LO12_NC: return lo12(tprel, 16);
    case R_AARCH64_TLSLD_LDST8_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST8_DTPREL_LO12_NC: return lo12(dtprel, 1);
    case R_AARCH64_TLSLD_LDST16_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST16_DTPREL_LO12_NC: return lo12(dtprel, 2);
    case R_AARCH64_TLSLD_LDST32_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST32_DTPREL_LO12_NC: return lo12(dtprel, 4);
    case R_AARCH64_TLSLD_LDST64_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST64_DTPREL_LO12_NC: return lo12(dtprel, 8);
    case R_AARCH64_TLSLD_LDST128_DTPREL_LO12:
    case R_AARCH64_TLSLD_LDST128_DTPREL_LO12_NC: return lo12(dtprel, 16);
    case R_AARCH64_TLSLE_MOVW_TPREL_G0: return movw(tprel, 0, 1ull << 16, "[0, 2^16)");
    case R_AARCH64_TLSLE_MOVW_TPREL_G0_NC: return movw(tprel, 0, 0, "");
    case R_AARCH64_TLSLE_MOVW_TPREL_G1: return movw(tprel, 16, 1ull << 32, "[0, 2^32)");
    case R_AARCH64_TLSLE_MOVW_TPREL_G1_NC: return movw(tprel, 16, 0, "");
    case R_AARCH64_TLSLE_MOVW_TPREL_G2: return movw(tprel, 32, 1ull << 48, "[0, 2^48)");
    case R_AARCH64_TLSLD_MOVW_DTPREL_G0: return movw(dtprel, 0, 1ull << 16, "[0, 2^16)");
    case R_AARCH64_TLSLD_MOVW_DTPREL_G0_NC: return movw(dtprel, 0, 0, "");
    case R_AARCH64_TLSLD_MOVW_DTPREL_G1: return movw(dtprel, 16, 1ull << 32, "[0, 2^32)");
    case R_AARCH64_TLSLD_MOVW_DTPREL_G1_NC: return movw(dtprel, 16, 0, "");
    case R_AARCH64_TLSLD_MOVW_DTPREL_G2: return movw(dtprel, 32, 1ull << 48, "[0, 2^48)");
    case R_AARCH64_TLS_DTPREL: return data(dtprel, 8, "");
    default:
      return fail(SK_ERR_UNSUPPORTED, "%s: unsupported relocation %s at %s+0x%llx against '%s'", site.label,
                  reloc_name(type).c_str(), site.section, (unsigned long long)site.offset, site.symbol);
  }
}

namespace {

RelocNeeds needs_at(uint32_t type, const uint8_t *, uint64_t) { return needs(type); }

constexpr size_t kForwardStubSize = 48;
constexpr uint32_t kBrX16 = 0xd61f0200u, kNop = 0xd503201fu;

// LDR Xt, <literal `distance` bytes ahead>.
uint32_t ldr_literal(unsigned reg, uint64_t distance) { return 0x58000000u | uint32_t(distance / 4) << 5 | reg; }

// `mov xN, xzr` for the zeroed arguments, `ldr x<dso_arg>, =dso; ldr x16, =target; br x16`,
// then the two literals, 8-byte aligned: 40 bytes at most.
void write_forward_stub(uint8_t *at, uint64_t target, uint64_t dso, unsigned dso_arg, unsigned zero_from) {
  uint32_t code[kForwardStubSize / 4];
  for (uint32_t &c : code) c = kNop;
  size_t n = 0;
  for (unsigned a = zero_from; a < dso_arg; ++a) code[n++] = 0xaa1f03e0u | a;  // orr xA, xzr, xzr
  const size_t literals = ((n + 3) * 4 + 7) / 8 * 8;
  code[n] = ldr_literal(dso_arg, literals - n * 4);
  ++n;
  code[n] = ldr_literal(16, literals + 8 - n * 4);
  ++n;
  code[n++] = kBrX16;
  std::memcpy(at, code, sizeof code);
  std::memcpy(at + literals, &dso, 8);
  std::memcpy(at + literals + 8, &target, 8);
}

// adrp x16, slot; ldr x16, [x16, :lo12:slot]; br x16 (x16: the veneers' scratch register).
void write_slot_jump(uint8_t *at, uint64_t at_address, uint64_t slot) {
  const int64_t pages = static_cast<int64_t>(page(slot) - page(at_address)) >> 12;
  const uint32_t adrp = 0x90000000u | (uint32_t(pages) & 3) << 29 | (uint32_t(pages >> 2) & 0x7ffff) << 5 | 16;
  const uint32_t ldr = 0xf9400000u | uint32_t((slot & 0xfff) / 8) << 10 | 16 << 5 | 16;
  const uint32_t code[4] = {adrp, ldr, kBrX16, kNop};
  std::memcpy(at, code, sizeof code);
}

// ldr x0, [x0, #8]; ret (0xf9400400, 0xd65f03c0, little-endian): the descriptor's argument is
// the offset (_dl_tlsdesc_return).
constexpr uint8_t kTlsdescReturn[] = {0x00, 0x04, 0x40, 0xf9, 0xc0, 0x03, 0x5f, 0xd6};

}  // namespace

const RelocArch kArch = {EM_AARCH64,
                         "AArch64",
                         "EM_AARCH64",
                         kStubSize,
                         128 * MiB,
                         needs_at,
                         reloc_name,
                         write_stub,
                         kForwardStubSize,
                         write_forward_stub,
                         16,
                         write_slot_jump,
                         kTlsdescReturn,
                         sizeof kTlsdescReturn,
                         apply};

}  // namespace sk::host::aarch64
