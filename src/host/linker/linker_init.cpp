// The linker's passes for what runs at load and unload (see linker_init.hpp): the module's
// __dso_handle, its constructor and destructor lists, the registration of its .eh_frame.
#include "host/linker/linker_init.hpp"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "common/error.hpp"
#include "elf/eh_frame.hpp"
#include "host/executor/kernel_exception.hpp"
#include "host/linker/linker_impl.hpp"
#include "host/linker/thread_exit.hpp"

// glibc: runs what __cxa_atexit registered with this handle.
extern "C" void __cxa_finalize(void *dso_handle);

namespace sk::host {
namespace {

constexpr uint32_t kUnnumbered = 65536;  // after every numbered section, as ld places them
constexpr uint32_t kMaxPriority = 65535;

// "00101" -> 101; false for an empty or non-numeric suffix or one above 65535.
bool parse_priority(const std::string &digits, uint32_t *out) {
  if (digits.empty() || digits.size() > 5) return false;
  uint32_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v > kMaxPriority) return false;
  *out = v;
  return true;
}

using RegisterFrame = void (*)(void *);

// The process's unwinder (libgcc_s, which libstdc++'s __cxa_throw uses), not a copy linked into
// libsk: a table registered with another instance would be invisible to the throw.
RegisterFrame unwinder_function(const char *name) {
  return reinterpret_cast<RegisterFrame>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

InitSection init_section(const elf::Section &s) {
  struct Prefix {
    const char *name;
    InitSection::Kind kind;
    bool old_scheme;  // .ctors/.dtors
  };
  static const Prefix kPrefixes[] = {
      {".init_array", InitSection::Init, false},
      {".fini_array", InitSection::Fini, false},
      {".preinit_array", InitSection::Preinit, false},
      {".ctors", InitSection::Init, true},
      {".dtors", InitSection::Fini, true},
  };
  InitSection out;
  for (const Prefix &p : kPrefixes) {
    const size_t n = std::strlen(p.name);
    if (s.name.compare(0, n, p.name) != 0 || (s.name.size() != n && s.name[n] != '.')) continue;
    out.kind = p.kind;
    out.reversed = p.old_scheme;
    out.priority = kUnnumbered;
    uint32_t v = 0;
    if (s.name.size() > n && parse_priority(s.name.substr(n + 1), &v))
      out.priority = p.old_scheme ? kMaxPriority - v : v;
    return out;
  }
  if (s.type == SHT_INIT_ARRAY)
    out.kind = InitSection::Init;
  else if (s.type == SHT_FINI_ARRAY)
    out.kind = InitSection::Fini;
  else if (s.type == SHT_PREINIT_ARRAY)
    out.kind = InitSection::Preinit;
  out.priority = kUnnumbered;
  return out;
}

bool is_eh_frame(const elf::Section &s) { return s.name == ".eh_frame" || s.type == SHT_X86_64_UNWIND; }

const char *unbindable_runtime_symbol(const std::string &name) {
  // gcc's libgcov.a and clang's libclang_rt.profile.a: linked into a program, hidden there.
  if (name.compare(0, 7, "__gcov_") == 0 || name.compare(0, 10, "llvm_gcda_") == 0 || name == "llvm_gcov_init")
    return "belongs to the coverage runtime (objects built with --coverage or -fprofile-arcs call "
           "it), which a program links with its functions hidden: no process exports them; "
           "rebuild the object without --coverage";
  return nullptr;
}

sk_status ModuleRuntime::start() {
  started = true;
  // No unwinder in the process: an exception would terminate, as in a program without one.
  RegisterFrame reg = unwinder_function("__register_frame");
  if (!reg || !unwinder_function("__deregister_frame")) eh_frames.clear();
  // A table that starts with its terminator registers nothing (and could not be deregistered).
  std::erase_if(eh_frames, [](void *table) {
    uint32_t first_length = 0;
    std::memcpy(&first_length, table, sizeof first_length);
    return first_length == 0;
  });
  for (void *table : eh_frames) {
    reg(table);
    ++registered;
  }
  for (const Entry &e : init) {
    try {
      e.fn();
    } catch (...) {
      std::string what;
      try {
        what = current_exception_text();
      } catch (...) {
      }
      return fail(SK_ERR_KERNEL,
                  "%s: constructor %s threw %s; the load failed (the static objects already "
                  "constructed were destroyed)",
                  label.c_str(), e.name.c_str(), what.c_str());
    }
  }
  constructed = true;
  return SK_OK;
}

ModuleRuntime::~ModuleRuntime() {
  if (!started) return;
  // Destructors of a module whose constructors did not all run are not due; the static objects
  // that were constructed registered their destructors with __cxa_atexit, and go.
  for (const Entry &e : fini) {
    if (!e.fn) {
      if (dso_handle) __cxa_finalize(dso_handle);
      continue;
    }
    if (!constructed) continue;
    try {
      e.fn();
    } catch (...) {  // unload returns nothing: keep the message for sk_last_error
      std::string what;
      try {
        what = current_exception_text();
      } catch (...) {
      }
      fail(SK_ERR_KERNEL, "%s: destructor %s threw %s while the module was unloaded", label.c_str(), e.name.c_str(),
           what.c_str());
    }
  }
  // Destructors of its thread_local objects still pending on threads would run unmapped code.
  if (dso_handle) drop_thread_exit_destructors(dso_handle);
  for (size_t i = registered; i-- > 0;) unwinder_function("__deregister_frame")(eh_frames[i]);
}

sk_status Linker::check_eh_frame(size_t section, bool *load) const {
  // x86-64 -fno-pic objects may point their CIEs at the personality routine with a 32-bit
  // absolute address, which libstdc++'s cannot have. Such a table stays out, as unwind tables
  // were for C objects: the object loads unless it throws, which would end the process.
  *load = true;
  const elf::Section &eh = o_.sections[section];
  if (eh.data)
    if (sk_status st =
            elf::check_eh_frame(eh.data, eh.size, o_.section_label(static_cast<uint32_t>(section)), eh.name))
      return st;
  const elf::Relocation *absolute = nullptr;
  for (const elf::RelocationSection &rs : o_.relocation_sections) {
    if (rs.target != section) continue;
    for (const elf::Relocation &r : rs.relocations)
      if (r.symbol != 0 && o_.symbols[r.symbol].shndx == SHN_UNDEF &&
          arch_->needs(r.type, eh.data, r.offset).abs_limit != 0)
        absolute = &r;
  }
  if (!absolute) return SK_OK;
  *load = false;
  for (const elf::Symbol &s : o_.symbols)
    if (s.shndx == SHN_UNDEF && (s.name == "__cxa_throw" || s.name == "__cxa_rethrow"))
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: it throws ('%s'), but its '%s' reaches '%s' with %s, a 32-bit absolute "
                  "address (-fno-pic), which the unwinder's table cannot have here: rebuild the "
                  "object with -fPIC or -fPIE",
                  o_.section_label(static_cast<uint32_t>(section)).c_str(), s.name.c_str(), eh.name.c_str(),
                  o_.symbols[absolute->symbol].name.c_str(), arch_->reloc_name(absolute->type).c_str());
  return SK_OK;
}

void Linker::drop_foreign_fdes() {
  // In an object combined from several, a COMDAT group kept from one part stands for the
  // others' copies, and their relocations bind to it; but an FDE of another part describes
  // that part's own compilation of the function (another compiler or -O may have made other
  // code), and the unwinder could pick it. As ld discards it, zero its pc_begin: the unwinder
  // skips an FDE whose initial location is 0.
  if (o_.section_part.empty()) return;
  uint8_t *base = mapping_.address();
  for (const elf::RelocationSection &rs : o_.relocation_sections) {
    if (section_offset_[rs.target] == kNotLoaded || !is_eh_frame(o_.sections[rs.target])) continue;
    const uint32_t part = o_.section_part[rs.target];
    for (const elf::Relocation &r : rs.relocations) {
      const uint32_t shndx = o_.symbols[r.symbol].shndx;
      if (r.symbol == 0 || shndx == SHN_UNDEF || shndx >= o_.sections.size()) continue;
      if (!(o_.sections[shndx].flags & SHF_EXECINSTR) || o_.section_part[shndx] == part) continue;
      const unsigned width = arch_->needs(r.type, o_.sections[rs.target].data, r.offset).width;
      std::memset(base + section_offset_[rs.target] + r.offset, 0, width);
    }
  }
}

void Linker::plan_module_functions() {
  for (size_t i = 1; i < o_.symbols.size(); ++i) {
    const elf::Symbol &s = o_.symbols[i];
    const uint32_t sym = static_cast<uint32_t>(i);
    if (s.type == STT_GNU_IFUNC && s.shndx != SHN_UNDEF && s.shndx < o_.sections.size() &&
        section_offset_[s.shndx] != kNotLoaded)
      ifunc_slot_.emplace(sym, ifunc_slot_.size());
    if (s.shndx != SHN_UNDEF) continue;
    size_t size = 0;
    if (const void *variable = compiler_runtime_variable(s.name, &size)) {  // like a common symbol
      common_size_ = (common_size_ + 15) & ~uint64_t{15};
      common_offset_[i] = static_cast<int64_t>(common_size_);
      common_size_ += size;
      common_align_ = std::max<uint64_t>(common_align_, 16);
      max_align_ = std::max(max_align_, common_align_);
      copied_.push_back({sym, variable, size});
      continue;
    }
    const ModuleForward *f = module_forward(s.name);
    void *target = f ? dlsym(RTLD_DEFAULT, f->target) : nullptr;  // absent: bound as any symbol
    if (!target) continue;
    forward_slot_.emplace(sym, forwards_.size());
    forwards_.emplace_back(f, reinterpret_cast<uint64_t>(target));
  }
}

void Linker::reserve_dso_handle() {
  // One handle per module, a byte of its own mapping (in .bss, after the common symbols):
  // __cxa_atexit only compares it. Every __dso_handle symbol of the object (one per input
  // object when several were combined) shares it, and so do the functions that pass it on.
  auto is_handle = [](const elf::Symbol &s) { return s.shndx == SHN_UNDEF && s.name == "__dso_handle"; };
  if (forwards_.empty() && std::none_of(o_.symbols.begin(), o_.symbols.end(), is_handle)) return;
  common_size_ = (common_size_ + 7) & ~uint64_t{7};
  dso_offset_ = static_cast<int64_t>(common_size_);
  common_size_ += 8;
  common_align_ = std::max<uint64_t>(common_align_, 8);
  max_align_ = std::max(max_align_, common_align_);
  for (size_t i = 1; i < o_.symbols.size(); ++i)
    if (is_handle(o_.symbols[i])) common_offset_[i] = dso_offset_;
}

sk_status Linker::collect_runtime(LinkedObject *lo) {
  auto rt = std::make_unique<ModuleRuntime>();
  rt->label = o_.label;
  const uint64_t base = reinterpret_cast<uint64_t>(mapping_.address());
  if (dso_offset_ != kNotLoaded) rt->dso_handle = mapping_.address() + bss_offset_ + dso_offset_;
  // Entries of each kind in ld's order: by priority, then in input (section index) order, each
  // .ctors/.dtors section reversed. Init runs that list forwards and fini backwards, so that
  // what was constructed first is destroyed last, as in a linked program and dlopen/dlclose.
  struct Piece {
    InitSection what;
    size_t section;
  };
  std::vector<Piece> pieces;
  for (size_t i = 1; i < o_.sections.size(); ++i) {
    const elf::Section &s = o_.sections[i];
    if (section_offset_[i] == kNotLoaded) continue;
    if (is_eh_frame(s) && s.size > 0)
      rt->eh_frames.push_back(reinterpret_cast<void *>(base + static_cast<uint64_t>(section_offset_[i])));
    const InitSection what = init_section(s);
    if (what.kind == InitSection::Init || what.kind == InitSection::Fini) pieces.push_back({what, i});
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Piece &a, const Piece &b) { return a.what.priority < b.what.priority; });
  // Function names for messages: the object's function symbols by address.
  auto name_of = [&](uint64_t address, const std::string &section, size_t index) {
    for (size_t i = 1; i < o_.symbols.size(); ++i) {
      const elf::Symbol &s = o_.symbols[i];
      if (s.type == STT_FUNC && !s.name.empty() && symbol_address(static_cast<uint32_t>(i)) == address)
        return "'" + s.name + "'";
    }
    return "entry " + std::to_string(index) + " of '" + section + "'";
  };
  const uint64_t text_begin = base + part_begin_[kText], text_end = base + part_end_[kText];
  bool finalize_placed = false;
  for (const Piece &p : pieces) {
    const elf::Section &s = o_.sections[p.section];
    std::vector<ModuleRuntime::Entry> &list = p.what.kind == InitSection::Init ? rt->init : rt->fini;
    // crtbegin.o's __cxa_finalize call precedes the unnumbered destructors in a linked
    // .fini_array: it runs after them and before the numbered ones.
    if (p.what.kind == InitSection::Fini && p.what.priority == kUnnumbered && !finalize_placed) {
      list.push_back({nullptr, "__cxa_finalize"});
      finalize_placed = true;
    }
    if (s.size % 8 != 0)
      return fail(SK_ERR_BAD_BINARY, "%s: section '%s' holds %" PRIu64 " bytes, not a list of 8-byte addresses",
                  o_.section_label(static_cast<uint32_t>(p.section)).c_str(), s.name.c_str(), s.size);
    const auto *entries =
        reinterpret_cast<const uint64_t *>(base + static_cast<uint64_t>(section_offset_[p.section]));
    const size_t count = s.size / 8;
    for (size_t k = 0; k < count; ++k) {
      const size_t j = p.what.reversed ? count - 1 - k : k;
      const uint64_t fn = entries[j];
      if (fn == 0 || fn == UINT64_MAX) continue;  // the old lists' terminators and counts
      bool bound = std::find(resolved_.begin(), resolved_.end(), fn) != resolved_.end();
      if ((fn < text_begin || fn >= text_end) && !bound)
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: entry %zu of '%s' (0x%" PRIx64
                    ") is not a function of the object or one it "
                    "binds: its constructors cannot run",
                    o_.section_label(static_cast<uint32_t>(p.section)).c_str(), j, s.name.c_str(), fn);
      list.push_back({reinterpret_cast<void (*)()>(fn), name_of(fn, s.name, j)});
    }
  }
  if (!finalize_placed) rt->fini.push_back({nullptr, "__cxa_finalize"});
  std::reverse(rt->fini.begin(), rt->fini.end());
  lo->runtime_ = std::move(rt);
  return SK_OK;
}

}  // namespace sk::host
