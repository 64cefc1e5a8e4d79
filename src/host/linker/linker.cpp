// The host linker's driver: what the object asks for (checks), which sections are loaded, what
// its relocations need (GOT entries, stubs, placement constraints) and what its undefined
// symbols are bound to. Layout and relocation are in linker_layout.cpp.
#include "host/linker/linker.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <cinttypes>
#include <new>

#include "common/error.hpp"
#include "elf/demangle.hpp"
#include "elf/lto.hpp"
#include "host/linker/compiler_runtime.hpp"
#include "host/linker/linker_impl.hpp"
#include "host/linker/relocation.hpp"
#include "host/linker/symbol_policy.hpp"
#include "host/linker/thread_exit.hpp"

namespace sk::host {
namespace {

constexpr uint64_t kMaxSectionSize = 1ull << 30;  // beyond this an object is not a kernel
constexpr uint64_t kMaxAlign = 1ull << 20;

bool has_prefix(const std::string &s, const char *p) { return s.rfind(p, 0) == 0; }

// 1ull << 31 -> "2 GiB", for placement messages.
std::string size_text(uint64_t bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (u < 5 && bytes >= 1024 && bytes % 1024 == 0) bytes /= 1024, ++u;
  return std::to_string(bytes) + " " + units[u];
}

// .init_array, .init_array.00100, .ctors.65535...: code the runtime would have to run at load.
bool is_constructor_section(const elf::Section &s) {
  if (s.type == SHT_INIT_ARRAY || s.type == SHT_FINI_ARRAY || s.type == SHT_PREINIT_ARRAY) return true;
  for (const char *p : {".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors"}) {
    size_t n = std::char_traits<char>::length(p);
    if (has_prefix(s.name, p) && (s.name.size() == n || s.name[n] == '.')) return true;
  }
  return false;
}

}  // namespace

bool Linker::external(uint32_t sym) const {
  if (sym == 0) return true;
  uint32_t shndx = o_.symbols[sym].shndx;
  if (common_offset_[sym] != kNotLoaded) return false;  // common, or the linker's __dso_handle
  if (forward_slot_.count(sym)) return false;           // a function the linker writes
  return shndx == SHN_UNDEF || shndx == SHN_ABS;
}

bool Linker::is_got_base(uint32_t sym) const {
  // The large and medium code models address their data from the GOT's base by this name.
  const elf::Symbol &s = o_.symbols[sym];
  return sym != 0 && s.shndx == SHN_UNDEF && s.name == "_GLOBAL_OFFSET_TABLE_";
}

const std::string &Linker::symbol_name(uint32_t sym) const {
  const elf::Symbol &s = o_.symbols[sym];
  // Section symbols have no name of their own: the section's says more.
  if (s.type == STT_SECTION && s.shndx < o_.sections.size()) return o_.sections[s.shndx].name;
  return s.name;
}

std::string Linker::where(uint32_t section, uint64_t offset) const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "+0x%" PRIx64, offset);
  return o_.sections[section].name + buf;
}

sk_status Linker::check_object() {
  // Only the host's machine: the linked code runs here, in this process.
  const RelocArch *host = reloc_arch(kHostMachine);
  if (!host) return fail(SK_ERR_UNSUPPORTED, "%s: no host linker for this architecture", label());
  if (o_.machine != kHostMachine)
    return fail(SK_ERR_UNSUPPORTED, "%s: e_machine %u is not %s (%s = %u), the host's machine", label(), o_.machine,
                host->name, host->em_name, kHostMachine);
  arch_ = host;
  if (elf::is_gcc_slim_lto(o_))
    return fail(SK_ERR_UNSUPPORTED,
                "%s: compiled with -flto: add -ffat-lto-objects or compile without -flto (its "
                ".gnu.lto_* sections hold GCC's intermediate code, no machine code)",
                label());
  if (o_.elf_class != ELFCLASS64 || o_.type != ET_REL)
    return fail(SK_ERR_UNSUPPORTED, "%s: ELF class %u / type %u: only 64-bit ET_REL objects load", label(),
                o_.elf_class, o_.type);
  for (size_t i = 1; i < o_.symbols.size(); ++i)
    if (o_.symbols[i].type == STT_TLS && o_.symbols[i].shndx == SHN_COMMON)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: thread-local variable '%s' is a common symbol (a tentative definition): give "
                  "it an initialiser or compile with -fno-common",
                  o_.symbol_label(static_cast<uint32_t>(i)).c_str(), o_.symbols[i].name.c_str());
  return SK_OK;
}

