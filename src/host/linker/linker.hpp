// The host linker: turns an ELF relocatable object of the host's machine (x86-64 or AArch64, one
// relocation file per architecture, picked by e_machine) into code and data mapped in this
// process, ready to call.
//
// Layout: SHF_ALLOC sections laid into one fresh mapping — code and call stubs, then read-only
// data and the GOT, then writable data and .bss — placed within reach of what the object must
// reach with short PC-relative relocations (±2 GiB for R_X86_64_PC32, ±4 GiB for AArch64's ADRP)
// or below 2/4 GiB for absolute 32-bit ones against its own sections. Calls beyond a branch's
// reach (x86-64 ±2 GiB, AArch64 ±128 MiB) go through call stubs. Data references in code that
// no placement reaches together with the others (a copy-relocated `stderr` and libc's `stdin`)
// are left out of the placement and rewritten to go through the variable's absolute address
// (host/linker/far_data/far_data.hpp): the variable is shared, never copied.
// Relocations applied with overflow checks; undefined symbols bound through LinkOptions (the
// device API) and then to the process's symbols (dlsym); finally each part is sealed: code
// read+execute, constants and GOT read-only, data read+write. No page is ever writable and
// executable at once.
#pragma once
#include <sk.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/reach_path.hpp"
#include "elf/elf_object.hpp"
#include "host/linker/code_layout.hpp"

namespace sk::host {

class ModuleRuntime;
class TlsBlock;

struct LinkOptions {
  // Resolves an undefined symbol before the process's symbols are searched (the device API of
  // the device the object is loaded on). Returns nullptr when the name is not special.
  std::function<void *(std::string_view name)> resolve_special;
  // The symbol policy (host/linker/symbol_policy.hpp): whether a symbol that is not special may bind
  // to the process's symbols. Unset: every symbol may. A refused symbol fails the link with
  // SK_ERR_UNSUPPORTED naming it and `policy_name`, unless it is weak: then it stays unbound (0).
  std::function<bool(std::string_view name)> allow_process_symbol;
  std::string policy_name = "symbols=process";
};

struct LinkedFunction {
  std::string name;
  void *address = nullptr;
  uint64_t size = 0;
  // Undefined symbols that code reachable from this function may reference
  // (elf/function_references.hpp), and how it reaches those of the device API.
  std::vector<std::string> undefined_references;
  std::map<std::string, std::vector<ReachStep>> device_api_paths;
};

// A function symbol of the object, local ones too: what debuggers and profilers name.
struct CodeSymbol {
  std::string name;
  void *address = nullptr;
  uint64_t size = 0;
};

struct MappedRegion {
  void *address = nullptr;
  size_t size = 0;
  int protection = 0;  // PROT_* after sealing
};

class LinkedObject {
 public:
  // Links `object` (already parsed). Errors name object.label and the culprit (section, symbol,
  // relocation type and offset): SK_ERR_BAD_BINARY (malformed), SK_ERR_UNSUPPORTED (wrong
  // machine, TLS, .preinit_array, unknown relocation, a 32-bit relocation that cannot reach nor
  // be rewritten),
  // SK_ERR_NOT_FOUND (unresolved non-weak symbol), SK_ERR_OUT_OF_MEMORY, SK_ERR_KERNEL (a
  // constructor threw). The constructors have run when it returns SK_OK.
  static sk_status link(const elf::Object &object, const LinkOptions &options, std::unique_ptr<LinkedObject> *out);

  ~LinkedObject();  // unmaps everything
  LinkedObject(const LinkedObject &) = delete;
  LinkedObject &operator=(const LinkedObject &) = delete;

  // Global or weak defined function (STT_FUNC, or STT_NOTYPE in an executable section).
  const LinkedFunction *find_function(std::string_view name) const;
  const std::vector<LinkedFunction> &functions() const { return functions_; }
  // Address of any defined global/weak symbol (function or data), or nullptr.
  void *find_symbol(std::string_view name) const;
  // The NUL-separated records of section .sk.kernels (empty strings dropped).
  const std::vector<std::string> &metadata_records() const { return metadata_; }
  const std::vector<MappedRegion> &regions() const { return regions_; }
  const std::vector<CodeSymbol> &code_symbols() const { return code_symbols_; }
  // The loaded unwind tables (.eh_frame, relocated): address and size, for debuggers.
  const std::vector<std::pair<const void *, size_t>> &unwind_tables() const { return unwind_tables_; }

 private:
  LinkedObject() = default;
  friend class Linker;
  std::vector<LinkedFunction> functions_;
  std::vector<std::pair<std::string, void *>> symbols_;
  std::vector<std::string> metadata_;
  std::vector<MappedRegion> regions_;
  std::vector<CodeSymbol> code_symbols_;
  std::vector<std::pair<const void *, size_t>> unwind_tables_;
  Mapping mapping_;
  std::unique_ptr<TlsBlock> tls_;  // its thread-locals (tls_block.hpp)
  // Constructors, destructors, unwind registration (linker_init.hpp); declared after mapping_
  // and tls_, so destroyed before them: the destructors run while the code and the
  // thread-locals are still there.
  std::unique_ptr<ModuleRuntime> runtime_;
};

}  // namespace sk::host
