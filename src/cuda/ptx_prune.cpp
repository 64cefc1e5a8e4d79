#include "cuda/ptx_prune.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "cuda/ptx_statement.hpp"
#include "elf/shared_overlay_layout.hpp"

namespace sk::cuda {

std::string ptx_text_for(const PtxModule &m, const std::vector<std::string> &kernels, const PtxOverlay *overlay) {
  if (m.whole) return m.text;
  std::map<std::string_view, const PtxFunctionText *> defined;
  std::vector<std::string_view> todo(kernels.begin(), kernels.end());
  for (const PtxFunctionText &f : m.functions) {
    if (!f.definition) continue;
    defined[f.name] = &f;
    if (f.always) todo.push_back(f.name);
  }
  std::set<std::string_view> kept;
  while (!todo.empty()) {
    const std::string_view name = todo.back();
    todo.pop_back();
    const auto it = defined.find(name);
    if (it == defined.end() || !kept.insert(name).second) continue;
    todo.insert(todo.end(), it->second->uses.begin(), it->second->uses.end());
  }
  // The pieces cut, and the overlay's edits; one inside a piece cut goes with it.
  std::vector<PtxEdit> edits;
  for (const PtxFunctionText &f : m.functions)
    if (defined.count(f.name) && !kept.count(f.name)) edits.push_back({f.at, f.len, ""});
  bool moved = false;
  for (size_t v = 0; overlay && v < m.shared_text.size() && v < overlay->offsets->size(); ++v) {
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