sk_status Linker::select_sections() {
  const size_t n = o_.sections.size();
  part_of_.assign(n, kData);
  section_offset_.assign(n, kNotLoaded);
  // A section libsk places, in the mapping or in the thread-local block.
  auto check_size = [this](size_t i) {
    const elf::Section &s = o_.sections[i];
    if (s.size > kMaxSectionSize)
      return fail(SK_ERR_UNSUPPORTED, "%s: section '%s' is too large (0x%" PRIx64 " bytes)",
                  o_.section_label(static_cast<uint32_t>(i)).c_str(), s.name.c_str(), s.size);
    if (s.align > kMaxAlign)
      return fail(SK_ERR_UNSUPPORTED, "%s: section '%s': alignment %" PRIu64 " is above %" PRIu64,
                  o_.section_label(static_cast<uint32_t>(i)).c_str(), s.name.c_str(), s.align, kMaxAlign);
    return SK_OK;
  };
  uint64_t tls_bytes = 0;
  for (size_t i = 1; i < n; ++i) {
    const elf::Section &s = o_.sections[i];
    if (!(s.flags & SHF_ALLOC)) continue;
    if (init_section(s).kind == InitSection::Preinit && s.size > 0)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: section '%s' runs before the program's own constructors, which only an "
                  "executable can ask for; use __attribute__((constructor)) or .init_array",
                  o_.section_label(static_cast<uint32_t>(i)).c_str(), s.name.c_str());
    if (s.flags & SHF_TLS) {  // the TLS block's (linker_tls.cpp), not the mapping's
      if (sk_status st = check_size(i)) return st;
      // Its sections add up in one block, which every thread that reaches them allocates.
      tls_bytes += s.size;
      if (tls_bytes > kMaxSectionSize)
        return fail(SK_ERR_UNSUPPORTED, "%s: section '%s': the thread-local sections exceed %" PRIu64 " bytes",
                    o_.section_label(static_cast<uint32_t>(i)).c_str(), s.name.c_str(), kMaxSectionSize);
      continue;
    }
    // Unwind tables (.eh_frame) load: registered with the unwinder (linker_init.cpp).
    if (s.type != SHT_PROGBITS && s.type != SHT_NOBITS && !is_constructor_section(s) && !is_eh_frame(s)) continue;
    bool load = true;
    if (is_eh_frame(s))
      if (sk_status st = check_eh_frame(i, &load)) return st;
    if (!load) continue;
    if (sk_status st = check_size(i)) return st;
    if (s.flags & SHF_EXECINSTR) part_of_[i] = kText;
    // .data.rel.ro is writable only until relocated: seal it read-only, like RELRO.
    else if ((s.flags & SHF_WRITE) && !has_prefix(s.name, ".data.rel.ro"))
      part_of_[i] = kData;
    else
      part_of_[i] = kRodata;
    section_offset_[i] = 0;  // loaded; layout() sets the offset
    max_align_ = std::max(max_align_, s.align);
  }
  // SHN_COMMON symbols (tentative definitions): allocated at the end of .bss.
  common_offset_.assign(o_.symbols.size(), kNotLoaded);
  for (size_t i = 1; i < o_.symbols.size(); ++i) {
    const elf::Symbol &s = o_.symbols[i];
    if (s.shndx != SHN_COMMON) continue;
    uint64_t align = s.value ? s.value : 1;
    if ((align & (align - 1)) || align > kMaxAlign || s.size > kMaxSectionSize)
      return fail(SK_ERR_BAD_BINARY,
                  "%s: common symbol '%s': alignment %" PRIu64 " / size %" PRIu64 " is not usable",
                  o_.symbol_label(static_cast<uint32_t>(i)).c_str(), s.name.c_str(), s.value, s.size);
    common_size_ = (common_size_ + align - 1) & ~(align - 1);
    common_offset_[i] = static_cast<int64_t>(common_size_);
    common_size_ += s.size;
    common_align_ = std::max(common_align_, align);
    if (common_size_ > kMaxSectionSize) return fail(SK_ERR_UNSUPPORTED, "%s: common symbols are too large", label());
  }
  max_align_ = std::max(max_align_, common_align_);
  return SK_OK;
}

