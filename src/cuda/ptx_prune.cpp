#include "cuda/ptx_prune.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

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

}  // namespace

std::string narrow_counts(const PtxModule &m, const std::vector<std::string> &kernels,
                          const std::vector<uint32_t> &threads, uint32_t block,
                          const std::function<std::string(std::string_view)> &named_elsewhere,
                          std::map<std::string, uint32_t> *counts) {
  const auto defined = definitions(m);
  std::map<std::string_view, std::pair<uint32_t, std::string_view>> by;  // function: threads, the kernel
  counts->clear();
  for (size_t i = 0; i < kernels.size(); ++i)
    for (const std::string_view f : reached(defined, {kernels[i]})) {
      const PtxFunctionText &t = *defined.at(f);
      if (t.barrier_counts.empty() && t.block_dims.empty()) continue;
      // A link keeps one copy of a weak function; another module may call a visible one.
      if (t.always && threads[i] < block)
        if (const std::string other = named_elsewhere(f); !other.empty())
          return "'" + std::string(f) + "', which '" + kernels[i] + "' (" + std::to_string(threads[i]) +
                 " threads) reaches, counts the threads of the block and is visible or weak, and " + other +
                 ": its kernels may call it, or a link keep its copy, counting theirs";
      const auto [at, fresh] = by.emplace(f, std::make_pair(threads[i], std::string_view(kernels[i])));
      if (!fresh && at->second.first != threads[i])
        return "'" + std::string(f) + "' counts the threads of the block for '" + std::string(at->second.second) +
               "' (" + std::to_string(at->second.first) + ") and for '" + kernels[i] + "' (" +
               std::to_string(threads[i]) + ")";
      if (threads[i] < block) (*counts)[std::string(f)] = threads[i];
    }
  return "";
}

std::string ptx_text_for(const PtxModule &m, const std::vector<std::string> &kernels, const PtxOverlay *overlay,
                         const std::map<std::string, uint32_t> *counts) {
  const auto defined = definitions(m);
  std::vector<PtxEdit> edits;
  // A narrow kernel's counts: one thread count past each barrier id, %ntid.x its threads.
  static const std::map<std::string, uint32_t> kNone;
  const std::map<std::string, uint32_t> &narrow = counts ? *counts : kNone;
  for (const PtxFunctionText &f : m.functions) {
    const auto c = narrow.find(f.name);
    if (!f.definition || c == narrow.end()) continue;
    const std::string n = std::to_string(c->second);
    for (size_t at : f.barrier_counts) edits.push_back({at, 0, ", " + n});
    for (size_t at : f.block_dims) edits.push_back({at, kBlockDimX.size(), n});
  }
  std::vector<std::string_view> roots(kernels.begin(), kernels.end());
  for (const PtxFunctionText &f : m.functions)
    if (f.definition && f.always) roots.push_back(f.name);
  const std::set<std::string_view> kept = m.whole ? std::set<std::string_view>() : reached(defined, roots);
  // The pieces cut, and the overlay's edits; one inside a piece cut goes with it.
  for (const PtxFunctionText &f : m.functions)
    if (!m.whole && defined.count(f.name) && !kept.count(f.name)) edits.push_back({f.at, f.len, ""});
  bool moved = false;
  for (size_t v = 0; !m.whole && overlay && v < m.shared_text.size() && v < overlay->offsets->size(); ++v) {
    const uint64_t at = (*overlay->offsets)[v];
    if (at == elf::SharedOverlayLayout::kInPlace || !m.graph.shared_vars[v].overlay) continue;
    const PtxSharedText &t = m.shared_text[v];
    edits.push_back({t.at, t.len, ""});
    for (size_t r : t.refs)
      edits.push_back({r, m.graph.shared_vars[v].name.size(), overlay->symbol + "+" + std::to_string(at)});
    moved = true;
  }
  if (moved)
    edits.push_back({m.declarations_at, 0,
                     "\n.extern .shared .align " + std::to_string(overlay->align) + " .b8 " + overlay->symbol + "[" +
                         std::to_string(std::max<uint64_t>(overlay->bytes, 1)) + "];"});
  std::sort(edits.begin(), edits.end(),
            [](const PtxEdit &a, const PtxEdit &b) { return a.at != b.at ? a.at < b.at : a.len < b.len; });
  std::string out;
  out.reserve(m.text.size());
  size_t pos = 0;
  for (const PtxEdit &e : edits) {
    if (e.at < pos || e.at + e.len > m.text.size()) continue;  // inside a piece cut
    out.append(m.text, pos, e.at - pos);
    out += e.text;
    pos = e.at + e.len;
  }
  out.append(m.text, pos, std::string::npos);
  return out;
}

}  // namespace sk::cuda
