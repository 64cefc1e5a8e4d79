#include "cuda/ptx_early_return.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace sk::cuda {

std::string_view barrier_named(const std::vector<std::string_view> &t) {
  const std::string_view op = t.empty() ? std::string_view() : t[0];
  if (!(op.starts_with("bar.") || op.starts_with("barrier.")) || op.starts_with("bar.warp") ||
      op.starts_with("barrier.cluster"))
    return "";
  size_t k = 1;
  if (op.find(".red") != std::string_view::npos) {  // `bar.red.popc.u32 d, a, ...`: after the result
    while (k < t.size() && t[k] != ",") ++k;
    ++k;
  }
  return k < t.size() ? t[k] : "";
}

namespace {

// The operands after the barrier id: a thread count, then (bar.red) the predicate.
size_t operands_after_id(const std::vector<std::string_view> &t, std::string_view id) {
  size_t n = 0;
  for (size_t k = 1; k < t.size(); ++k)
    if (t[k].data() > id.data() && t[k] == ",") ++n;
  return n;
}

}  // namespace

BarrierZero barrier_zero(const PtxStatement &s) {
  const std::string_view id = barrier_named(s.toks);
  if (id.empty() || (id[0] != '%' && id != "0")) return BarrierZero::None;
  const std::string_view op = s.toks[0];
  const bool red = op.find(".red") != std::string_view::npos;
  const bool sync = op.find(".sync") != std::string_view::npos;
  if (id[0] == '%' || !s.guard.empty() || (!red && !sync)) return BarrierZero::Other;
  const size_t after = operands_after_id(s.toks, id);
  if (red) return after == 1 ? BarrierZero::Reduce : BarrierZero::Other;  // d, a, c
  return after == 0 ? BarrierZero::Sync : BarrierZero::Other;
}

std::string two_phase_barrier(const PtxStatement &s) {
  // Phase one syncs; phase two counts, and a returned thread (__sk_leave) adds false: a count
  // of the others' predicates, their and (none false) and their or (one true).
  if (barrier_zero(s) == BarrierZero::Sync)
    return "{ .reg .pred %sk_p; .reg .b32 %sk_n; mov.pred %sk_p, 0; barrier.sync 0; "
           "barrier.red.popc.u32 %sk_n, 0, %sk_p; }";
  const std::string_view op = s.toks[0];
  std::string dst, pred;
  size_t k = 1;
  for (; k < s.toks.size() && s.toks[k] != ","; ++k) dst += s.toks[k];
  for (k += 3; k < s.toks.size(); ++k) pred += s.toks[k];  // past `, 0,`
  if (op.find(".popc") != std::string_view::npos)
    return "{ barrier.sync 0; barrier.red.popc.u32 " + dst + ", 0, " + pred + "; }";
  const bool all = op.find(".and") != std::string_view::npos;
  if (all) pred = pred[0] == '!' ? pred.substr(1) : "!" + pred;
  return "{ .reg .b32 %sk_n; barrier.sync 0; barrier.red.popc.u32 %sk_n, 0, " + pred + "; setp." +
         (all ? "eq" : "ne") + ".u32 " + dst + ", %sk_n, 0; }";
}

std::string leave_block() { return std::string(kLeaveLabel) + ":\n\tcall " + kLeaveFunction + ", ();\n\tret;\n"; }

std::string leave_declaration() { return std::string(".extern .func ") + kLeaveFunction + "\n()\n;"; }