sk_status Linker::scan_relocations() {
  referenced_.assign(o_.symbols.size(), false);
  for (const elf::RelocationSection &rs : o_.relocation_sections) {
    if (section_offset_[rs.target] == kNotLoaded) continue;  // .eh_frame, debug info
    const elf::Section &target = o_.sections[rs.target];
    const char *member = o_.section_label(rs.target).c_str();  // in a set: the object it came from
    if (target.type == SHT_NOBITS && !rs.relocations.empty())
      return fail(SK_ERR_BAD_BINARY, "%s: relocations for section '%s', which has no contents", member,
                  target.name.c_str());
    for (const elf::Relocation &r : rs.relocations) {
      const elf::Symbol &sym = o_.symbols[r.symbol];
      const std::string &name = symbol_name(r.symbol);
      const RelocNeeds kind = arch_->needs(r.type, target.data, r.offset);
      const std::string type_name = arch_->reloc_name(r.type);
      if (kind.tls && !kind.known) return scan_tls_relocation(rs.target, r, kind);  // says why
      if (!kind.known)
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: unsupported relocation type %u (%s) in section '%s' at offset 0x%" PRIx64, member, r.type,
                    type_name.c_str(), target.name.c_str(), r.offset);
      if (r.offset > target.size || kind.width > target.size - r.offset)
        return fail(SK_ERR_BAD_BINARY,
                    "%s: relocation %s at %s writes past the end of the section (0x%" PRIx64 " bytes)", member,
                    type_name.c_str(), where(rs.target, r.offset).c_str(), target.size);
      if (kind.none) continue;
      if (kind.tls) {
        if (sk_status st = scan_tls_relocation(rs.target, r, kind)) return st;
        continue;
      }
      bool in_section = sym.shndx != SHN_UNDEF && !external(r.symbol) && common_offset_[r.symbol] == kNotLoaded;
      if (in_section && section_offset_[sym.shndx] == kNotLoaded)
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: relocation %s at %s refers to '%s' in section '%s', which is not loaded", member,
                    type_name.c_str(), where(rs.target, r.offset).c_str(), name.c_str(),
                    o_.sections[sym.shndx].name.c_str());
      referenced_[r.symbol] = true;
      if (kind.got_entry && !got_slot_.count(r.symbol)) got_slot_.emplace(r.symbol, got_slot_.size());
      if (kind.branch && external(r.symbol) && r.symbol != 0 && !stub_slot_.count(r.symbol))
        stub_slot_.emplace(r.symbol, stub_slot_.size());
    }
  }
  return SK_OK;
}

sk_status Linker::bind_undefined() {
  resolved_.assign(o_.symbols.size(), 0);
  for (size_t i = 1; i < o_.symbols.size(); ++i) {
    const elf::Symbol &s = o_.symbols[i];
    if (!referenced_[i] || s.shndx != SHN_UNDEF || common_offset_[i] != kNotLoaded) continue;
    if (is_got_base(i)) continue;  // the mapping's own GOT: symbol_address knows it after placement
    const char *who = o_.symbol_label(static_cast<uint32_t>(i)).c_str();  // the object needing it
    const std::string shown = elf::quoted_symbol(s.name);                 // demangled too
    void *address = nullptr;
    if (options_.resolve_special) address = options_.resolve_special(s.name);
    if (!address) address = resolve_compiler_runtime(s.name);  // what libgcc.a would provide
    if (!address && (s.name == "__cxa_thread_atexit" || s.name == "__cxa_thread_atexit_impl"))
      address = thread_exit_registrar();  // thread_local destructors, dropped with the module
    if (!address && is_libsk_host_api(s.name)) {
      if (s.bind == STB_WEAK) continue;  // refused weak reference: unbound, as if absent
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: undefined symbol %s is a libsk host API function; kernels may call only "
                  "the device API of sk_kernel.h (a host call would wait on the launch running it)",
                  who, shown.c_str());
    }
    const bool forward = forward_slot_.count(i) != 0;  // written into the module, for the process's
    if ((!address || forward) && options_.allow_process_symbol && !options_.allow_process_symbol(s.name)) {
      if (s.bind == STB_WEAK) {  // refused weak reference: unbound, as if absent
        forward_slot_.erase(i);
        continue;
      }
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: undefined symbol %s is not allowed under %s (only the device API, libm, "
                  "the libc memory/string functions and the C++ ABI runtime listed in "
                  "docs/conventions.md)",
                  who, shown.c_str(), options_.policy_name.c_str());
    }
    if (forward) continue;  // symbol_address knows it after layout
    if (!address && !s.name.empty()) address = dlsym(RTLD_DEFAULT, s.name.c_str());
    if (const char *why = address ? nullptr : unbindable_runtime_symbol(s.name))
      return fail(SK_ERR_UNSUPPORTED, "%s: undefined symbol %s %s", who, shown.c_str(), why);
    if (!address && s.bind != STB_WEAK) {
      if (const char *origin = static_only_origin(s.name))
        return fail(SK_ERR_NOT_FOUND,
                    "%s: undefined symbol %s is neither a device API function nor a symbol of "
                    "this process: a program links it from %s, which no shared library exports, "
                    "and libsk does not provide it",
                    who, shown.c_str(), origin);
      return fail(SK_ERR_NOT_FOUND,
                  "%s: undefined symbol %s is neither a device API function nor a symbol of "
                  "this process",
                  who, shown.c_str());
    }
    resolved_[i] = reinterpret_cast<uint64_t>(address);  // unresolved weak: 0
  }
  return SK_OK;
}

