#include "host/linker/relocation.hpp"

#include <elf.h>

#include "host/linker/relocate_aarch64.hpp"
#include "host/linker/relocate_x86_64.hpp"

namespace sk::host {

static_assert(kHostMachine == 0 || kHostMachine == EM_X86_64 || kHostMachine == EM_AARCH64);

const char *tls_model_name(TlsUse use) {
  switch (use) {
    case TlsUse::GdEntry: return "general dynamic";
    case TlsUse::LdEntry:
    case TlsUse::DtpOffset: return "local dynamic";
    case TlsUse::IeEntry: return "initial exec";
    case TlsUse::DescEntry: return "TLS descriptor";
    case TlsUse::TpOffset: return "local exec";
    default: return "thread-local";
  }
}

const RelocArch *reloc_arch(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return &x86_64::kArch;
    case EM_AARCH64: return &aarch64::kArch;
    default: return nullptr;
  }
}

}  // namespace sk::host