namespace early_return_detail {
namespace {

// The predicate register of a guard ("@!%p1": "%p1").
std::string_view guard_register(std::string_view guard) {
  while (!guard.empty() && (guard[0] == '@' || guard[0] == '!')) guard.remove_prefix(1);
  return guard;
}

// Special registers that differ between the threads of a block.
bool varying_special(std::string_view t) {
  for (std::string_view p : {"%tid", "%laneid", "%warpid", "%clock", "%globaltimer", "%lanemask", "%pm"})
    if (t.starts_with(p)) return true;
  return false;
}

// Opcodes whose results differ between threads whatever their operands.
bool varying_opcode(std::string_view op) {
  for (std::string_view p :
       {"atom",    "shfl",      "vote",     "activemask", "match",       "redux",      "elect",      "ldmatrix",
        "tex",     "tld4",      "suld",     "mbarrier",   "wgmma",       "mma",        "wmma",       "tcgen05",
        "call",    "ld.shared", "ld.local", "ld.global",  "ld.volatile", "ld.relaxed", "ld.acquire", "ld.weak",
        "ld.mmio", "ld.u",      "ld.s",     "ld.b",       "ld.f",        "ld.v"})
    if (op.starts_with(p)) return true;
  return false;
}

// Which registers may hold a value that differs between the threads of a block: a fixed point
// over the statements, by name (a register of an inner scope counts with its namesake, which
// only adds to the set).
std::set<std::string_view> varying_registers(const std::vector<PtxStatement> &body,
                                             const std::vector<std::string> &uniform_params) {
  std::set<std::string_view> varying;
  for (bool changed = true; changed;) {
    changed = false;
    for (const PtxStatement &s : body) {
      const std::vector<std::string_view> &t = s.toks;
      if (t.empty() || t[0][0] == '.') continue;
      const std::string_view op = t[0];
      // The first operand is what it writes, unless it addresses memory.
      size_t first_end = 1;
      for (int depth = 0; first_end < t.size(); ++first_end) {
        if (t[first_end] == "[" || t[first_end] == "{" || t[first_end] == "(") ++depth;
        if (t[first_end] == "]" || t[first_end] == "}" || t[first_end] == ")") --depth;
        if (t[first_end] == "," && depth == 0) break;
      }
      const bool writes = t.size() > 1 && t[1] != "[";
      bool v = varying_opcode(op) && !(op.starts_with("ld.global.nc") || op.starts_with("ld.param"));
      if (op.starts_with("ld.param")) {  // a kernel parameter's, not a call's return value
        bool param = false;
        for (size_t k = first_end; k < t.size(); ++k)
          param |= std::find(uniform_params.begin(), uniform_params.end(), t[k]) != uniform_params.end();
        v |= !param;
      }
      if (!s.guard.empty()) v |= varying.count(guard_register(s.guard)) > 0;
      for (size_t k = writes ? first_end : 1; k < t.size() && !v; ++k)
        v = t[k][0] == '%' && (varying_special(t[k]) || varying.count(t[k]));
      if (!v || !writes) continue;
      for (size_t k = 1; k < first_end; ++k)
        if (t[k][0] == '%' && varying.insert(t[k]).second) changed = true;
    }
  }
  return varying;
}

constexpr size_t kNone = SIZE_MAX;

struct Block {
  std::vector<size_t> succ;  // kExit stands for leaving the function
  bool barrier = false, returns = false;
  bool diverges = false;  // its last statement branches or returns on a varying predicate
};

}  // namespace

bool analyse(const PtxBody &body, const std::vector<std::string> &uniform_params, const std::vector<bool> &barrier) {
  const std::vector<PtxStatement> &st = *body.statements;
  const std::set<std::string_view> varying = varying_registers(st, uniform_params);

  // Basic blocks: a label starts one, a branch or a return ends one.
  std::vector<size_t> block_of(st.size() + 1, kNone);
  std::vector<bool> starts(st.size() + 1, false);
  starts[0] = true;
  std::map<std::string_view, size_t> label_at;
  for (const auto &[at, name] : *body.labels) {
    starts[at] = true;
    label_at[name] = at;
  }
  auto op_of = [&](size_t i) { return st[i].toks.empty() ? std::string_view() : st[i].toks[0]; };
  auto ends = [&](size_t i) {
    const std::string_view op = op_of(i);
    return op.starts_with("bra") || op.starts_with("brx") || op.starts_with("ret") || op == "exit";
  };
  for (size_t i = 0; i < st.size(); ++i)
    if (ends(i)) starts[i + 1] = true;
  std::vector<Block> blocks;
  std::vector<size_t> first;  // each block's first statement
  for (size_t i = 0; i <= st.size(); ++i) {
    if (starts[i]) {
      blocks.emplace_back();
      first.push_back(i);
    }
    block_of[i] = blocks.size() - 1;
  }
  const size_t n = blocks.size(), exit = n;
  auto guard_varies = [&](const PtxStatement &s) {
    return !s.guard.empty() && varying.count(guard_register(s.guard)) > 0;
  };
  for (size_t b = 0; b < n; ++b) {
    const size_t last_plus = b + 1 < n ? first[b + 1] : st.size();
    Block &k = blocks[b];
    for (size_t i = first[b]; i < last_plus; ++i) k.barrier = k.barrier || barrier[i];
    const size_t last = last_plus > first[b] ? last_plus - 1 : kNone;
    const std::string_view op = last == kNone ? std::string_view() : op_of(last);
    const bool guarded = last != kNone && !st[last].guard.empty();
    bool falls = true;
    if (op.starts_with("bra")) {
      const auto it = st[last].toks.size() > 1 ? label_at.find(st[last].toks[1]) : label_at.end();
      if (it == label_at.end()) return true;  // a branch the analysis cannot follow: assume the worst
      k.succ.push_back(block_of[it->second]);
      falls = guarded;
      k.diverges = guard_varies(st[last]);
    } else if (op.starts_with("brx")) {
      return true;  // a branch through a table
    } else if (op.starts_with("ret") || op == "exit") {
      k.returns = true;
      k.succ.push_back(exit);
      falls = guarded;
      k.diverges = guard_varies(st[last]);
    }
    if (falls) k.succ.push_back(b + 1 < n ? b + 1 : exit);
  }

  // Immediate post-dominators (Cooper, Harvey and Kennedy's iteration on the reversed graph):
  // where the threads that took either side of a divergent branch meet again.
  std::vector<std::vector<size_t>> preds(n + 1);
  for (size_t b = 0; b < n; ++b)
    for (size_t s : blocks[b].succ) preds[s].push_back(b);
  std::vector<size_t> order, number(n + 1, kNone);  // postorder of the reversed graph from exit
  {
    std::vector<std::pair<size_t, size_t>> stack{{exit, 0}};
    std::vector<bool> seen(n + 1, false);
    seen[exit] = true;
    while (!stack.empty()) {
      auto &[v, next] = stack.back();
      if (next < preds[v].size()) {
        const size_t p = preds[v][next++];
        if (!seen[p]) {
          seen[p] = true;
          stack.push_back({p, 0});
        }
        continue;
      }
      number[v] = order.size();
      order.push_back(v);
      stack.pop_back();
    }
  }
  std::vector<size_t> ipdom(n + 1, kNone);
  ipdom[exit] = exit;
  auto meet = [&](size_t a, size_t b) {
    while (a != b) {
      while (number[a] < number[b]) a = ipdom[a];
      while (number[b] < number[a]) b = ipdom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = order.size(); i-- > 0;) {
      const size_t v = order[i];
      if (v == exit) continue;
      size_t d = kNone;
      for (size_t s : blocks[v].succ)
        if (ipdom[s] != kNone) d = d == kNone ? s : meet(s, d);
      if (d != ipdom[v]) {
        ipdom[v] = d;
        changed = true;
      }
    }
  }

  // From `from`, a path that returns before any barrier (`to_return`) or reaches a barrier,
  // without passing `meet_at`, where the two sides of the branch come together again; returning
  // there (the common `ret` an early return branches to) counts as returning.
  auto reaches = [&](size_t from, size_t meet_at, bool to_return) {
    std::vector<bool> seen(n + 1, false);
    std::vector<size_t> todo{from};
    while (!todo.empty()) {
      const size_t b = todo.back();
      todo.pop_back();
      if (seen[b]) continue;
      seen[b] = true;
      if (b == exit) {
        if (to_return) return true;
        continue;
      }
      const Block &k = blocks[b];
      if (b == meet_at) {
        if (to_return && k.returns && !k.barrier) return true;
        continue;
      }
      if (k.barrier) {
        if (!to_return) return true;
        continue;
      }
      if (to_return && k.returns) return true;
      todo.insert(todo.end(), k.succ.begin(), k.succ.end());
    }
    return false;
  };
  for (size_t b = 0; b < n; ++b) {
    const Block &k = blocks[b];
    if (!k.diverges || k.succ.size() != 2) continue;
    const size_t at = ipdom[b] == kNone ? exit : ipdom[b];
    const size_t x = k.succ[0], y = k.succ[1];
    if ((reaches(x, at, true) && reaches(y, at, false)) || (reaches(y, at, true) && reaches(x, at, false)))
      return true;
  }
  return false;
}

}  // namespace early_return_detail

bool returns_before_barrier(const PtxBody &body, const std::vector<std::string> &uniform_params,
                            const std::vector<bool> &barrier) {
  if (std::none_of(barrier.begin(), barrier.end(), [](bool b) { return b; })) return false;
  return early_return_detail::analyse(body, uniform_params, barrier);
}

}  // namespace sk::cuda