sk_status Linker::collect_constraints(std::vector<PlacementConstraint> *out) {
  // Keep only the tightest bound of each kind per symbol: objects have many relocations.
  std::map<uint32_t, uint64_t> reach_seen;  // symbol -> tightest reach already required
  uint64_t low_limit = UINT64_MAX;
  std::string low_why;
  for (const elf::RelocationSection &rs : o_.relocation_sections) {
    if (section_offset_[rs.target] == kNotLoaded) continue;
    const elf::Section &target = o_.sections[rs.target];
    for (const elf::Relocation &r : rs.relocations) {
      if (far_rewritten(rs.target, r.offset)) continue;  // reaches through an absolute address
      const RelocNeeds kind = arch_->needs(r.type, target.data, r.offset);
      const std::string &name = symbol_name(r.symbol);
      char why[512];
      if (kind.reach && external(r.symbol) && !is_got_base(r.symbol)) {
        // A branch with a stub reaches anything: the stub is used when the symbol is far.
        bool stub = kind.branch && stub_slot_.count(r.symbol);
        auto seen = reach_seen.find(r.symbol);
        if (stub || (seen != reach_seen.end() && seen->second <= kind.reach)) continue;
        reach_seen[r.symbol] = kind.reach;
        uint64_t s = symbol_address(r.symbol);
        std::snprintf(why, sizeof why, "reach '%s' (0x%" PRIx64 ") with %s at %s", name.c_str(), s,
                      arch_->reloc_name(r.type).c_str(), where(rs.target, r.offset).c_str());
        out->push_back(reach_constraint(s, why, kind.reach));
      } else if (kind.abs_limit && !external(r.symbol) && kind.abs_limit < low_limit) {
        low_limit = kind.abs_limit;
        std::snprintf(why, sizeof why, "lie below %s for %s against '%s' at %s", size_text(low_limit).c_str(),
                      arch_->reloc_name(r.type).c_str(), name.c_str(), where(rs.target, r.offset).c_str());
        low_why = why;
      }
    }
  }
  if (low_limit != UINT64_MAX) out->push_back({0, low_limit, low_why});
  return SK_OK;
}

sk_status Linker::run(std::unique_ptr<LinkedObject> *out) {
  if (sk_status s = check_object()) return s;
  if (sk_status s = select_sections()) return s;
  plan_tls();
  plan_module_functions();
  reserve_dso_handle();
  if (sk_status s = scan_relocations()) return s;
  if (sk_status s = bind_undefined()) return s;
  if (sk_status s = layout()) return s;
  if (sk_status s = plan_far_data()) return s;
  std::vector<PlacementConstraint> constraints;
  if (sk_status s = collect_constraints(&constraints)) return s;
  // Near the libraries the object calls, so that calls reach without stubs when they can.
  uint64_t prefer = 0;
  for (size_t i = 1; i < resolved_.size() && !prefer; ++i) prefer = resolved_[i];
  if (!prefer) prefer = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "printf"));
  uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (sk_status s = place_mapping(total_, std::max(page, max_align_), constraints, prefer, o_.label, &mapping_))
    return s;
  if (sk_status s = write_contents()) return s;
  if (sk_status s = create_tls()) return s;
  if (sk_status s = relocate()) return s;
  if (sk_status s = write_far_data()) return s;
  drop_foreign_fdes();
  std::unique_ptr<LinkedObject> linked(new LinkedObject());
  if (sk_status s = seal(linked.get())) return s;
  export_symbols(linked.get());
  const size_t size = mapping_.size();
  if (sk_status s = collect_runtime(linked.get())) return s;
  linked->mapping_.reset(mapping_.release(), size);
  linked->tls_ = std::move(tls_);
  // Constructors run last, on the finished module: one that fails destroys it, undoing them.
  if (sk_status s = linked->runtime_->start()) return s;
  *out = std::move(linked);
  return SK_OK;
}

sk_status LinkedObject::link(const elf::Object &object, const LinkOptions &options,
                             std::unique_ptr<LinkedObject> *out) {
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "%s: no output for the link", object.label.c_str());
  try {
    Linker linker(object, options);
    return linker.run(out);
  } catch (const std::bad_alloc &) {
    return fail(SK_ERR_OUT_OF_MEMORY, "%s: out of memory while linking", object.label.c_str());
  } catch (...) {  // resolve_special is the caller's code: keep its exceptions out of the C API
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: an exception escaped while linking", object.label.c_str());
  }
}

LinkedObject::~LinkedObject() = default;  // runtime_ runs the destructors, then mapping_ unmaps

const LinkedFunction *LinkedObject::find_function(std::string_view name) const {
  for (const LinkedFunction &f : functions_)
    if (f.name == name) return &f;
  return nullptr;
}

void *LinkedObject::find_symbol(std::string_view name) const {
  for (const auto &[n, a] : symbols_)
    if (n == name) return a;
  return nullptr;
}

}  // namespace sk::host
