#include "cuda/ptx_prune.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

namespace sk::cuda {

std::string ptx_text_for(const PtxModule &m, const std::vector<std::string> &kernels) {
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
  std::vector<const PtxFunctionText *> cut;
  for (const PtxFunctionText &f : m.functions)
    if (defined.count(f.name) && !kept.count(f.name)) cut.push_back(&f);
  std::sort(cut.begin(), cut.end(),
            [](const PtxFunctionText *a, const PtxFunctionText *b) { return a->at < b->at; });
  std::string out;
  out.reserve(m.text.size());
  size_t pos = 0;
  for (const PtxFunctionText *f : cut) {
    if (f->at < pos || f->at + f->len > m.text.size()) continue;  // never so: pieces do not overlap
    out.append(m.text, pos, f->at - pos);
    pos = f->at + f->len;
  }
  out.append(m.text, pos, std::string::npos);
  return out;
}

}  // namespace sk::cuda
