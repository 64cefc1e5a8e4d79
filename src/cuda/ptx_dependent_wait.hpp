// What a kernel of programmatic dependent launch may do before its griddepcontrol.wait. PDL
// starts a node's head only once every block of the node before has passed its trigger
// (griddepcontrol.launch_dependents); a fused block runs the next step's head once its own part
// of the step before ends, while other blocks may still be before their trigger. A head that
// only reads and computes is the same either way; a head that may write memory another block
// reads is not, so its step waits at its start (common/plan.cpp).
#pragma once
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/ptx_parse.hpp"

namespace sk::cuda {

class DependentWaitFlow {
 public:
  using Functions = std::map<std::string_view, const ptx_parse::Function *>;
  // A module's functions by name, and its text (for line numbers).
  DependentWaitFlow(const Functions &functions, std::string_view text) : functions_(functions), text_(text) {}

  // The first statement of `kernel`, or of a function it reaches, that may write memory
  // another block reads (a global or generic store, atomic or reduction, a bulk copy to global
  // memory, a call outside the module or through a register) on a path from its start that
  // passes no griddepcontrol.wait: "st.global.f32 at line 42", "st.u32 at line 9 in 'helper',
  // which it reaches". "" when every path waits first.
  std::string write_before_wait(const ptx_parse::Function &kernel);

 private:
  struct Flow {
    bool always_waits = false;  // every path from its start to its end passes a wait
    std::string write;          // the first write on a path that does not, as above
    std::string_view where;     // the function the write stands in
  };
  const Flow &flow(const ptx_parse::Function &f);
  size_t line(size_t at);

  const Functions &functions_;
  std::string_view text_;
  std::map<std::string_view, Flow> done_;
  std::set<std::string_view> active_;  // being walked: a call back to one is recursion
  std::vector<size_t> newlines_;
};

// Whether an instruction (its opcode, with its suffixes) may write memory that another block
// reads: not shared, local or parameter space, and no prefetch.
bool writes_global_memory(std::string_view opcode);

}  // namespace sk::cuda
