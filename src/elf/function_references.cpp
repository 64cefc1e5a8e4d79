#include "elf/function_references.hpp"

#include <elf.h>

#include <algorithm>
#include <deque>
#include <set>

#include "elf/code_scan.hpp"

namespace sk::elf {
namespace {

bool in_section(const Symbol &s, const Object &obj) {
  return s.size > 0 && s.shndx != SHN_UNDEF && s.shndx < obj.sections.size();
}
// Functions and data objects with a size are nodes of their own; the rest of a section is one.
bool is_sized(const Symbol &s, const Object &obj) {
  return (s.type == STT_FUNC || s.type == STT_OBJECT) && in_section(s, obj);
}
bool is_code(const Section &s) { return (s.flags & SHF_EXECINSTR) && s.type != SHT_NOBITS && s.data; }
bool is_global(const Symbol &s) { return s.bind == STB_GLOBAL || s.bind == STB_WEAK || s.bind == STB_GNU_UNIQUE; }

// Whether a reference from section `shndx` lets code call the function through a pointer: not
// from the unwinder's tables nor from the constructor lists the loader runs, nor from what is
// not loaded (debug information).
bool takes_addresses(const Object &obj, uint32_t shndx) {
  const Section &s = obj.sections[shndx];
  if (!(s.flags & SHF_ALLOC)) return false;
  if (s.type == SHT_INIT_ARRAY || s.type == SHT_FINI_ARRAY || s.type == SHT_PREINIT_ARRAY) return false;
  if (obj.machine == EM_X86_64 && s.type == SHT_X86_64_UNWIND) return false;
  return s.name != ".eh_frame" && s.name.rfind(".ctors", 0) != 0 && s.name.rfind(".dtors", 0) != 0;
}

// How an instruction uses a relocation, from the relocation's type alone (where the code was not
// decoded): AArch64's branch relocations say it, and x86-64's PLT32, which assemblers emit for
// the field of a call or jmp (a tail call) in code; any other use may take the address.
ReachHow how_by_type(const Object &obj, uint32_t type, bool in_code) {
  if (obj.machine == EM_X86_64 && type == R_X86_64_PLT32 && in_code) return ReachHow::Call;
  if (obj.machine == EM_AARCH64) switch (type) {
      case R_AARCH64_CALL26: return ReachHow::Call;
      case R_AARCH64_JUMP26:
      case R_AARCH64_CONDBR19:
      case R_AARCH64_TSTBR14: return ReachHow::Jump;
    }
  return ReachHow::Reference;
}

class Graph {
 public:
  explicit Graph(const Object &obj)
      : obj_(obj),
        index_(obj),
        nsym_(static_cast<uint32_t>(obj.symbols.size())),
        edges_(obj.symbols.size() + obj.sections.size()),
        indirect_(edges_.size()),
        taken_flag_(edges_.size()),
        sized_(obj.sections.size()),
        max_end_(obj.sections.size()) {
    for (uint32_t i = 0; i < nsym_; ++i)
      if (const Symbol &s = obj.symbols[i]; is_sized(s, obj)) {
        const uint64_t end = s.value + std::min(s.size, ~uint64_t{0} - s.value);
        sized_[s.shndx].push_back({s.value, end, i});
      }
    for (size_t sec = 0; sec < sized_.size(); ++sec) {
      auto &v = sized_[sec];
      std::stable_sort(v.begin(), v.end(), [](const Sized &a, const Sized &b) { return a.begin < b.begin; });
      uint64_t m = 0;
      for (const Sized &s : v) max_end_[sec].push_back(m = std::max(m, s.end));
    }
    scan_code();
    link_relocations();
  }

  uint32_t section_node(uint32_t shndx) const { return nsym_ + shndx; }

  FunctionReach reach(uint32_t root, const Symbol &fn, const std::function<bool(std::string_view)> &want) const;

 private:
  struct Sized {
    uint64_t begin, end;
    uint32_t symbol;
  };
  struct Edge {
    uint32_t to;
    ReachHow how;
    int64_t at;  // section offset of the instruction or relocation, -1 unknown
  };
  // The first call or jump through a pointer a node makes.
  struct Indirect {
    bool any = false;
    ReachHow how = ReachHow::IndirectCall;
    int64_t at = -1;
  };

