// Symbol resolution across objects: archive member pull-in, COMDAT deduplication, one global
// symbol per name, and the renumbering of sections, symbols and relocations into one object.
#include "elf/combine.hpp"

#include <elf.h>

#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

#include "common/error.hpp"
#include "elf/archive.hpp"
#include "elf/demangle.hpp"
#include "elf/kernel_records.hpp"

namespace sk::elf {
namespace {

constexpr int64_t kDropped = -1;

bool special_index(uint32_t shndx) { return shndx == SHN_UNDEF || shndx == SHN_ABS || shndx == SHN_COMMON; }

struct SymbolRef {
  size_t part = SIZE_MAX;
  uint32_t symbol = 0;
  bool set() const { return part != SIZE_MAX; }
};

// What the parts say about one global name.
struct GlobalName {
  SymbolRef strong, common, weak, reference;
  bool strong_reference = false;
  uint64_t common_size = 0, common_align = 1;
};

class Combiner {
 public:
  explicit Combiner(std::string_view label) : label_(label) {}
  sk_status run(const std::vector<Input> &inputs, Object *out);

 private:
  sk_status read_inputs(const std::vector<Input> &inputs);
  sk_status pull(const std::string &name, const std::string &needed_by, bool *pulled);
  sk_status pull_members();
  sk_status drop_duplicate_groups();
  void number_sections(Object *c);
  sk_status resolve_globals(Object *c);
  void number_symbols(Object *c);
  void move_relocations(Object *c);
  void gather_metadata(Object *c);

  std::string label_;
  std::vector<Object> parts_;
  std::vector<Archive> archives_;
  std::vector<std::vector<bool>> pulled_;       // per archive, per member
  std::set<std::string, std::less<>> defined_;  // global names some part defines
  std::vector<std::vector<bool>> dropped_;      // per part, per section: in a duplicate group
  // Per part, per dropped section: the kept group's section of the same name (part, index).
  std::vector<std::map<uint32_t, std::pair<size_t, uint32_t>>> kept_twin_;
  std::vector<std::vector<int64_t>> section_index_;  // per part: new index or kDropped
  std::vector<std::vector<uint32_t>> symbol_index_;  // per part: new index
  std::map<std::string, GlobalName, std::less<>> globals_;
  std::vector<std::string> global_order_;  // names in order of first appearance
  uint32_t symtab_ = 0;
  std::vector<std::pair<std::string, std::string>> externs_;  // EXTERN(name) and its script
};

bool is_elf(const Input &in) {
  return in.bytes && in.size >= SELFMAG && std::memcmp(in.bytes, ELFMAG, SELFMAG) == 0;
}

// Skips blanks and /* comments */ from `at`; false for a comment that does not end.
bool skip_blanks(std::string_view text, size_t *at) {
  while (*at < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[*at]))) {
      ++*at;
    } else if (text.compare(*at, 2, "/*") == 0) {
      const size_t end = text.find("*/", *at + 2);
      if (end == std::string_view::npos) return false;
      *at = end + 2;
    } else {
      break;
    }
  }
  return true;
}

// A linker script of EXTERN commands only: does the text start with one?
bool is_extern_script(const Input &in) {
  if (!in.bytes || is_elf(in) || is_archive(in.bytes, in.size)) return false;
  std::string_view text(static_cast<const char *>(in.bytes), in.size);
  size_t at = 0;
  return skip_blanks(text, &at) && text.compare(at, 6, "EXTERN") == 0;
}

// EXTERN(a b, c) EXTERN(d): the names, in order.
sk_status read_extern_script(const Input &in, std::vector<std::pair<std::string, std::string>> *out) {
  std::string_view text(static_cast<const char *>(in.bytes), in.size);
  size_t at = 0;
  auto bad = [&](const char *what) {
    return fail(SK_ERR_BAD_BINARY,
                "%s: at byte %zu: %s; a linker script input may hold only EXTERN(symbol ...) commands "
                "and comments",
                in.label.c_str(), at, what);
  };
  while (true) {
    if (!skip_blanks(text, &at)) return bad("a comment does not end");
    if (at == text.size()) return SK_OK;
    if (text.compare(at, 6, "EXTERN") != 0) return bad("not an EXTERN command");
    at += 6;
    if (!skip_blanks(text, &at) || at == text.size() || text[at] != '(') return bad("EXTERN without '('");
    ++at;
    while (true) {
      if (!skip_blanks(text, &at) || at == text.size()) return bad("EXTERN( without ')'");
      if (text[at] == ')') break;
      if (text[at] == ',') {
        ++at;
        continue;
      }
      const size_t begin = at;
      while (at < text.size() && !std::isspace(static_cast<unsigned char>(text[at])) && text[at] != ',' &&
             text[at] != ')' && text[at] != '(')
        ++at;
      if (at == begin) return bad("'(' inside EXTERN");
      out->emplace_back(std::string(text.substr(begin, at - begin)), in.label);
    }
    ++at;
  }
}

