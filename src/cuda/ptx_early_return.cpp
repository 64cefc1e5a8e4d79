#include "cuda/ptx_early_return.hpp"

#include <algorithm>
#include <cstdlib>
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

std::string_view barrier_of_block(const std::vector<std::string_view> &toks) {
  const std::string_view id = barrier_named(toks);
  if (id.empty()) return "";
  const std::string_view op = toks[0];
  const bool red = op.find(".red") != std::string_view::npos;
  if (!red && op.find(".sync") == std::string_view::npos) return "";  // bar.arrive counts
  return operands_after_id(toks, id) > (red ? 1u : 0u) ? "" : id;
}

BarrierZero barrier_zero(const PtxStatement &s) {
  const std::string_view id = barrier_named(s.toks);
  if (id.empty() || (id[0] != '%' && id != "0")) return BarrierZero::None;
  if (barrier_of_block(s.toks).empty()) return BarrierZero::Counted;  // a thread count, or bar.arrive
  if (id[0] == '%' || !s.guard.empty()) return BarrierZero::Unknown;
  return s.toks[0].find(".red") != std::string_view::npos ? BarrierZero::Reduce : BarrierZero::Sync;
}

std::string thread_count_read() {
  return std::string("mov.u32 ") + kThreadCountRegister + ", " + std::string(kBlockDimX) + ";";
}

std::string two_phase_barrier(const PtxStatement &s) {
  // Phase one syncs; phase two counts, and a returned thread (__sk_leave) adds false: a count
  // of the others' predicates, their and (none false) and their or (one true). Both count the
  // kernel's threads.
  const std::string n = kThreadCountRegister;
  const std::string regs = "{ .reg .b32 " + n + ", %sk_n; ";
  const std::string sync = thread_count_read() + " barrier.sync 0, " + n + "; ";
  auto count = [&](const std::string &dst, const std::string &pred) {
    return "barrier.red.popc.u32 " + dst + ", 0, " + n + ", " + pred + "; ";
  };
  if (barrier_zero(s) == BarrierZero::Sync)
    return regs + ".reg .pred %sk_p; mov.pred %sk_p, 0; " + sync + count("%sk_n", "%sk_p") + "}";
  const std::string_view op = s.toks[0];
  std::string dst, pred;
  size_t k = 1;
  for (; k < s.toks.size() && s.toks[k] != ","; ++k) dst += s.toks[k];
  for (k += 3; k < s.toks.size(); ++k) pred += s.toks[k];  // past `, 0,`
  if (op.find(".popc") != std::string_view::npos) return regs + sync + count(dst, pred) + "}";
  const bool all = op.find(".and") != std::string_view::npos;
  if (all) pred = pred[0] == '!' ? pred.substr(1) : "!" + pred;
  return regs + sync + count("%sk_n", pred) + "setp." + (all ? "eq" : "ne") + ".u32 " + dst + ", %sk_n, 0; }";
}

std::string leave_block() {
  return std::string(kLeaveLabel) + ":\n\t{ .reg .b32 " + kThreadCountRegister + "; " + thread_count_read() +
         " call " + kLeaveFunction + ", (" + kThreadCountRegister + "); }\n\tret;\n";
}

std::string leave_declaration() {
  return std::string(".extern .func ") + kLeaveFunction + "\n(.param .b32 threads)\n;";
}

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

// Opcodes whose results differ between threads whatever their operands: a load of a thread's
// own memory (local, or generic, which may be local) or of memory others change meanwhile
// (volatile, relaxed, acquire); a weak load of global or shared memory at an address alike in
// every thread reads alike, but for a data race.
bool varying_opcode(std::string_view op) {
  for (std::string_view p :
       {"atom",   "shfl",     "vote",        "activemask", "match",      "redux",   "elect", "ldmatrix",
        "tex",    "tld4",     "suld",        "mbarrier",   "wgmma",      "mma",     "wmma",  "tcgen05",
        "call",   "ld.local", "ld.volatile", "ld.relaxed", "ld.acquire", "ld.mmio", "ld.u",  "ld.s8",
        "ld.s16", "ld.s32",   "ld.s64",      "ld.b",       "ld.f",       "ld.v"})
    if (op.starts_with(p)) return true;
  return false;
}

constexpr size_t kNone = SIZE_MAX;