  // The sized symbol of section `shndx` whose bytes hold `offset` (the lowest index when several
  // do), or -1.
  long symbol_at(uint32_t shndx, uint64_t offset) const {
    if (shndx >= sized_.size()) return -1;
    const auto &v = sized_[shndx];
    size_t i = std::upper_bound(v.begin(), v.end(), offset, [](uint64_t o, const Sized &s) { return o < s.begin; }) -
               v.begin();
    long best = -1;
    while (i > 0 && max_end_[shndx][i - 1] > offset) {
      --i;
      if (v[i].end > offset && (best < 0 || v[i].symbol < static_cast<uint32_t>(best))) best = v[i].symbol;
    }
    return best;
  }

  void add_edge(uint32_t from, uint32_t to, ReachHow how, int64_t at) {
    if (from != to) edges_[from].push_back({to, how, at});
  }
  void take(uint32_t node) {
    if (!taken_flag_[node]) taken_flag_[node] = true, taken_.push_back(node);
  }

  // An edge from `owner` to what lies at `address` of section `shndx`; false when no sized
  // symbol covers it. A reference to a label inside a function leads nowhere: only that
  // function jumps to its own labels (switch cases, landing pads).
  bool link_address(uint32_t owner, uint32_t shndx, uint64_t address, ReachHow how, int64_t at, bool taking) {
    const long hit = symbol_at(shndx, address);
    if (hit < 0) return false;
    const Symbol &g = obj_.symbols[hit];
    const bool function = g.type == STT_FUNC;
    if (function && how == ReachHow::Reference && address != g.value) return true;
    add_edge(owner, static_cast<uint32_t>(hit), function ? how : ReachHow::Reference, at);
    if (function && taking && how == ReachHow::Reference) take(static_cast<uint32_t>(hit));
    return true;
  }
  // The same where nothing sized is there: the section's node (all its functions, for code).
  void link_unnamed(uint32_t owner, uint32_t shndx, ReachHow how, int64_t at, bool taking) {
    add_edge(owner, section_node(shndx), how, at);
    if (taking && how == ReachHow::Reference && is_code(obj_.sections[shndx])) take(section_node(shndx));
  }

  void scan(const CodeRange &r, CodeScan *out) const {
    if (r.begin >= r.end) return;
    if (obj_.machine == EM_AARCH64) return scan_aarch64(index_, r, out);
#if defined(SK_X86_64_DECODER)
    if (obj_.machine == EM_X86_64) return scan_x86_64(index_, r, out);
#endif
    out->decoded = false;  // no decoder for this machine in this build
  }

  // Decodes every function of every code section, and the parts no function covers (which
  // belong to the section's node), then turns what the code says into edges.
  void scan_code() {
    for (uint32_t sec = 0; sec < obj_.sections.size(); ++sec) {
      const Section &s = obj_.sections[sec];
      if (!is_code(s)) continue;
      uint64_t covered = 0;
      CodeScan &rest = scans_[section_node(sec)];
      for (const Sized &z : sized_[sec]) {
        const uint32_t f = z.symbol;
        add_edge(section_node(sec), f, ReachHow::Member, -1);
        const uint64_t end = std::min(z.end, s.size);
        if (z.begin > covered) scan({sec, covered, std::min(z.begin, s.size)}, &rest);
        covered = std::max(covered, end);
        if (obj_.symbols[f].type == STT_FUNC && !scans_.count(f)) scan({sec, z.begin, end}, &scans_[f]);
      }
      if (covered < s.size) scan({sec, covered, s.size}, &rest);
    }
    for (auto &[node, sc] : scans_) {
      const uint32_t sec = node >= nsym_ ? node - nsym_ : obj_.symbols[node].shndx;
      const bool taking = takes_addresses(obj_, sec);
      for (const CodeScan::Target &t : sc.targets)
        if (!link_address(node, sec, t.to, t.how, static_cast<int64_t>(t.at), taking) &&
            t.to < obj_.sections[sec].size)
          link_unnamed(node, sec, t.how, static_cast<int64_t>(t.at), taking);
      if (!sc.indirect.empty())
        indirect_[node] = {true, sc.indirect[0].second, static_cast<int64_t>(sc.indirect[0].first)};
      if (!sc.decoded) {
        add_edge(node, section_node(sec), ReachHow::Undecoded, -1);
        indirect_[node] = {true, ReachHow::Undecoded, -1};
      }
      consumed_.insert(sc.table_entries.begin(), sc.table_entries.end());
    }
  }

