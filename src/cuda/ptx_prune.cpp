#include "cuda/ptx_prune.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>

#include "cuda/ptx_parse.hpp"
#include "cuda/ptx_statement.hpp"
#include "elf/shared_overlay_layout.hpp"

namespace sk::cuda {

namespace {

// The definitions of `m` by name.
std::map<std::string_view, const PtxFunctionText *> definitions(const PtxModule &m) {
  std::map<std::string_view, const PtxFunctionText *> defined;
  for (const PtxFunctionText &f : m.functions)
    if (f.definition) defined[f.name] = &f;
  return defined;
}

// The definitions that `todo` (names) reach through their uses, themselves included.
std::set<std::string_view> reached(const std::map<std::string_view, const PtxFunctionText *> &defined,
                                   std::vector<std::string_view> todo) {
  std::set<std::string_view> kept;
  while (!todo.empty()) {
    const std::string_view name = todo.back();
    todo.pop_back();
    const auto it = defined.find(name);
    if (it == defined.end() || !kept.insert(name).second) continue;
    todo.insert(todo.end(), it->second->uses.begin(), it->second->uses.end());
  }
  return kept;
}

// The functions `m` keeps for a link: those its `roots` reach, with the exported ones of `called`
// and those a module-scope variable names.
std::set<std::string_view> kept_for_link(const PtxModule &m,
                                         const std::map<std::string_view, const PtxFunctionText *> &defined,
                                         std::vector<std::string_view> roots, const std::set<std::string> *called) {
  for (const PtxFunctionText &f : m.functions)
    if (f.definition && (f.named || (f.exported && (!called || called->count(f.name))))) roots.push_back(f.name);
  return reached(defined, std::move(roots));
}

// It counts the block's threads itself: a barrier of the whole block, a read of %ntid.x.
bool counts_itself(const PtxFunctionText &f) { return !f.barrier_counts.empty() || !f.block_dims.empty(); }

// The definitions that count the block's threads, or reach one that does: a narrower kernel
// calls its own copy of each.
std::set<std::string_view> counting(const std::map<std::string_view, const PtxFunctionText *> &defined) {
  std::set<std::string_view> out;
  for (const auto &[name, f] : defined)
    if (counts_itself(*f)) out.insert(name);
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto &[name, f] : defined)
      if (!out.count(name) &&
          std::any_of(f->uses.begin(), f->uses.end(), [&](const std::string &u) { return out.count(u) > 0; }))
        grew = out.insert(name).second;
  }
  return out;
}

// The name of f's copy for kernels of `threads`, which no function of `m` has.
std::string copy_name(const PtxModule &m, std::string_view f, uint32_t threads) {
  std::string name = std::string(f) + "$w" + std::to_string(threads);
  while (
      std::any_of(m.functions.begin(), m.functions.end(), [&](const PtxFunctionText &g) { return g.name == name; }))
    name += "_";
  return name;
}

// f's copy for kernels of `threads`: its declaration and definition, in which each barrier of
// the whole block and %ntid.x count them, each name of `names` is its copy's, and the overlay's
// `moves` within it are made. Its linkage, then its text from `.func` to its `}`: what a lenient
// read took into the statement before `.func` stays out. False where the text is no definition
// as the reader takes one.
bool copy_for(const PtxModule &m, const PtxFunctionText &f, uint32_t threads, const std::vector<PtxEdit> &moves,
              const std::map<std::string_view, std::string> &names, std::string *declaration,
              std::string *definition) {
  const std::vector<ptx_parse::Tok> toks = ptx_parse::tokenize(std::string_view(m.text).substr(f.at, f.len));
  bool function = false;
  const size_t body = ptx_parse::statement_end(toks, 0, &function);
  bool visible = false, weak = false;
  size_t first = 0;
  for (; first < body && toks[first].s != ".func" && toks[first].s != ".entry"; ++first) {
    visible |= toks[first].s == ".visible";
    weak |= toks[first].s == ".weak";
  }
  if (body >= toks.size() || first >= body) return false;
  const std::string linkage = visible ? ".visible " : weak ? ".weak " : "", n = std::to_string(threads);
  const size_t from = f.at + toks[first].at, head = f.at + toks[body].at - from, end = f.at + f.len;
  std::vector<PtxEdit> own;
  for (const PtxEdit &e : moves)
    if (e.at >= from && e.at + e.len <= end) own.push_back({e.at - from, e.len, e.text});
  for (size_t at : f.barrier_counts)
    if (at >= from) own.push_back({at - from, 0, ", " + n});
  for (size_t at : f.block_dims)
    if (at >= from) own.push_back({at - from, kBlockDimX.size(), n});
  for (size_t k = first; k < toks.size(); ++k)
    if (const auto r = names.find(toks[k].s); r != names.end())
      own.push_back({f.at + toks[k].at - from, toks[k].s.size(), r->second});
  const std::string_view text = std::string_view(m.text).substr(from, end - from);
  std::vector<PtxEdit> in_head;
  for (const PtxEdit &e : own)
    if (e.at < head) in_head.push_back(e);
  *declaration = linkage + ptx_parse::apply(text.substr(0, head), std::move(in_head));
  while (!declaration->empty() && std::isspace((unsigned char)declaration->back())) declaration->pop_back();
  *declaration += ";";
  *definition = linkage + ptx_parse::apply(text, std::move(own));
  return true;
}

}  // namespace