// The registers a statement reads and writes, as ids of (declaring scope, name): a register an
// inner `{ .reg ...; }` scope declares is not its namesake outside (nvcc's __syncthreads_or
// declares its own %p1 and %p2).
struct Operands {
  std::vector<uint32_t> writes, reads;
  uint32_t guard = UINT32_MAX;
  bool varying = false;  // its result differs between threads whatever it reads
  bool uniform = false;  // its result is the block's alike whatever it reads (bar.red)
};

class Registers {
 public:
  Registers(const PtxBody &body) : body_(body) {
    // Each inner scope's declarations: names, and `%p<3>` ranges as (prefix, count).
    const std::vector<PtxStatement> &st = *body.statements;
    for (size_t i = 0; i < st.size(); ++i) {
      const uint32_t scope = (*body.scope_of)[i];
      if (scope == 0 || st[i].toks.empty() || st[i].toks[0] != ".reg") continue;
      const std::vector<std::string_view> &t = st[i].toks;
      for (size_t k = 1; k < t.size(); ++k) {
        if (t[k][0] != '%') continue;
        uint32_t count = 0;
        if (k + 3 < t.size() && t[k + 1] == "<" && t[k + 3] == ">")
          count = (uint32_t)std::strtoul(std::string(t[k + 2]).c_str(), nullptr, 10);
        declared_[scope].push_back({t[k], count});
      }
    }
  }
  uint32_t id(size_t statement, std::string_view name) {
    uint32_t scope = (*body_.scope_of)[statement];
    for (; scope != 0; scope = (*body_.scope_parent)[scope])
      if (declares(scope, name)) break;
    return ids_.try_emplace({scope, name}, (uint32_t)ids_.size()).first->second;
  }
  size_t size() const { return ids_.size(); }

 private:
  bool declares(uint32_t scope, std::string_view name) const {
    const auto it = declared_.find(scope);
    if (it == declared_.end()) return false;
    for (const auto &[decl, count] : it->second) {
      if (!count) {
        if (decl == name) return true;
        continue;
      }
      if (!name.starts_with(decl) || name.size() == decl.size()) continue;
      const std::string_view digits = name.substr(decl.size());
      if (digits.find_first_not_of("0123456789") == std::string_view::npos &&
          std::strtoul(std::string(digits).c_str(), nullptr, 10) < count)
        return true;
    }
    return false;
  }
  const PtxBody &body_;
  std::map<uint32_t, std::vector<std::pair<std::string_view, uint32_t>>> declared_;
  std::map<std::pair<uint32_t, std::string_view>, uint32_t> ids_;
};

Operands operands(const PtxStatement &s, size_t i, const std::vector<std::string> &uniform_params, Registers &regs) {
  Operands o;
  const std::vector<std::string_view> &t = s.toks;
  if (t.empty() || t[0][0] == '.') return o;
  const std::string_view op = t[0];
  // The first operand is what it writes, unless it addresses memory.
  size_t first_end = 1;
  for (int depth = 0; first_end < t.size(); ++first_end) {
    if (t[first_end] == "[" || t[first_end] == "{" || t[first_end] == "(") ++depth;
    if (t[first_end] == "]" || t[first_end] == "}" || t[first_end] == ")") --depth;
    if (t[first_end] == "," && depth == 0) break;
  }
  const bool writes = t.size() > 1 && t[1] != "[";
  o.varying = varying_opcode(op);
  if (op.starts_with("ld.param")) {  // a kernel parameter's, not a call's return value
    bool param = false;
    for (size_t k = first_end; k < t.size(); ++k)
      param |= std::find(uniform_params.begin(), uniform_params.end(), t[k]) != uniform_params.end();
    o.varying |= !param;
  }
  o.uniform = op.starts_with("bar.red") || op.starts_with("barrier.red") || op.starts_with("bar.cta.red") ||
              op.starts_with("barrier.cta.red");
  if (!s.guard.empty()) o.guard = regs.id(i, guard_register(s.guard));
  for (size_t k = writes ? first_end : 1; k < t.size(); ++k) {
    if (t[k][0] != '%') continue;
    if (varying_special(t[k]))
      o.varying = true;
    else
      o.reads.push_back(regs.id(i, t[k]));
  }
  if (writes)
    for (size_t k = 1; k < first_end; ++k)
      if (t[k][0] == '%') o.writes.push_back(regs.id(i, t[k]));
  return o;
}

