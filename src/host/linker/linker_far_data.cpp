// The far-data pass: which PC-relative data references in code are left out of the placement's
// constraints and rewritten (host/linker/far_data/far_data.hpp), and the rewriting itself once relocated.
//
// The placement keeps the references it can: the object's own constraints always, and the
// largest (by number of references) set of external targets that one placement can reach. The
// others are rewritten; when every target can be reached, nothing is.
#include <elf.h>

#include <algorithm>
#include <cinttypes>

#include "common/error.hpp"
#include "host/linker/linker_impl.hpp"

namespace sk::host {
namespace {

struct Target {
  uint32_t symbol;
  uint64_t address;
  uint64_t reach;
  size_t references;
};

}  // namespace

bool Linker::far_candidate(uint32_t section, const elf::Relocation &r) const {
  if (!far_ || part_of_[section] != kText || r.symbol == 0 || !external(r.symbol) || is_got_base(r.symbol))
    return false;
  if (!far_->applies(r.type)) return false;
  const RelocNeeds kind = arch_->needs(r.type, o_.sections[section].data, r.offset);
  return kind.reach && !kind.branch;
}

bool Linker::far_rewritten(uint32_t section, uint64_t offset) const {
  return far_fields_.count({section, offset}) != 0;
}

size_t Linker::far_stub_bytes() const { return far_ ? far_->stub_size * far_sites_.size() : 0; }

// The function (or, without one, the section) that holds `offset`: where decoding starts.
uint32_t Linker::enclosing_symbol(uint32_t section, uint64_t offset) const {
  uint32_t best = 0;
  for (uint32_t i = 1; i < o_.symbols.size(); ++i) {
    const elf::Symbol &s = o_.symbols[i];
    if (s.shndx != section || s.value > offset || s.name.empty() || s.name[0] == '$' || s.name[0] == '.') continue;
    if (s.type != STT_FUNC && s.type != STT_NOTYPE) continue;
    if (!best || s.value > o_.symbols[best].value) best = i;
  }
  return best;
}

sk_status Linker::plan_far_data() {
  far_ = far_data_rewriter();
  if (!far_) return SK_OK;
  std::vector<Target> targets;
  size_t candidates = 0;
  for (const elf::RelocationSection &rs : o_.relocation_sections) {
    if (section_offset_[rs.target] == kNotLoaded) continue;
    for (const elf::Relocation &r : rs.relocations) {
      if (!far_candidate(rs.target, r)) continue;
      far_fields_.insert({rs.target, r.offset});  // for now: so that collect_constraints skips it
      ++candidates;
      auto t = std::find_if(targets.begin(), targets.end(), [&](const Target &x) { return x.symbol == r.symbol; });
      const uint64_t reach = arch_->needs(r.type, o_.sections[rs.target].data, r.offset).reach;
      if (t == targets.end())
        targets.push_back({r.symbol, symbol_address(r.symbol), reach, 1});
      else
        t->references++, t->reach = std::min(t->reach, reach);
    }
  }
  if (targets.empty()) return SK_OK;
  // What must hold whatever is rewritten: the window of the other constraints.
  std::vector<PlacementConstraint> hard;
  if (sk_status s = collect_constraints(&hard)) return s;
  far_fields_.clear();
  uint64_t lo = 0, hi = UINT64_MAX;
  for (const PlacementConstraint &c : hard) lo = std::max(lo, c.low), hi = std::min(hi, c.high);
  // An upper bound of the mapping's size once the stubs are added, and its alignment's slack.
  const uint64_t size = total_ + far_->stub_size * candidates + 2 * std::max<uint64_t>(max_align_, 1u << 16);
  if (hi < lo || hi - lo < size) return SK_OK;  // the placement names the conflict
  // Keep the most referenced run of targets (sorted by address) that one window reaches.
  std::sort(targets.begin(), targets.end(), [](const Target &a, const Target &b) { return a.address < b.address; });
  size_t best_begin = 0, best_end = 0, best_refs = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    uint64_t l = lo, h = hi;
    size_t refs = 0;
    for (size_t j = i; j < targets.size(); ++j) {
      PlacementConstraint c = reach_constraint(targets[j].address, "", targets[j].reach);
      l = std::max(l, c.low), h = std::min(h, c.high);
      if (h < l || h - l < size) break;
      refs += targets[j].references;
      if (refs > best_refs) best_begin = i, best_end = j + 1, best_refs = refs;
    }
  }
  if (best_begin == 0 && best_end == targets.size()) return SK_OK;  // everything reaches
  std::vector<bool> far(o_.symbols.size(), false);
  for (size_t i = 0; i < targets.size(); ++i)
    if (i < best_begin || i >= best_end) far[targets[i].symbol] = true;
  for (const elf::RelocationSection &rs : o_.relocation_sections) {
    if (section_offset_[rs.target] == kNotLoaded) continue;
    const elf::Section &code = o_.sections[rs.target];
    // Relocations usually come in address order: decoding resumes after the previous site of
    // the same function instead of starting over.
    uint32_t last_start = UINT32_MAX;
    uint64_t resume = 0;
    for (const elf::Relocation &r : rs.relocations) {
      if (!far_candidate(rs.target, r) || !far[r.symbol]) continue;
      const uint32_t start = enclosing_symbol(rs.target, r.offset);
      uint64_t from = start ? o_.symbols[start].value : 0;
      if (start == last_start && r.offset >= resume) from = resume;
      FarDataSite site;
      std::string why;
      if (!far_->plan(code.data, code.size, from, r.offset, &site, &why))
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: %s at %s (in '%s') reaches '%s' (0x%" PRIx64
                    "), too far from the object's "
                    "other targets for its displacement, and %s (rebuild the object with -fPIC to "
                    "reach it through the GOT)",
                    o_.section_label(rs.target).c_str(), arch_->reloc_name(r.type).c_str(),
                    where(rs.target, r.offset).c_str(), start ? o_.symbols[start].name.c_str() : code.name.c_str(),
                    symbol_name(r.symbol).c_str(), symbol_address(r.symbol), why.c_str());
      last_start = start, resume = site.offset + site.length;
      far_sites_.push_back({rs.target, &r, site});
      far_fields_.insert({rs.target, r.offset});
    }
  }
  return layout();  // again, with room for the stubs
}

sk_status Linker::write_far_data() {
  uint8_t *base = mapping_.address();
  const uint64_t b = reinterpret_cast<uint64_t>(base);
  for (size_t k = 0; k < far_sites_.size(); ++k) {
    const FarData &f = far_sites_[k];
    const uint64_t insn = static_cast<uint64_t>(section_offset_[f.section]) + f.site.offset;
    const uint64_t stub = far_stubs_offset_ + k * far_->stub_size;
    const uint64_t target = symbol_address(f.reloc->symbol) + static_cast<uint64_t>(f.reloc->addend);
    std::string why;
    if (!far_->write(base + insn, b + insn, f.site, static_cast<unsigned>(f.reloc->offset - f.site.offset),
                     base + stub, b + stub, target, &why))
      return fail(SK_ERR_UNSUPPORTED, "%s: rewriting the reference to '%s' at %s failed: %s",
                  o_.section_label(f.section).c_str(), symbol_name(f.reloc->symbol).c_str(),
                  where(f.section, f.reloc->offset).c_str(), why.c_str());
  }
  return SK_OK;
}

}  // namespace sk::host
