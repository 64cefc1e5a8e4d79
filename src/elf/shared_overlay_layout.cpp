#include "elf/shared_overlay_layout.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace sk::elf {
namespace {

using VarRef = std::pair<uint32_t, uint32_t>;  // (cubin, index into its shared_vars)

// The movable variables that `root`'s call tree reaches (a call through a pointer: every
// function of its cubin that such a call may reach).
std::vector<VarRef> reached(const std::vector<const Cubin *> &cubins,
                            const std::multimap<std::string, uint32_t> &globals, const OverlayRoot &root) {
  std::set<std::pair<uint32_t, std::string>> seen;
  std::vector<std::pair<uint32_t, const CubinFunction *>> todo;
  auto visit = [&](uint32_t m, const std::string &name) {
    const CubinFunction *f = cubins[m]->find(name);
    if (f && seen.insert({m, name}).second) todo.push_back({m, f});
  };
  // A callee this cubin does not define is another cubin's global function (the link binds
  // it by name); a weak one may be any of them.
  auto call = [&](uint32_t m, const std::string &name) {
    if (cubins[m]->find(name)) return visit(m, name);
    for (auto [it, end] = globals.equal_range(name); it != end; ++it) visit(it->second, name);
  };
  if (root.module < cubins.size()) visit(root.module, root.function);
  std::set<VarRef> var_seen;
  std::vector<VarRef> vars;
  while (!todo.empty()) {
    const auto [m, f] = todo.back();
    todo.pop_back();
    for (uint32_t v : f->shared_vars)
      if (cubins[m]->shared_vars[v].overlay && var_seen.insert({m, v}).second) vars.push_back({m, v});
    for (const std::string &c : f->callees) call(m, c);
    for (const std::string &c : f->externs) call(m, c);
    if (f->indirect_calls)
      for (const std::string &c : cubins[m]->pointer_targets) visit(m, c);
  }
  return vars;
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

SharedOverlayLayout layout_shared_overlay(const std::vector<const Cubin *> &cubins,
                                          const std::vector<OverlayRoot> &roots, bool opaque_calls) {
  SharedOverlayLayout layout;
  std::multimap<std::string, uint32_t> globals;
  for (uint32_t m = 0; m < cubins.size(); ++m) {
    for (const CubinFunction &f : cubins[m]->functions)
      if (!f.local) globals.emplace(f.name, m);
    std::vector<uint64_t> &offsets = layout.offsets.emplace_back();
    for (const CubinSharedVar &v : cubins[m]->shared_vars)
      offsets.push_back(v.overlay && !opaque_calls ? 0 : SharedOverlayLayout::kInPlace);
  }
  if (opaque_calls) return layout;

  // The groups of variables that must not overlap: one per call tree.
  std::vector<std::vector<VarRef>> groups;
  for (const OverlayRoot &r : roots) groups.push_back(reached(cubins, globals, r));
  std::map<VarRef, std::vector<uint32_t>> groups_of;  // sorted group ids per variable
  for (uint32_t g = 0; g < groups.size(); ++g)
    for (const VarRef &v : groups[g]) groups_of[v].push_back(g);
  auto apart = [&](const VarRef &a, const VarRef &b) {
    const std::vector<uint32_t> &x = groups_of[a], &y = groups_of[b];
    for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
      if (x[i] == y[j]) return true;
      x[i] < y[j] ? ++i : ++j;
    }
    return false;
  };
  auto var = [&](const VarRef &v) -> const CubinSharedVar & { return cubins[v.first]->shared_vars[v.second]; };

  // First fit, largest first: each variable at the lowest aligned offset where it overlaps no
  // placed variable that must stay apart from it.
  std::vector<VarRef> order;
  for (const auto &[v, g] : groups_of) order.push_back(v);
  std::stable_sort(order.begin(), order.end(), [&](const VarRef &a, const VarRef &b) {
    return var(a).size != var(b).size ? var(a).size > var(b).size : var(a).align > var(b).align;
  });
  std::vector<std::pair<VarRef, uint64_t>> placed;
  for (const VarRef &v : order) {
    const CubinSharedVar &sv = var(v);
    std::vector<std::pair<uint64_t, uint64_t>> taken;  // [begin, end) of those it must avoid
    for (const auto &[p, at] : placed)
      if (apart(v, p)) taken.push_back({at, at + var(p).size});
    std::vector<uint64_t> candidates{0};
    for (const auto &[b, e] : taken) candidates.push_back(align_up(e, sv.align));
    std::sort(candidates.begin(), candidates.end());
    uint64_t at = 0;
    for (uint64_t c : candidates) {
      bool free = true;
      for (const auto &[b, e] : taken) free &= c + sv.size <= b || e <= c;
      if (free) {
        at = c;
        break;
      }
    }
    placed.push_back({v, at});
    layout.offsets[v.first][v.second] = at;
    layout.bytes = std::max(layout.bytes, at + sv.size);
    layout.align = std::max(layout.align, sv.align);
  }
  return layout;
}

}  // namespace sk::elf