  void link_relocations() {
    const uint32_t nsec = static_cast<uint32_t>(obj_.sections.size());
    for (const RelocationSection &rs : obj_.relocation_sections) {
      const uint32_t ts = rs.target;
      if (ts >= nsec || !(obj_.sections[ts].flags & SHF_ALLOC)) continue;
      const bool code = is_code(obj_.sections[ts]);
      const bool taking_section = takes_addresses(obj_, ts);
      for (const Relocation &r : rs.relocations) {
        if (r.symbol == 0 || r.symbol >= nsym_ || consumed_.count({ts, r.offset})) continue;
        const long o = symbol_at(ts, r.offset);
        const uint32_t owner = o >= 0 ? static_cast<uint32_t>(o) : section_node(ts);
        // How the instruction uses the address, and where it points: S + A + adjust. Without
        // the decoder an x86-64 PC-relative field may be followed by an immediate of 0, 1, 2
        // or 4 bytes: each is a candidate.
        ReachHow how = how_by_type(obj_, r.type, code);
        int64_t at = static_cast<int64_t>(r.offset);
        std::vector<int64_t> adjusts{0};
        const CodeScan::Use *use = nullptr;
        if (auto sc = code ? scans_.find(owner) : scans_.end(); sc != scans_.end())
          if (auto u = sc->second.relocated.find(r.offset); u != sc->second.relocated.end()) use = &u->second;
        if (use) {
          how = use->how;
          at = static_cast<int64_t>(use->insn);
          adjusts = {use->adjust};
        } else if (code && obj_.machine == EM_X86_64 && x86_64_pc_relative(r.type)) {
          adjusts = {4, 5, 6, 8};
        }
        const bool taking = taking_section && how == ReachHow::Reference;
        const Symbol &t = obj_.symbols[r.symbol];
        if (t.shndx == SHN_UNDEF) {
          if (t.name.empty()) continue;
          add_edge(owner, r.symbol, how, at);
          if (taking) take(r.symbol);
          continue;
        }
        if (t.shndx >= nsec) continue;  // SHN_ABS, SHN_COMMON: no code
        if (is_sized(t, obj_)) {
          add_edge(owner, r.symbol, t.type == STT_FUNC ? how : ReachHow::Reference, at);
          if (taking && t.type == STT_FUNC) take(r.symbol);
          continue;
        }
        // A section symbol or a label, + addend: address arithmetic, which wraps (an addend near
        // INT64_MAX plus an adjust must not overflow a signed sum).
        bool hit = false;
        for (int64_t adjust : adjusts)
          hit |=
              link_address(owner, t.shndx, t.value + static_cast<uint64_t>(r.addend) + static_cast<uint64_t>(adjust),
                           how, at, taking);
        if (!hit) link_unnamed(owner, t.shndx, how, at, taking);
      }
    }
  }

  std::string name_of(uint32_t node) const {
    if (node >= nsym_) return obj_.sections[node - nsym_].name;
    const std::string &n = obj_.symbols[node].name;
    return n.empty() ? "symbol #" + std::to_string(node) : n;
  }