void add_definitions(const Object &o, std::set<std::string, std::less<>> *defined) {
  for (const Symbol &s : o.symbols)
    if (s.bind != STB_LOCAL && s.shndx != SHN_UNDEF && !s.name.empty()) defined->insert(s.name);
}

sk_status Combiner::read_inputs(const std::vector<Input> &inputs) {
  for (const Input &in : inputs) {
    if (is_extern_script(in)) {
      if (sk_status st = read_extern_script(in, &externs_)) return st;
      continue;
    }
    if (is_archive(in.bytes, in.size)) {
      Archive a;
      if (sk_status st = parse_archive(in.bytes, in.size, in.label, &a)) return st;
      pulled_.emplace_back(a.members.size(), false);
      archives_.push_back(std::move(a));
      continue;
    }
    Object o;
    if (sk_status st = parse_object(in.bytes, in.size, in.label, &o)) return st;
    add_definitions(o, &defined_);
    parts_.push_back(std::move(o));
  }
  if (parts_.empty() && externs_.empty())
    return fail(SK_ERR_INVALID_ARGUMENT,
                "%s: no object to link, only archives: an archive member is linked only when an "
                "object of the set references a symbol it defines; add the objects that call into "
                "the archives, or a linker script input holding EXTERN(symbol ...) naming what to "
                "pull in (as ld -u does)",
                label_.c_str());
  return SK_OK;
}

// Pulls in the first member (first archive first) that defines `name`, if one does.
sk_status Combiner::pull(const std::string &name, const std::string &needed_by, bool *pulled) {
  *pulled = false;
  for (size_t a = 0; a < archives_.size(); ++a) {
    auto it = archives_[a].symbols.find(name);
    if (it == archives_[a].symbols.end() || pulled_[a][it->second]) continue;
    pulled_[a][it->second] = true;
    const ArchiveMember &m = archives_[a].members[it->second];
    Object o;
    if (sk_status st = parse_object(m.data, m.size, archives_[a].member_label(it->second), &o)) {
      prefix_error(label_ + ": '" + name + "', needed by " + needed_by);
      return st;
    }
    add_definitions(o, &defined_);
    parts_.push_back(std::move(o));
    *pulled = true;
    return SK_OK;
  }
  return SK_OK;
}

sk_status Combiner::pull_members() {
  bool pulled = false;
  for (const auto &[name, script] : externs_)
    if (!defined_.count(name))
      if (sk_status st = pull(name, script + "'s EXTERN", &pulled)) return st;
  // One pass over a growing list: members pulled are scanned in their turn.
  for (size_t p = 0; p < parts_.size(); ++p) {
    for (size_t k = 1; k < parts_[p].symbols.size(); ++k) {
      const Symbol &s = parts_[p].symbols[k];
      // Weak references do not pull members, as in ld.
      if (s.shndx != SHN_UNDEF || s.bind != STB_GLOBAL || s.name.empty() || defined_.count(s.name)) continue;
      const std::string name = s.name, needed_by = parts_[p].label;  // parts_ may grow below
      if (sk_status st = pull(name, needed_by, &pulled)) return st;
    }
  }
  for (const auto &[name, script] : externs_)
    if (!defined_.count(name))
      return fail(SK_ERR_NOT_FOUND, "%s: EXTERN(%s): no object or archive member of the set defines '%s'",
                  script.c_str(), name.c_str(), name.c_str());
  for (size_t p = 1; p < parts_.size(); ++p)
    if (parts_[p].machine != parts_[0].machine)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: e_machine %u is not %s's (%u): the objects of one module are for one machine",
                  parts_[p].label.c_str(), parts_[p].machine, parts_[0].label.c_str(), parts_[0].machine);
  return SK_OK;
}