// The nodes of [0, nodes) reachable from `root` along `edges(v)`, each after every node it leads
// to (an iterative depth-first walk: a kernel's blocks run to thousands).
template <typename Edges>
std::vector<size_t> postorder(size_t root, size_t nodes, const Edges &edges) {
  std::vector<size_t> order;
  std::vector<bool> seen(nodes, false);
  std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
  seen[root] = true;
  while (!stack.empty()) {
    auto &[v, next] = stack.back();
    if (next < edges(v).size()) {
      const size_t w = edges(v)[next++];
      if (!seen[w]) {
        seen[w] = true;
        stack.push_back({w, 0});
      }
      continue;
    }
    order.push_back(v);
    stack.pop_back();
  }
  return order;
}

struct Block {
  std::vector<size_t> succ;  // `exit` (the block count) stands for leaving the function
  bool barrier = false, returns = false;
  size_t last = kNone;  // its last statement, when it branches or returns on a guard
};

}  // namespace

bool analyse(const PtxBody &body, const std::vector<std::string> &uniform_params, const std::vector<bool> &barrier) {
  const std::vector<PtxStatement> &st = *body.statements;

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
  for (size_t i = 0; i < st.size(); ++i) {
    const std::string_view op = op_of(i);
    if (op.starts_with("bra") || op.starts_with("brx") || op.starts_with("ret") || op == "exit")
      starts[i + 1] = true;
  }
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
  auto end_of = [&](size_t b) { return b + 1 < n ? first[b + 1] : st.size(); };
  for (size_t b = 0; b < n; ++b) {
    Block &k = blocks[b];
    for (size_t i = first[b]; i < end_of(b); ++i) k.barrier = k.barrier || barrier[i];
    const size_t last = end_of(b) > first[b] ? end_of(b) - 1 : kNone;
    const std::string_view op = last == kNone ? std::string_view() : op_of(last);
    const bool guarded = last != kNone && !st[last].guard.empty();
    bool falls = true;
    if (op.starts_with("bra")) {
      const auto it = st[last].toks.size() > 1 ? label_at.find(st[last].toks[1]) : label_at.end();
      if (it == label_at.end()) return true;  // a branch the analysis cannot follow: assume the worst
      k.succ.push_back(block_of[it->second]);
      falls = guarded;
    } else if (op.starts_with("brx")) {
      return true;  // a branch through a table
    } else if (op.starts_with("ret") || op == "exit") {
      k.returns = true;
      k.succ.push_back(exit);
      falls = guarded;
    }
    if (guarded && falls) k.last = last;
    if (falls) k.succ.push_back(b + 1 < n ? b + 1 : exit);
  }

  // Immediate post-dominators (Cooper, Harvey and Kennedy's iteration on the reversed graph):
  // where the threads that took either side of a divergent branch meet again.
  std::vector<std::vector<size_t>> preds(n + 1);
  for (size_t b = 0; b < n; ++b)
    for (size_t s : blocks[b].succ) preds[s].push_back(b);
  const std::vector<size_t> order =
      postorder(exit, n + 1, [&](size_t v) -> const std::vector<size_t> & { return preds[v]; });
  std::vector<size_t> number(n + 1, kNone);
  for (size_t i = 0; i < order.size(); ++i) number[order[i]] = i;
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
  auto meets_at = [&](size_t b) { return ipdom[b] == kNone ? exit : ipdom[b]; };
  // The blocks between a branch and where its two sides meet again.
  auto region = [&](size_t b, auto &&visit) {
    std::vector<bool> seen(n + 1, false);
    std::vector<size_t> todo(blocks[b].succ);
    while (!todo.empty()) {
      const size_t v = todo.back();
      todo.pop_back();
      if (v == exit || v == meets_at(b) || seen[v]) continue;
      seen[v] = true;
      visit(v);
      todo.insert(todo.end(), blocks[v].succ.begin(), blocks[v].succ.end());
    }
  };

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
  // The guarded branches and returns that would hang the block if its threads went apart there.
  std::vector<size_t> hazards;
  for (size_t b = 0; b < n; ++b) {
    if (blocks[b].last == kNone || blocks[b].succ.size() != 2) continue;
    const size_t at = meets_at(b), x = blocks[b].succ[0], y = blocks[b].succ[1];
    if ((reaches(x, at, true) && reaches(y, at, false)) || (reaches(y, at, true) && reaches(x, at, false)))
      hazards.push_back(b);
  }
  if (hazards.empty()) return false;

  // Whether their threads may go apart: which registers may differ between the threads of a
  // block at each point, forward over the blocks. A register differs when what wrote it read
  // a thread's index, a load, a shuffle... or one that differs; and past where the two sides of
  // a branch that may go apart meet again, every register either side wrote differs (a value
  // set on one side only is its threads' own).
  Registers regs(body);
  std::vector<Operands> ops;
  ops.reserve(st.size());
  for (size_t i = 0; i < st.size(); ++i) ops.push_back(operands(st[i], i, uniform_params, regs));
  const size_t words = (regs.size() + 63) / 64;
  std::vector<uint64_t> out(n * words, 0), joined(n * words, 0), state(words);
  auto test = [](const uint64_t *set, uint32_t r) { return ((set[r / 64] >> (r % 64)) & 1) != 0; };
  auto put = [](uint64_t *set, uint32_t r, bool v) {
    set[r / 64] = v ? set[r / 64] | (uint64_t{1} << (r % 64)) : set[r / 64] & ~(uint64_t{1} << (r % 64));
  };
  // Each block after its predecessors (but along loops' back edges); not the exit.
  const std::vector<size_t> none;
  std::vector<size_t> forward = postorder(
      0, n + 1, [&](size_t v) -> const std::vector<size_t> & { return v == exit ? none : blocks[v].succ; });
  std::reverse(forward.begin(), forward.end());
  forward.erase(std::remove(forward.begin(), forward.end(), exit), forward.end());
  std::vector<bool> apart(n, false), diverges(n, false);
  auto transfer = [&](size_t b) {
    std::copy(joined.begin() + (long)(b * words), joined.begin() + (long)((b + 1) * words), state.begin());
    for (size_t p : preds[b])
      for (size_t w = 0; w < words; ++w) state[w] |= out[p * words + w];
    for (size_t i = first[b]; i < end_of(b); ++i) {
      const Operands &o = ops[i];
      const bool guard = o.guard != UINT32_MAX && test(state.data(), o.guard);
      if (i + 1 == end_of(b) && blocks[b].last == i) apart[b] = guard;
      if (o.writes.empty()) continue;
      bool v = o.varying || guard;
      for (size_t r = 0; r < o.reads.size() && !v; ++r) v = test(state.data(), o.reads[r]);
      if (o.uniform) v = guard;  // bar.red: the block's result
      for (uint32_t w : o.writes)
        if (v || o.guard == UINT32_MAX) put(state.data(), w, v);  // a guarded write keeps the old value too
    }
    if (std::equal(state.begin(), state.end(), out.begin() + (long)(b * words))) return false;
    std::copy(state.begin(), state.end(), out.begin() + (long)(b * words));
    return true;
  };
  for (bool grew = true; grew;) {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t b : forward) changed |= transfer(b);
    }
    grew = false;
    for (size_t b = 0; b < n; ++b) {
      if (!apart[b] || diverges[b]) continue;
      diverges[b] = true;
      // Where the sides meet only to return (an early return's common `ret`), nothing either
      // side computed is read by the other's threads.
      const size_t at = meets_at(b);
      if (at == exit ||
          (end_of(at) == first[at] + 1 && op_of(first[at]).starts_with("ret") && st[first[at]].guard.empty()))
        continue;
      uint64_t *into = joined.data() + at * words;
      region(b, [&](size_t v) {
        for (size_t i = first[v]; i < end_of(v); ++i)
          for (uint32_t w : ops[i].writes)
            if (!test(into, w)) {
              put(into, w, true);
              grew = true;
            }
      });
    }
  }
  return std::any_of(hazards.begin(), hazards.end(), [&](size_t b) { return apart[b]; });
}

}  // namespace early_return_detail

bool returns_before_barrier(const PtxBody &body, const std::vector<std::string> &uniform_params,
                            const std::vector<bool> &barrier) {
  if (std::none_of(barrier.begin(), barrier.end(), [](bool b) { return b; })) return false;
  return early_return_detail::analyse(body, uniform_params, barrier);
}

}  // namespace sk::cuda