std::string narrow_call_name(const PtxModule &m, const std::string &kernel, uint32_t threads, uint32_t block) {
  // The kernels ptx_text_for copies: those `counting` names.
  if (threads >= block || !counting(definitions(m)).count(kernel)) return kernel;
  return copy_name(m, kernel, threads);
}

std::vector<std::set<std::string>> called_across(const std::vector<const PtxModule *> &modules,
                                                 const std::vector<std::vector<std::string>> &kernels) {
  std::vector<std::set<std::string>> called(modules.size());
  std::vector<std::map<std::string_view, const PtxFunctionText *>> defined;
  for (const PtxModule *m : modules) defined.push_back(definitions(*m));
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < modules.size(); ++i) {
      const std::vector<std::string_view> roots(kernels[i].begin(), kernels[i].end());
      std::vector<std::string_view> outside(modules[i]->variables_name.begin(), modules[i]->variables_name.end());
      for (const std::string_view f : kept_for_link(*modules[i], defined[i], roots, &called[i]))
        outside.insert(outside.end(), defined[i].at(f)->outside.begin(), defined[i].at(f)->outside.end());
      for (const std::string_view name : outside)
        for (size_t j = 0; j < modules.size(); ++j)
          if (const auto it = defined[j].find(name); j != i && it != defined[j].end() && it->second->exported)
            grew |= called[j].insert(std::string(name)).second;
    }
  }
  return called;
}

std::string ptx_text_for(const PtxModule &m, const std::vector<std::string> &kernels, const PtxOverlay *overlay,
                         const std::vector<PtxNarrow> &narrow, const std::set<std::string> *called) {
  const auto defined = definitions(m);
  // Per thread count, the functions its kernels reach that count threads or call one that does,
  // each copied; the originals they call besides.
  const std::set<std::string_view> counts = counting(defined);
  std::map<uint32_t, std::set<std::string_view>> copies;
  std::vector<std::string_view> roots(kernels.begin(), kernels.end());
  std::set<std::string_view> called_by_copies;
  for (const PtxNarrow &n : narrow) {
    if (!counts.count(n.kernel)) {
      roots.push_back(n.kernel);
      continue;
    }
    for (const std::string_view f : reached(defined, {n.kernel}))
      (counts.count(f) ? copies[n.threads] : called_by_copies).insert(f);
  }
  std::set<std::string_view> kept =
      m.whole ? std::set<std::string_view>() : kept_for_link(m, defined, roots, called);
  kept.insert(called_by_copies.begin(), called_by_copies.end());
  // The pieces cut, and the overlay's edits (`moves`: a copy makes those within its function);
  // one inside a piece cut goes with it.
  std::vector<PtxEdit> edits, moves;
  for (const PtxFunctionText &f : m.functions)
    if (!m.whole && defined.count(f.name) && !kept.count(f.name)) edits.push_back({f.at, f.len, ""});
  for (size_t v = 0; !m.whole && overlay && v < m.shared_text.size() && v < overlay->offsets->size(); ++v) {
    const uint64_t at = (*overlay->offsets)[v];
    if (at == elf::SharedOverlayLayout::kInPlace || !m.graph.shared_vars[v].overlay) continue;
    const PtxSharedText &t = m.shared_text[v];
    moves.push_back({t.at, t.len, ""});
    for (size_t r : t.refs)
      moves.push_back({r, m.graph.shared_vars[v].name.size(), overlay->symbol + "+" + std::to_string(at)});
  }
  if (!moves.empty())
    edits.push_back({m.declarations_at, 0,
                     "\n.extern .shared .align " + std::to_string(overlay->align) + " .b8 " + overlay->symbol + "[" +
                         std::to_string(std::max<uint64_t>(overlay->bytes, 1)) + "];"});
  edits.insert(edits.end(), moves.begin(), moves.end());
  std::string out = ptx_parse::apply(m.text, std::move(edits));

  // The copies, after the rest: each with its counts and the names of the copies it calls, and
  // declared before them all (a copy may call one that comes after it).
  std::string declarations, bodies;
  for (const auto &[threads, fs] : copies) {
    std::map<std::string_view, std::string> names;
    for (const std::string_view f : fs) names.emplace(f, copy_name(m, f, threads));
    for (const PtxFunctionText &f : m.functions) {
      if (!f.definition || !fs.count(f.name)) continue;
      std::string declaration, definition;
      if (!copy_for(m, f, threads, moves, names, &declaration, &definition)) continue;
      declarations += "\n" + declaration;
      bodies += "\n" + definition + "\n";
    }
  }
  if (!declarations.empty())
    out += "\n// copies for kernels of fewer threads than the block" + declarations + "\n" + bodies;
  return out;
}

}  // namespace sk::cuda