// A group's member section indices, checked.
sk_status group_members(const Object &o, uint32_t group, uint32_t *flags, std::vector<uint32_t> *out) {
  const Section &g = o.sections[group];
  if (!g.data || g.size < 4 || g.size % 4 != 0)
    return fail(SK_ERR_BAD_BINARY, "%s: group section %u '%s': size %llu is not a list of words", o.label.c_str(),
                group, g.name.c_str(), (unsigned long long)g.size);
  std::memcpy(flags, g.data, 4);
  for (uint64_t at = 4; at < g.size; at += 4) {
    uint32_t index;
    std::memcpy(&index, g.data + at, 4);
    if (index == 0 || index >= o.sections.size() || index == group)
      return fail(SK_ERR_BAD_BINARY, "%s: group section %u '%s': member %u is not a section", o.label.c_str(), group,
                  g.name.c_str(), index);
    out->push_back(index);
  }
  return SK_OK;
}

sk_status Combiner::drop_duplicate_groups() {
  dropped_.resize(parts_.size());
  kept_twin_.resize(parts_.size());
  std::map<std::string, std::pair<size_t, std::vector<uint32_t>>> kept;  // signature -> part, sections
  for (size_t p = 0; p < parts_.size(); ++p) {
    const Object &o = parts_[p];
    dropped_[p].assign(o.sections.size(), false);
    for (uint32_t i = 1; i < o.sections.size(); ++i) {
      if (o.sections[i].type != SHT_GROUP) continue;
      uint32_t flags = 0;
      std::vector<uint32_t> members;
      if (sk_status st = group_members(o, i, &flags, &members)) return st;
      if (!(flags & GRP_COMDAT)) continue;
      const Symbol &sig = o.symbols[o.sections[i].info];  // checked by parse_object
      std::string signature =
          sig.type == STT_SECTION && sig.shndx < o.sections.size() ? o.sections[sig.shndx].name : sig.name;
      auto [it, fresh] = kept.emplace(signature, std::make_pair(p, members));
      if (fresh) continue;
      const Object &keeper = parts_[it->second.first];
      for (uint32_t m : members) {
        dropped_[p][m] = true;
        for (uint32_t km : it->second.second)
          if (keeper.sections[km].name == o.sections[m].name) kept_twin_[p][m] = {it->second.first, km};
      }
    }
    // Relocations of a dropped section go with it, even if the group did not list them.
    for (const RelocationSection &rs : o.relocation_sections)
      if (dropped_[p][rs.target]) dropped_[p][rs.index] = true;
    for (uint32_t i = 1; i < o.sections.size(); ++i)
      if (o.sections[i].type == SHT_REL && o.sections[i].info < o.sections.size() && dropped_[p][o.sections[i].info])
        dropped_[p][i] = true;
  }
  return SK_OK;
}

void Combiner::number_sections(Object *c) {
  c->sections.emplace_back();
  c->section_part.push_back(0);
  section_index_.resize(parts_.size());
  for (size_t p = 0; p < parts_.size(); ++p) {
    const Object &o = parts_[p];
    section_index_[p].assign(o.sections.size(), kDropped);
    for (uint32_t i = 1; i < o.sections.size(); ++i) {
      const Section &s = o.sections[i];
      // Groups are resolved here; the one symbol table is made below.
      if (dropped_[p][i] || s.type == SHT_GROUP || s.type == SHT_SYMTAB) continue;
      section_index_[p][i] = static_cast<int64_t>(c->sections.size());
      c->sections.push_back(s);
      c->section_part.push_back(static_cast<uint32_t>(p));
    }
  }
  symtab_ = static_cast<uint32_t>(c->sections.size());
  Section symtab;
  symtab.name = ".symtab";
  symtab.type = SHT_SYMTAB;
  symtab.entsize = sizeof(Elf64_Sym);
  symtab.align = 8;
  c->sections.push_back(symtab);
  c->section_part.push_back(0);
  for (size_t p = 0; p < parts_.size(); ++p) {
    const Object &o = parts_[p];
    for (uint32_t i = 1; i < o.sections.size(); ++i) {
      if (section_index_[p][i] == kDropped) continue;
      Section &s = c->sections[section_index_[p][i]];
      if (s.type == SHT_RELA || s.type == SHT_REL) {
        s.link = symtab_;
        s.info = s.info < o.sections.size() && section_index_[p][s.info] != kDropped
                     ? static_cast<uint32_t>(section_index_[p][s.info])
                     : 0;
      } else if ((s.flags & SHF_LINK_ORDER) && s.link < o.sections.size()) {
        s.link = section_index_[p][s.link] != kDropped ? static_cast<uint32_t>(section_index_[p][s.link]) : 0;
      }
    }
  }
}

