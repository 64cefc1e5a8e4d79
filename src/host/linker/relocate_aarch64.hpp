// AArch64 relocations (ARM's "ELF for the Arm 64-bit Architecture", AAELF64, static data and
// instruction relocations): what each type needs from the linker and how it is written into a
// data word or an instruction's immediate field, with the document's overflow checks.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>

#include "host/linker/relocation.hpp"

namespace sk::host::aarch64 {

// What the linker must know about `type` before layout (see RelocNeeds). CALL26/JUMP26 are
// branches (a stub stands in beyond ±128 MiB); ADRP-based types must reach their external
// symbol within ±4 GiB, PREL32 within ±2 GiB, ADR/LDR-literal/B.cond within ±1 MiB, TBZ ±32 KiB;
// ABS32 and MOVW_UABS_G0/G1/G2 against the object's own symbols put it below 4 GiB / 64 KiB /
// 4 GiB / 256 TiB. TLS types are marked tls and never handled.
RelocNeeds needs(uint32_t type);

// "R_AARCH64_CALL26", or "type 200" for numbers without a name here.
std::string reloc_name(uint32_t type);

// The call stub: `ldr x16, #8; br x16; .quad target` (x16 is the AAPCS64 scratch register that
// veneers may clobber): 16 bytes, 8-byte aligned.
constexpr size_t kStubSize = 16;
void write_stub(uint8_t *at, uint64_t target);

// Writes relocation `type` at `where`: data types write the little-endian word, instruction
// types only the immediate field of the instruction already there. SK_ERR_UNSUPPORTED when the
// value overflows the field, is misaligned for it (a branch not a multiple of 4, a :lo12: load
// of a misaligned address, a GOT reference with an addend), or the type is not handled.
sk_status apply(uint32_t type, uint8_t *where, const RelocValues &v, const RelocSite &site);

extern const RelocArch kArch;

}  // namespace sk::host::aarch64
