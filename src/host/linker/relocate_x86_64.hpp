// x86-64 relocations (System V psABI, "Relocation Types"): what each type needs from the linker
// (a GOT entry, a call stub, a placement constraint) and how it is written, with overflow checks.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>

#include "host/linker/relocation.hpp"

namespace sk::host::x86_64 {

// What the linker must know about a relocation type before layout.
struct RelocKind {
  bool known = false;  // handled by apply()
  bool tls = false;    // a thread-local relocation (tls_use says what it needs)
  TlsUse tls_use = TlsUse::None;
  bool got_entry = false;  // needs a GOT entry for its symbol (G)
  bool branch = false;     // a call/jump target: a stub may stand in for a far symbol (L)
  bool pc32 = false;       // 32-bit PC-relative: the symbol must lie within ±2 GiB of the place
  uint64_t abs_limit = 0;  // absolute 32-bit: the value must be below this (2 GiB / 4 GiB), else 0
  unsigned width = 0;      // bytes written
};

RelocKind classify(uint32_t type);

// "R_X86_64_PC32", or "type 200" for numbers without a name here.
std::string reloc_name(uint32_t type);

// True when the instruction bytes before `offset` are a call or jump whose 32-bit displacement
// starts at `offset` (e8/e9 rel32, 0f 8x rel32): such a R_X86_64_PC32 may be sent to a stub.
bool is_branch_displacement(const uint8_t *section, uint64_t offset);

// The psABI's symbols and the place, shared by every architecture (host/linker/relocation.hpp).
using RelocValues = host::RelocValues;
using RelocSite = host::RelocSite;

// This file's entry for the linker (host/linker/relocation.hpp): classify(), apply() and the
// `jmp *0(%rip)` stub.
extern const RelocArch kArch;

// Writes relocation `type` at `where`; SK_ERR_UNSUPPORTED when the value does not fit the field
// or the type is not handled.
sk_status apply(uint32_t type, uint8_t *where, const RelocValues &v, const RelocSite &site);

}  // namespace sk::host::x86_64