sk_status Combiner::resolve_globals(Object *) {
  for (size_t p = 0; p < parts_.size(); ++p) {
    const Object &o = parts_[p];
    for (uint32_t k = 1; k < o.symbols.size(); ++k) {
      const Symbol &s = o.symbols[k];
      if (s.bind == STB_LOCAL || s.name.empty()) continue;
      auto [it, fresh] = globals_.try_emplace(s.name);
      if (fresh) global_order_.push_back(s.name);
      GlobalName &g = it->second;
      const SymbolRef here{p, k};
      const bool in_dropped = !special_index(s.shndx) && section_index_[p][s.shndx] == kDropped;
      if (s.shndx == SHN_UNDEF || in_dropped) {
        if (!g.reference.set()) g.reference = here;
        g.strong_reference |= s.bind != STB_WEAK;
      } else if (s.shndx == SHN_COMMON) {
        if (!g.common.set()) g.common = here;
        g.common_size = std::max(g.common_size, s.size);
        g.common_align = std::max<uint64_t>(g.common_align, s.value ? s.value : 1);
      } else if (s.bind == STB_WEAK) {
        if (!g.weak.set()) g.weak = here;
      } else if (!g.strong.set()) {
        g.strong = here;
      } else {
        const Symbol &first = parts_[g.strong.part].symbols[g.strong.symbol];
        if (first.bind == STB_GNU_UNIQUE && s.bind == STB_GNU_UNIQUE) continue;  // one instance, like COMDAT
        return fail(SK_ERR_BAD_BINARY,
                    "symbol %s is defined in %s and again in %s; a module links its objects "
                    "as one program: keep one definition (or make the other static, weak or inline)",
                    quoted_symbol(s.name).c_str(), parts_[g.strong.part].label.c_str(), o.label.c_str());
      }
    }
  }
  return SK_OK;
}

void Combiner::number_symbols(Object *c) {
  c->symbols.emplace_back();
  c->symbol_part.push_back(0);
  symbol_index_.resize(parts_.size());
  auto new_section = [&](size_t p, uint32_t shndx, Symbol *t) {
    if (special_index(shndx)) return;
    if (section_index_[p][shndx] != kDropped) {
      t->shndx = static_cast<uint32_t>(section_index_[p][shndx]);
    } else if (auto it = kept_twin_[p].find(shndx); it != kept_twin_[p].end()) {
      t->shndx = static_cast<uint32_t>(section_index_[it->second.first][it->second.second]);
    } else {  // a section of no use here (the symbol table, a dropped group's extra section)
      t->shndx = SHN_ABS;
      t->value = 0;
    }
  };
  // Locals first, per part, as in an ELF symbol table; then one symbol per global name.
  for (size_t p = 0; p < parts_.size(); ++p) {
    const Object &o = parts_[p];
    symbol_index_[p].assign(o.symbols.size(), 0);
    for (uint32_t k = 1; k < o.symbols.size(); ++k) {
      const Symbol &s = o.symbols[k];
      if (s.bind != STB_LOCAL && !s.name.empty()) continue;
      Symbol t = s;
      new_section(p, s.shndx, &t);
      symbol_index_[p][k] = static_cast<uint32_t>(c->symbols.size());
      c->symbols.push_back(std::move(t));
      c->symbol_part.push_back(static_cast<uint32_t>(p));
    }
  }
  std::map<std::string_view, uint32_t> global_index;
  for (const std::string &name : global_order_) {
    const GlobalName &g = globals_.find(name)->second;
    const SymbolRef w = g.strong.set() ? g.strong : g.common.set() ? g.common : g.weak.set() ? g.weak : g.reference;
    const Symbol &s = parts_[w.part].symbols[w.symbol];
    Symbol t = s;
    if (w.symbol == g.reference.symbol && w.part == g.reference.part && !g.strong.set() && !g.common.set() &&
        !g.weak.set()) {
      t.shndx = SHN_UNDEF;  // also a definition in a dropped group: it binds like a reference
      t.value = t.size = 0;
      t.bind = g.strong_reference ? STB_GLOBAL : STB_WEAK;
    } else if (w.part == g.common.part && w.symbol == g.common.symbol && !g.strong.set()) {
      t.size = g.common_size;
      t.value = g.common_align;
    } else {
      new_section(w.part, s.shndx, &t);
    }
    global_index.emplace(name, static_cast<uint32_t>(c->symbols.size()));
    c->symbols.push_back(std::move(t));
    c->symbol_part.push_back(
        static_cast<uint32_t>(c->symbols.back().shndx == SHN_UNDEF ? g.reference.part : w.part));
  }
  for (size_t p = 0; p < parts_.size(); ++p) {
    const Object &o = parts_[p];
    for (uint32_t k = 1; k < o.symbols.size(); ++k)
      if (o.symbols[k].bind != STB_LOCAL && !o.symbols[k].name.empty())
        symbol_index_[p][k] = global_index.find(o.symbols[k].name)->second;
  }
  c->sections[symtab_].size = c->symbols.size() * sizeof(Elf64_Sym);
}

