// What one architecture's relocation file (relocate_x86_64.cpp, relocate_aarch64.cpp) gives the
// linker: per relocation type, what it needs before layout (a GOT entry, a call stub, a placement
// constraint) and how it is written; the call stub's shape. The linker picks one by e_machine.
#pragma once
#include <sk.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sk::host {

// The psABI's symbols for one relocation. S: symbol value, A: addend, P: place, G: address of
// the symbol's GOT entry (for a thread-local relocation: of its TLS entry, below), GOT: GOT
// base, L: the call target (S, or its stub when S is far), Z: symbol size. Thread-local ones:
// TLS, the symbol's offset in the module's TLS block; TP, the block's offset from the thread
// pointer (host/linker/tls_block.hpp), so that S+A's is TP + TLS + A.
struct RelocValues {
  uint64_t S = 0, P = 0, G = 0, GOT = 0, L = 0, Z = 0, TLS = 0;
  int64_t A = 0, TP = 0;
};

// What a thread-local relocation needs, by the access model it belongs to.
enum class TlsUse : uint8_t {
  None,
  GdEntry,    // general dynamic: a GOT pair {module id, offset of S+A} for __tls_get_addr
  LdEntry,    // local dynamic: the module's GOT pair {module id, 0}
  IeEntry,    // initial exec: a GOT entry holding S+A's offset from the thread pointer
  DescEntry,  // TLS descriptor: a GOT pair {function, argument} whose call returns that offset
  TpOffset,   // local exec: S+A's offset from the thread pointer, in the instruction
  DtpOffset,  // local dynamic's second half: S+A's offset in the block
  Marker,     // marks an instruction for a linker's relaxation: nothing to write
};
// "general dynamic" ... for messages.
const char *tls_model_name(TlsUse use);
// Whether code of this model reaches the block at an offset from the thread pointer fixed when
// it is linked, so that every thread must have it at that offset (static TLS). Descriptors do
// not where libsk resolves them at run time (host/linker/tlsdesc_dynamic.hpp).
inline bool needs_static_tls(TlsUse use) {
  return use == TlsUse::IeEntry || use == TlsUse::DescEntry || use == TlsUse::TpOffset;
}

// For messages: "kernels.o: R_X86_64_PC32 at .text+0x1a against 'foo'".
struct RelocSite {
  const char *label = "";
  const char *section = "";
  uint64_t offset = 0;
  const char *symbol = "";
};

// What the linker must know about one relocation before layout.
struct RelocNeeds {
  bool known = false;  // handled by apply()
  bool tls = false;    // thread-local: see tls_use
  TlsUse tls_use = TlsUse::None;
  // For the TLS entries of AArch64 (and other RELA machines' GOT forms), the addend is part of
  // the entry (one per symbol and addend); on x86-64 it only adjusts the PC-relative field.
  bool tls_addend_in_entry = false;
  bool none = false;       // writes nothing (R_*_NONE)
  bool got_entry = false;  // needs a GOT entry for its symbol (G)
  bool branch = false;     // a call/jump: a stub may stand in for a far external symbol (L)
  // PC-relative against an external symbol: the whole mapping must lie within ±reach of it
  // (for a branch with a stub, the reach of the direct form). 0: no such constraint.
  uint64_t reach = 0;
  // Absolute against the object's own symbols: the mapping must lie below this. 0: none.
  uint64_t abs_limit = 0;
  unsigned width = 0;  // bytes from r_offset that the relocation reads and writes
};

struct RelocArch {
  uint16_t machine;       // EM_*
  const char *name;       // "x86-64", "AArch64"
  const char *em_name;    // "EM_X86_64"
  size_t stub_size;       // one call stub: reaches any address, written by write_stub
  uint64_t branch_reach;  // a direct branch's displacement must lie in [-branch_reach, branch_reach)
  // `section` (the relocated section's bytes, may be null) lets x86-64 tell a jump from data.
  RelocNeeds (*needs)(uint32_t type, const uint8_t *section, uint64_t offset);
  std::string (*reloc_name)(uint32_t type);
  void (*write_stub)(uint8_t *at, uint64_t target);
  // A function the linker writes into a module in place of one a static link would take from
  // libc_nonshared.a (atexit, pthread_atfork): it zeroes arguments [zero_from, dso_arg), sets
  // argument `dso_arg` (1 to 3) to `dso` (the module's __dso_handle) and jumps to `target`
  // with the caller's other arguments and return address.
  size_t forward_stub_size;
  void (*write_forward_stub)(uint8_t *at, uint64_t target, uint64_t dso, unsigned dso_arg, unsigned zero_from);
  // A jump through the 8-byte slot at `slot` (an indirect function's resolved address), written
  // at `at`, whose run-time address is `at_address`; the slot lies within ±2 GiB.
  size_t slot_jump_size;
  void (*write_slot_jump)(uint8_t *at, uint64_t at_address, uint64_t slot);
  // The function of a TLS descriptor whose argument is already the thread-pointer offset
  // (glibc's _dl_tlsdesc_return): it returns the descriptor's second word.
  const uint8_t *tlsdesc_return;
  size_t tlsdesc_return_size;
  // Writes relocation `type` at `where`; SK_ERR_UNSUPPORTED when the value does not fit the field
  // or the type is not handled.
  sk_status (*apply)(uint32_t type, uint8_t *where, const RelocValues &v, const RelocSite &site);
};

// True when `v` fits a two's-complement field of `bits` bits (1..63): the overflow check of
// the signed (PC-relative, displacement) relocations of every architecture.
inline bool fits_signed(int64_t v, unsigned bits) {
  int64_t lim = int64_t(1) << (bits - 1);
  return v >= -lim && v < lim;
}

// The relocation file for e_machine `machine`, or nullptr when there is none.
const RelocArch *reloc_arch(uint16_t machine);

// e_machine of the CPU this library was built for (0 when it has no host linker).
constexpr uint16_t kHostMachine =
#if defined(__x86_64__)
    62;  // EM_X86_64
#elif defined(__aarch64__)
    183;  // EM_AARCH64
#else
    0;
#endif

}  // namespace sk::host