  const Object &obj_;
  ObjectIndex index_;
  uint32_t nsym_;
  std::vector<std::vector<Edge>> edges_;  // nodes: symbols, then one per section
  std::vector<Indirect> indirect_;
  std::vector<uint32_t> taken_;  // nodes whose address is taken, in the order met
  std::vector<bool> taken_flag_;
  std::vector<std::vector<Sized>> sized_;       // per section, by start
  std::vector<std::vector<uint64_t>> max_end_;  // per section: the largest end of sized_[..i]
  std::map<uint32_t, CodeScan> scans_;
  std::set<std::pair<uint32_t, uint64_t>> consumed_;  // jump table entries: (section, offset)
};

FunctionReach Graph::reach(uint32_t root, const Symbol &fn,
                           const std::function<bool(std::string_view)> &want) const {
  struct Visit {
    int64_t parent = -2;  // -2: not reached; -1: the root
    ReachHow how = ReachHow::Call;
    int64_t at = -1;
  };
  std::vector<Visit> v(edges_.size());
  std::deque<uint32_t> queue;
  std::vector<uint32_t> order;
  auto visit = [&](uint32_t m, int64_t parent, ReachHow how, int64_t at) {
    if (v[m].parent != -2) return;
    v[m] = {parent, how, at};
    queue.push_back(m);
  };
  visit(root, -1, ReachHow::Call, -1);
  int64_t pointer = -1;  // the first node reached that calls or jumps through a pointer
  bool expanded = false;
  for (;;) {
    while (!queue.empty()) {
      const uint32_t m = queue.front();
      queue.pop_front();
      order.push_back(m);
      for (const Edge &e : edges_[m]) visit(e.to, m, e.how, e.at);
      if (indirect_[m].any && pointer < 0) pointer = m;
    }
    // Only what the direct edges do not reach is reached through a pointer.
    if (expanded || pointer < 0) break;
    expanded = true;
    for (uint32_t a : taken_) visit(a, pointer, indirect_[pointer].how, indirect_[pointer].at);
  }

  FunctionReach out;
  std::set<std::string> names;
  for (uint32_t m : order)
    if (m < nsym_ && obj_.symbols[m].shndx == SHN_UNDEF) names.insert(obj_.symbols[m].name);
  out.undefined.assign(names.begin(), names.end());
  if (!want) return out;
  for (uint32_t m : order) {
    if (m >= nsym_ || obj_.symbols[m].shndx != SHN_UNDEF || !want(obj_.symbols[m].name) ||
        out.paths.count(obj_.symbols[m].name))
      continue;
    std::vector<ReachStep> steps;
    for (uint32_t n = m; v[n].parent >= 0; n = static_cast<uint32_t>(v[n].parent)) {
      const uint32_t p = static_cast<uint32_t>(v[n].parent);
      ReachStep s;
      s.how = v[n].how;
      s.to = name_of(n);
      s.to_section = n >= nsym_;
      // The root is named as the function even when it is its section's node (no size).
      const bool is_root = p == root;
      s.from = is_root ? fn.name : name_of(p);
      s.from_section = !is_root && p >= nsym_;
      const uint64_t base = is_root ? fn.value : p < nsym_ ? obj_.symbols[p].value : 0;
      if (v[n].at >= 0 && static_cast<uint64_t>(v[n].at) >= base) s.at = v[n].at - static_cast<int64_t>(base);
      steps.push_back(std::move(s));
    }
    std::reverse(steps.begin(), steps.end());
    out.paths[obj_.symbols[m].name] = std::move(steps);
  }
  return out;
}

}  // namespace

std::map<std::string, FunctionReach> reach_by_function(const Object &obj,
                                                       const std::function<bool(std::string_view)> &want_path) {
  Graph g(obj);
  std::map<std::string, FunctionReach> out;
  for (uint32_t i = 0; i < obj.symbols.size(); ++i) {
    const Symbol &s = obj.symbols[i];
    if (!is_global(s) || s.name.empty() || s.shndx == SHN_UNDEF || s.shndx >= obj.sections.size()) continue;
    const bool code = obj.sections[s.shndx].flags & SHF_EXECINSTR;
    if (s.type != STT_FUNC && !(s.type == STT_NOTYPE && code)) continue;
    // A function without a size is what its section's node reaches.
    const uint32_t root = s.type == STT_FUNC && in_section(s, obj) ? i : g.section_node(s.shndx);
    out[s.name] = g.reach(root, s, want_path);
  }
  return out;
}

}  // namespace sk::elf