void Combiner::move_relocations(Object *c) {
  for (size_t p = 0; p < parts_.size(); ++p) {
    for (RelocationSection &rs : parts_[p].relocation_sections) {
      if (section_index_[p][rs.index] == kDropped || section_index_[p][rs.target] == kDropped) continue;
      RelocationSection out;
      out.index = static_cast<uint32_t>(section_index_[p][rs.index]);
      out.target = static_cast<uint32_t>(section_index_[p][rs.target]);
      out.relocations = std::move(rs.relocations);
      for (Relocation &r : out.relocations) r.symbol = symbol_index_[p][r.symbol];
      c->relocation_sections.push_back(std::move(out));
    }
  }
}

void Combiner::gather_metadata(Object *c) {
  std::vector<uint32_t> records;
  for (uint32_t i = 1; i < c->sections.size(); ++i)
    if (c->sections[i].name == kKernelRecordsSection && c->sections[i].data) records.push_back(i);
  if (records.size() < 2) return;
  std::vector<uint8_t> all;
  for (uint32_t i : records) {
    const Section &s = c->sections[i];
    all.insert(all.end(), s.data, s.data + s.size);
    all.push_back(0);  // records are NUL-terminated; an unterminated last one ends here
  }
  c->part_images.push_back(std::move(all));
  Section &first = c->sections[records[0]];
  first.data = c->part_images.back().data();
  first.size = c->part_images.back().size();
}

sk_status Combiner::run(const std::vector<Input> &inputs, Object *out) {
  if (sk_status st = read_inputs(inputs)) return st;
  if (sk_status st = pull_members()) return st;
  if (sk_status st = drop_duplicate_groups()) return st;
  Object c;
  c.label = label_;
  c.elf_class = parts_[0].elf_class;
  c.machine = parts_[0].machine;
  c.type = parts_[0].type;
  number_sections(&c);
  if (sk_status st = resolve_globals(&c)) return st;
  number_symbols(&c);
  move_relocations(&c);
  for (Object &o : parts_) {
    c.part_labels.push_back(o.label);
    c.part_images.push_back(std::move(o.image));  // moved, not copied: Section::data stays valid
  }
  gather_metadata(&c);
  for (size_t a = 0; a < archives_.size(); ++a)
    for (const auto &[name, member] : archives_[a].symbols)
      if (!pulled_[a][member] && !defined_.count(name))
        c.archive_definitions.emplace(name, archives_[a].member_label(member));
  *out = std::move(c);
  return SK_OK;
}

}  // namespace

sk_status combine(const std::vector<Input> &inputs, std::string_view label, Object *out) {
  if (inputs.size() == 1 && !is_archive(inputs[0].bytes, inputs[0].size))
    return parse_object(inputs[0].bytes, inputs[0].size, inputs[0].label, out);
  if (inputs.empty()) return fail(SK_ERR_INVALID_ARGUMENT, "%s: no objects to link", std::string(label).c_str());
  Combiner combiner(label);
  return combiner.run(inputs, out);
}

}  // namespace sk::elf
