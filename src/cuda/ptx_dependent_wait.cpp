#include "cuda/ptx_dependent_wait.hpp"

#include <algorithm>

namespace sk::cuda {
namespace {

bool block_space(std::string_view s) { return s == "shared" || s == "shared::cta" || s == "local" || s == "param"; }
bool state_space(std::string_view s) {
  return block_space(s) || s == "global" || s == "shared::cluster" || s == "const";
}

constexpr size_t kMaxDepth = 256;

}  // namespace

bool writes_global_memory(std::string_view opcode) {
  std::vector<std::string_view> parts;
  for (size_t at = 0; at <= opcode.size();) {
    const size_t dot = std::min(opcode.find('.', at), opcode.size());
    parts.push_back(opcode.substr(at, dot - at));
    at = dot + 1;
  }
  const std::string_view head = parts[0];
  std::string_view space;  // the first one named; a generic address names none
  for (std::string_view p : parts)
    if (state_space(p)) {
      space = p;
      break;
    }
  if (head == "st" || head == "atom" || head == "red" || head == "stmatrix" || head == "tensormap")
    return !block_space(space);
  if (head == "sust" || head == "sured" || head == "discard") return true;
  if (head == "multimem") return parts.size() > 1 && (parts[1] == "st" || parts[1] == "red");
  // cp.async.bulk[.tensor].global.shared::cta, cp.reduce.async.bulk...: the destination first.
  if (head == "cp") return space == "global" && std::find(parts.begin(), parts.end(), "prefetch") == parts.end();
  return false;
}

size_t DependentWaitFlow::line(size_t at) {
  if (newlines_.empty()) {
    for (size_t i = 0; i < text_.size(); ++i)
      if (text_[i] == '\n') newlines_.push_back(i);
    newlines_.push_back(text_.size());
  }
  return size_t(std::lower_bound(newlines_.begin(), newlines_.end(), at) - newlines_.begin()) + 1;
}

const DependentWaitFlow::Flow &DependentWaitFlow::flow(const ptx_parse::Function &f) {
  if (const auto it = done_.find(f.name); it != done_.end()) return it->second;
  active_.insert(f.name);
  Flow out{true, "", f.name};
  const std::vector<PtxStatement> &st = f.body;
  std::map<std::string_view, size_t> label_at;
  for (const auto &[at, name] : f.labels) label_at[name] = at;
  // Statements reached from the start without a wait, walked once each; st.size() is the end.
  std::vector<bool> seen(st.size() + 1, false);
  std::vector<size_t> work{0};
  seen[0] = true;
  auto reach = [&](size_t i) {
    if (!seen[i]) seen[i] = true, work.push_back(i);
  };
  while (!work.empty() && out.write.empty()) {
    const size_t i = work.back();
    work.pop_back();
    if (i == st.size()) {
      out.always_waits = false;
      continue;
    }
    const PtxStatement &s = st[i];
    const std::string_view op = s.toks.empty() ? std::string_view() : s.toks[0];
    auto at = [&] { return " at line " + std::to_string(line(s.at)); };  // for the one named
    bool falls = true;                                                   // to the next statement
    if (op == "griddepcontrol.wait") {
      falls = !s.guard.empty();
    } else if (op.starts_with("call")) {
      const std::string_view callee = ptx_parse::call_target(s.toks);
      const auto it = callee.empty() ? functions_.end() : functions_.find(callee);
      if (it == functions_.end()) {
        out.write = callee.empty() ? "a call through a register" + at()
                                   : "a call of '" + std::string(callee) + "'" + at() + ", outside the module";
        break;
      }
      // Recursion, or calls nested deeper than compilers write (the walk recurses per call):
      // taken to write.
      if (active_.count(callee) || active_.size() >= kMaxDepth) {
        out.write = (active_.count(callee) ? "a recursive call of '" : "a call nested too deep, of '") +
                    std::string(callee) + "'" + at();
        break;
      }
      const Flow &c = flow(*it->second);
      if (!c.write.empty()) {
        out.write = c.write, out.where = c.where.empty() ? callee : c.where;
        break;
      }
      falls = !c.always_waits || !s.guard.empty();
    } else if (writes_global_memory(op)) {
      out.write = std::string(op) + at();
      break;
    } else if (op.starts_with("bra")) {
      const auto to = s.toks.size() > 1 ? label_at.find(s.toks.back()) : label_at.end();
      if (to == label_at.end()) {
        out.write = "a branch the analysis cannot follow" + at();
        break;
      }
      reach(to->second);
      falls = !s.guard.empty();
    } else if (op.starts_with("brx")) {  // through a table of labels: any of them
      for (const auto &[name, to] : label_at) reach(to);
    } else if (op.starts_with("ret") || op == "exit") {
      out.always_waits = false;
      falls = !s.guard.empty();
    }
    if (falls) reach(i + 1);
  }
  if (!out.write.empty()) out.always_waits = false;
  active_.erase(f.name);
  return done_[f.name] = std::move(out);
}

std::string DependentWaitFlow::write_before_wait(const ptx_parse::Function &kernel) {
  const Flow &f = flow(kernel);
  if (f.write.empty() || f.where.empty() || f.where == kernel.name) return f.write;
  return f.write + " in '" + std::string(f.where) + "', which it reaches";
}

}  // namespace sk::cuda
