#include "host/linker/debug_registration.hpp"

#include <elf.h>
#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "host/linker/elf_image.hpp"

// GDB's JIT interface. GDB sets a breakpoint in __jit_debug_register_code and, when it is hit,
// reads __jit_debug_descriptor's relevant_entry; both are found by name, so they are exported
// with C linkage and the function is never inlined or folded away.
extern "C" {
struct jit_descriptor {
  uint32_t version;
  uint32_t action_flag;  // JIT_NOACTION 0, JIT_REGISTER_FN 1, JIT_UNREGISTER_FN 2
  sk::host::DebugRegistration::Entry *relevant_entry;
  sk::host::DebugRegistration::Entry *first_entry;
};
__attribute__((visibility("default"), noinline, used)) void __jit_debug_register_code() {
  __asm__ volatile("" ::: "memory");
}
__attribute__((visibility("default"), used)) jit_descriptor __jit_debug_descriptor = {1, 0, nullptr, nullptr};
// libsk's own references: bound inside libsk, whoever else in the process defines the names.
extern jit_descriptor sk_jit_descriptor __attribute__((alias("__jit_debug_descriptor"), visibility("hidden")));
void sk_jit_register_code() __attribute__((alias("__jit_debug_register_code"), visibility("hidden")));
}

namespace sk::host {
namespace {

enum { kNoAction = 0, kRegister = 1, kUnregister = 2 };

std::mutex &descriptor_mutex() {
  static std::mutex m;
  return m;
}

// An ET_REL object of the host's machine: a NOBITS .text at the code's address (the code itself
// stays in the mapping), a .symtab with one STT_FUNC symbol per function, .text-relative, and a
// copy of the relocated .eh_frame at its own address, from which gdb unwinds frames that have no
// frame pointer (its PC-relative pointers hold there). One table: gdb reads one .eh_frame per
// file; functions described by others are unwound by gdb's prologue analysis.
std::vector<uint8_t> describe(const std::vector<CodeSymbol> &functions, uint64_t text, uint64_t text_size,
                              const std::pair<const void *, size_t> *unwind) {
  enum { kNull, kText, kSymtab, kStrtab, kShstrtab, kEhFrame, kSections };
  static const char shstrtab[] = "\0.text\0.symtab\0.strtab\0.shstrtab\0.eh_frame";
  const uint32_t name_text = 1, name_symtab = 7, name_strtab = 15, name_shstrtab = 23, name_eh_frame = 33;
  std::string strtab(1, '\0');
  std::vector<Elf64_Sym> syms(1);  // the null symbol
  for (const CodeSymbol &f : functions) {
    const uint64_t at = reinterpret_cast<uint64_t>(f.address);
    if (at < text || at - text >= text_size) continue;  // not code of this mapping
    Elf64_Sym s{};
    s.st_name = static_cast<uint32_t>(strtab.size());
    s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    s.st_shndx = kText;
    s.st_value = at - text;
    s.st_size = f.size;
    syms.push_back(s);
    strtab.append(f.name).push_back('\0');
  }
  const size_t symtab_at = sizeof(Elf64_Ehdr), symtab_size = syms.size() * sizeof(Elf64_Sym);
  const size_t strtab_at = symtab_at + symtab_size;
  const size_t shstrtab_at = strtab_at + strtab.size();
  const size_t eh_frame_at = (shstrtab_at + sizeof shstrtab + 7) & ~size_t{7};
  const size_t eh_frame_size = unwind ? unwind->second : 0;
  const size_t sections = unwind ? kSections : kEhFrame;
  const size_t shdr_at = (eh_frame_at + eh_frame_size + 7) & ~size_t{7};
  std::vector<uint8_t> out(shdr_at + sections * sizeof(Elf64_Shdr), 0);

  Elf64_Ehdr eh = host_elf_header(ET_REL);
  eh.e_shoff = shdr_at;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<uint16_t>(sections);
  eh.e_shstrndx = kShstrtab;
  put(out, 0, eh);
  std::memcpy(out.data() + symtab_at, syms.data(), symtab_size);
  std::memcpy(out.data() + strtab_at, strtab.data(), strtab.size());
  std::memcpy(out.data() + shstrtab_at, shstrtab, sizeof shstrtab);
  if (unwind) std::memcpy(out.data() + eh_frame_at, unwind->first, eh_frame_size);

  Elf64_Shdr sh[kSections] = {};
  sh[kText] = {name_text, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, text, symtab_at, text_size, 0, 0, 16, 0};
  sh[kSymtab] = {name_symtab, SHT_SYMTAB, 0, 0, symtab_at, symtab_size, kStrtab, 1, 8, sizeof(Elf64_Sym)};
  sh[kStrtab] = {name_strtab, SHT_STRTAB, 0, 0, strtab_at, strtab.size(), 0, 0, 1, 0};
  sh[kShstrtab] = {name_shstrtab, SHT_STRTAB, 0, 0, shstrtab_at, sizeof shstrtab, 0, 0, 1, 0};
  if (unwind)
    sh[kEhFrame] = {name_eh_frame,
                    SHT_PROGBITS,
                    SHF_ALLOC,
                    reinterpret_cast<uint64_t>(unwind->first),
                    eh_frame_at,
                    eh_frame_size,
                    0,
                    0,
                    8,
                    0};
  std::memcpy(out.data() + shdr_at, sh, sections * sizeof(Elf64_Shdr));
  return out;
}

}  // namespace

std::unique_ptr<DebugRegistration> DebugRegistration::create(const LinkedObject &object) noexcept {
  try {
    const MappedRegion *code = nullptr;
    for (const MappedRegion &r : object.regions())
      if (r.protection & PROT_EXEC) code = &r;
    if (!code || object.code_symbols().empty()) return nullptr;
    std::unique_ptr<DebugRegistration> reg(new DebugRegistration());
    const auto &unwind = object.unwind_tables();
    reg->symfile_ = describe(object.code_symbols(), reinterpret_cast<uint64_t>(code->address), code->size,
                             unwind.empty() ? nullptr : &unwind.front());
    reg->entry_.symfile_addr = reinterpret_cast<const char *>(reg->symfile_.data());
    reg->entry_.symfile_size = reg->symfile_.size();
    std::lock_guard<std::mutex> lock(descriptor_mutex());
    reg->entry_.next_entry = sk_jit_descriptor.first_entry;
    if (reg->entry_.next_entry) reg->entry_.next_entry->prev_entry = &reg->entry_;
    sk_jit_descriptor.first_entry = &reg->entry_;
    sk_jit_descriptor.relevant_entry = &reg->entry_;
    sk_jit_descriptor.action_flag = kRegister;
    sk_jit_register_code();
    sk_jit_descriptor.action_flag = kNoAction;
    return reg;
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
}

DebugRegistration::~DebugRegistration() {
  std::lock_guard<std::mutex> lock(descriptor_mutex());
  if (entry_.prev_entry)
    entry_.prev_entry->next_entry = entry_.next_entry;
  else
    sk_jit_descriptor.first_entry = entry_.next_entry;
  if (entry_.next_entry) entry_.next_entry->prev_entry = entry_.prev_entry;
  sk_jit_descriptor.relevant_entry = &entry_;
  sk_jit_descriptor.action_flag = kUnregister;
  sk_jit_register_code();
  sk_jit_descriptor.action_flag = kNoAction;
  sk_jit_descriptor.relevant_entry = nullptr;
}

}  // namespace sk::host
