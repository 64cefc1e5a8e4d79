// What a linked object offers its users: defined global symbols, functions with the undefined
// symbols their code may reach (the planner learns which device-API calls a kernel makes from
// these), and the .sk.kernels metadata records.
#include <elf.h>

#include "common/device_api_usage.hpp"
#include "elf/function_references.hpp"
#include "elf/kernel_records.hpp"
#include "host/linker/linker_impl.hpp"
#include "host/linker/linker_init.hpp"

namespace sk::host {
namespace {

bool is_global(const elf::Symbol &s) {
  return s.bind == STB_GLOBAL || s.bind == STB_WEAK || s.bind == STB_GNU_UNIQUE;
}

}  // namespace

void Linker::export_symbols(LinkedObject *lo) const {
  // Per-function reachability (elf/function_references.hpp), with the paths to the device API
  // that explain and the planner's messages show.
  const auto by_function =
      elf::reach_by_function(o_, [](std::string_view name) { return device_api_bit(name) != 0; });
  const size_t n = o_.sections.size();
  for (size_t i = 1; i < o_.symbols.size(); ++i) {
    const elf::Symbol &s = o_.symbols[i];
    if (s.type == STT_FUNC && s.shndx != SHN_UNDEF && s.shndx < n && !s.name.empty() &&
        section_offset_[s.shndx] != kNotLoaded)
      lo->code_symbols_.push_back(
          {s.name, reinterpret_cast<void *>(symbol_address(static_cast<uint32_t>(i))), s.size});
    if (!is_global(s) || s.shndx == SHN_UNDEF || s.name.empty()) continue;
    bool in_section = s.shndx != SHN_ABS && s.shndx != SHN_COMMON;
    if (in_section && section_offset_[s.shndx] == kNotLoaded) continue;
    void *address = reinterpret_cast<void *>(symbol_address(static_cast<uint32_t>(i)));
    lo->symbols_.emplace_back(s.name, address);
    bool code = in_section && (o_.sections[s.shndx].flags & SHF_EXECINSTR);
    if (in_section && (s.type == STT_FUNC || (s.type == STT_NOTYPE && code)))
      if (auto it = by_function.find(s.name); it != by_function.end())
        lo->functions_.push_back({s.name, address, s.size, it->second.undefined, it->second.paths});
  }

  const uint64_t base = reinterpret_cast<uint64_t>(mapping_.address());
  for (size_t i = 1; i < n; ++i)
    if (is_eh_frame(o_.sections[i]) && section_offset_[i] != kNotLoaded && o_.sections[i].size > 0)
      lo->unwind_tables_.emplace_back(
          reinterpret_cast<const void *>(base + static_cast<uint64_t>(section_offset_[i])), o_.sections[i].size);

  lo->metadata_ = elf::kernel_records(o_);
}

}  // namespace sk::host
