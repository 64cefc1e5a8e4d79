// The state of one link, shared by linker.cpp (checks and binding), linker_layout.cpp (layout,
// relocation, sealing) and linker_exports.cpp (functions, symbols, metadata). Internal.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "host/linker/code_layout.hpp"
#include "host/linker/compiler_runtime.hpp"
#include "host/linker/far_data/far_data.hpp"
#include "host/linker/linker.hpp"
#include "host/linker/linker_init.hpp"
#include "host/linker/relocation.hpp"
#include "host/linker/tls_block.hpp"

namespace sk::host {

class Linker {
 public:
  Linker(const elf::Object &object, const LinkOptions &options) : o_(object), options_(options) {}
  sk_status run(std::unique_ptr<LinkedObject> *out);

 private:
  enum Part { kText, kRodata, kData, kParts };
  static constexpr int64_t kNotLoaded = -1;

  // linker.cpp
  sk_status check_object();
  sk_status select_sections();
  sk_status scan_relocations();
  sk_status bind_undefined();
  sk_status collect_constraints(std::vector<PlacementConstraint> *out);
  // linker_layout.cpp
  sk_status layout();
  sk_status write_contents();
  sk_status relocate();
  sk_status seal(LinkedObject *lo);
  sk_status resolve_ifuncs();
  // linker_exports.cpp
  void export_symbols(LinkedObject *lo) const;
  // linker_init.cpp
  sk_status check_eh_frame(size_t section, bool *load) const;
  void reserve_dso_handle();
  void plan_module_functions();
  void drop_foreign_fdes();
  sk_status collect_runtime(LinkedObject *lo);
  // linker_tls.cpp
  void plan_tls();
  sk_status scan_tls_relocation(uint32_t section, const elf::Relocation &r, const RelocNeeds &kind);
  sk_status create_tls();
  bool is_tls_symbol(uint32_t sym) const;
  uint64_t tls_symbol_offset(uint32_t sym) const;
  uint64_t tls_entry_address(const RelocNeeds &kind, const elf::Relocation &r) const;
  std::string tls_variable(uint32_t sym, int64_t addend) const;  // the variable's name, for messages
  // linker_far_data.cpp
  sk_status plan_far_data();
  sk_status write_far_data();
  bool far_candidate(uint32_t section, const elf::Relocation &r) const;
  bool far_rewritten(uint32_t section, uint64_t offset) const;  // relocate() leaves it alone
  size_t far_stub_bytes() const;
  uint32_t enclosing_symbol(uint32_t section, uint64_t offset) const;

  bool external(uint32_t sym) const;     // address fixed outside the mapping (undefined, absolute)
  bool is_got_base(uint32_t sym) const;  // _GLOBAL_OFFSET_TABLE_: the GOT's address
  uint64_t symbol_address(uint32_t sym) const;
  uint64_t definition_address(uint32_t sym) const;  // an indirect function's: its resolver
  const std::string &symbol_name(uint32_t sym) const;
  std::string where(uint32_t section, uint64_t offset) const;  // ".text+0x1a"
  const char *label() const { return o_.label.c_str(); }

  const elf::Object &o_;
  const LinkOptions &options_;
  const RelocArch *arch_ = nullptr;       // the object's (= the host's) machine, set by check_object
  std::vector<Part> part_of_;             // per section, for loaded ones
  std::vector<int64_t> section_offset_;   // per section: offset in the mapping or kNotLoaded
  std::vector<int64_t> common_offset_;    // per symbol: SHN_COMMON allocation, or kNotLoaded
  std::vector<uint64_t> resolved_;        // per symbol: bound address of undefined symbols
  std::vector<bool> referenced_;          // per symbol: used by a relocation that is applied
  std::map<uint32_t, size_t> got_slot_;   // symbol -> GOT entry index
  std::map<uint32_t, size_t> stub_slot_;  // symbol -> call stub index
  uint64_t max_align_ = 1;
  uint64_t common_size_ = 0, common_align_ = 1;
  size_t part_begin_[kParts] = {}, part_end_[kParts] = {};
  size_t stubs_offset_ = 0, got_offset_ = 0, bss_offset_ = 0, total_ = 0;
  int64_t dso_offset_ = kNotLoaded;  // the module's __dso_handle, in .bss
  // Functions the linker writes into the module (compiler_runtime.hpp's ModuleForward), per
  // undefined symbol bound to one; and the process functions they jump to.
  std::map<uint32_t, size_t> forward_slot_;
  std::vector<std::pair<const ModuleForward *, uint64_t>> forwards_;
  size_t forwards_offset_ = 0;
  // Indirect functions (STT_GNU_IFUNC) defined by the object: each reference goes to a jump
  // through a slot (after the GOT) that holds what its resolver returned.
  std::map<uint32_t, size_t> ifunc_slot_;
  size_t ifunc_jumps_offset_ = 0, ifunc_slots_offset_ = 0;
  // Compiler helper variables the module gets its own copy of, in .bss.
  struct Copied {
    uint32_t symbol;
    const void *from;  // libsk's copy
    size_t size;
  };
  std::vector<Copied> copied_;
  Mapping mapping_;
  // Rewritten far data references (linker_far_data.cpp).
  struct FarData {
    uint32_t section;
    const elf::Relocation *reloc;
    FarDataSite site;
  };
  const FarDataRewriter *far_ = nullptr;
  std::vector<FarData> far_sites_;
  std::set<std::pair<uint32_t, uint64_t>> far_fields_;  // (section, offset) of their relocations
  size_t far_stubs_offset_ = 0;
  // Thread-local storage (linker_tls.cpp): per section, its offset in the module's TLS block
  // (or kNotLoaded); the block's size, alignment and initialised part.
  std::vector<int64_t> tls_offset_;
  uint64_t tls_size_ = 0, tls_align_ = 1, tls_image_size_ = 0;
  // The TLS entries code reaches through the GOT (after the ifunc slots), by model, symbol and
  // addend (only where the entry holds it): offset in their area.
  struct TlsKey {
    TlsUse use;
    uint32_t symbol;
    int64_t addend;
    bool operator<(const TlsKey &o) const {
      return std::tie(use, symbol, addend) < std::tie(o.use, o.symbol, o.addend);
    }
  };
  std::map<TlsKey, size_t> tls_entry_;
  size_t tls_entries_size_ = 0, tls_entries_offset_ = 0, tlsdesc_offset_ = 0;
  // The first relocation whose model needs the block at a fixed offset from the thread pointer.
  const elf::Relocation *static_tls_reloc_ = nullptr;
  uint32_t static_tls_section_ = 0;
  std::unique_ptr<TlsBlock> tls_;
};

}  // namespace sk::host
