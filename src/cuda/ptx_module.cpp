#include "cuda/ptx_module.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "cuda/entry_ptx.hpp"
#include "cuda/ptx_dependent_wait.hpp"
#include "cuda/ptx_early_return.hpp"
#include "cuda/ptx_param_address.hpp"
#include "cuda/ptx_parse.hpp"
#include "cuda/ptx_special_registers.hpp"
#include "elf/fatbin.hpp"

namespace sk::cuda {
namespace {

using ptx_parse::apply;
using ptx_parse::call_target;
using ptx_parse::Edit;
using ptx_parse::Function;
using ptx_parse::Parser;
using ptx_parse::Tok;
using ptx_parse::tokenize;

// ---- the rewrite -----------------------------------------------------------------------------

// The rewrite of the parameters an entry takes the address of (ptx_param_address.hpp) into
// its edits and notes; the refusal, if one of them is used otherwise.
std::string pass_by_address(const Function &f, PtxKernel *k, std::vector<Edit> *edits,
                            std::vector<std::string> *notes) {
  ParamAddressRewrite r = rewrite_param_addresses(f.param_names, f.param_decls, f.body);
  if (!r.refusal.empty()) return r.refusal;
  for (uint32_t j : r.by_address) {  // its declaration replaces the scalar one's
    const size_t from = f.param_decls[j].first;
    edits->erase(std::remove_if(edits->begin(), edits->end(), [from](const Edit &e) { return e.at == from; }),
                 edits->end());
  }
  edits->insert(edits->end(), r.edits.begin(), r.edits.end());
  notes->insert(notes->end(), r.notes.begin(), r.notes.end());
  k->by_address = std::move(r.by_address);
  return "";
}

// An entry whose threads may return while others of the block go on to barrier 0
// (ptx_early_return.hpp): its returns branch to the wait of a returned thread, and every barrier
// 0 that it and the functions it reaches name runs in two phases. The refusal, if a barrier is
// in a form the rewrite does not pair, or may lie where it cannot see.
std::string keep_step_after_return(const Function &f, const std::vector<const Function *> &reached,
                                   const std::set<std::string_view> &barrier_functions, std::vector<Edit> *edits,
                                   std::vector<std::string> *notes, bool *leaves) {
  std::vector<bool> barrier;
  for (const PtxStatement &s : f.body) {
    const bool call = s.toks[0].starts_with("call");
    const std::string_view callee = call ? call_target(s.toks) : "";
    const BarrierZero z = barrier_zero(s);
    barrier.push_back(z == BarrierZero::Sync || z == BarrierZero::Reduce || z == BarrierZero::Unknown ||
                      (call && (callee.empty() || barrier_functions.count(callee))));
  }
  if (!returns_before_barrier({&f.body, &f.labels, &f.scope_of, &f.scope_parent}, f.param_names, barrier)) return "";
  const std::string early = "returns early before a __syncthreads() its other threads reach, and ";
  for (const Function *g : reached) {
    if (g->indirect_calls) return early + "'" + g->name + "' calls through a pointer, whose barriers it cannot pair";
    for (const std::string &c : g->callees)
      if (!library_function(c) &&
          std::none_of(reached.begin(), reached.end(), [&](const Function *r) { return r->name == c; }))
        return early + "calls '" + c + "', defined in another module, whose barriers it cannot pair";
    for (const PtxStatement &s : g->body) {
      const BarrierZero z = barrier_zero(s);
      if (z == BarrierZero::Counted || z == BarrierZero::Unknown) {
        std::string text;
        for (std::string_view t : s.toks) text += (text.empty() || t == "," ? "" : " ") + std::string(t);
        return early + "'" + (s.guard.empty() ? "" : std::string(s.guard) + " ") + text + "'" +
               (g->name == f.name ? "" : " in '" + g->name + "'") +
               " may share barrier 0 with the returned threads' wait, which it cannot pair (a thread count, "
               "a guard, an id in a register)";
      }
      if (z == BarrierZero::Sync || z == BarrierZero::Reduce) edits->push_back({s.at, s.len, two_phase_barrier(s)});
    }
  }
  for (const PtxStatement &s : f.body)
    if (s.toks[0].starts_with("ret") || s.toks[0] == "exit")
      edits->push_back({s.guard.empty() ? s.at : s.at + (size_t)(s.toks[0].data() - s.guard.data()),
                        s.toks[0].size(), std::string("bra ") + kLeaveLabel});
  edits->push_back({f.end - 1, 0, leave_block()});
  notes->push_back(
      "a thread may return before a __syncthreads() its block's other threads reach: its returns wait "
      "in " +
      std::string(kLeaveFunction) +
      " until the block's last thread has returned, and its barriers 0 run in two phases");
  *leaves = true;
  return "";
}

// libsk's functions that a kernel running fewer threads than its block may call: none waits at
// a barrier of the block's threads (the others wait at the step's end, at libsk's barrier).
bool barrier_free(std::string_view fn) {
  return fn == kDependentWaitFunction || fn == kGridFunction || fn == kThreadFunction || fn == kWorkspaceFunction ||
         fn == "sk_block_idx" || fn == "sk_block_num";
}

bool newer(const std::string &a, const std::string &b) {  // "9.4" > "9.0"
  unsigned am = 0, an = 0, bm = 0, bn = 0;
  std::sscanf(a.c_str(), "%u.%u", &am, &an);
  std::sscanf(b.c_str(), "%u.%u", &bm, &bn);
  return am != bm ? am > bm : an > bn;
}

}  // namespace

const PtxKernel *PtxModule::find(std::string_view name) const {
  for (const PtxKernel &k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

bool looks_like_ptx(const void *bytes, size_t size) {
  const std::string_view t(static_cast<const char *>(bytes), size);
  const size_t nul = t.find('\0');
  if (nul != std::string_view::npos && t.find_first_not_of('\0', nul) != std::string_view::npos) return false;
  for (const Tok &k : tokenize(t.substr(0, std::min<size_t>(nul, 4096)))) return k.s == ".version";
  return false;
}

std::string ptx_isa_of_nvjitlink(const std::string &v) {
  unsigned major = 0, minor = 0;
  if (std::sscanf(v.c_str(), "%u.%u", &major, &minor) != 2 || major < 12) return "";
  // CUDA 12.x compiles PTX ISA 8.x (12.6 stayed at 8.5, 12.8 and 12.9 are 8.7 and 8.8);
  // CUDA 13.x compiles 9.x.
  if (major == 12) {
    static const unsigned isa12[] = {0, 1, 2, 3, 4, 5, 5, 6, 7, 8};
    return "8." + std::to_string(isa12[std::min(minor, 9u)]);
  }
  return std::to_string(major - 4) + "." + std::to_string(minor);
}

sk_status read_ptx_module(std::string_view text, const std::string &label, const std::string &arch,
                          const std::string &max_version, PtxModule *out) {
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  Parser p(text, label);
  if (sk_status st = p.run(); st != SK_OK) return st;
  PtxModule m;
  m.version = p.version;
  m.target = p.target;
  // The target: PTX for the device's architecture or an older one; `sm_90a` features need the
  // link to be for sm_90a.
  bool specific = false;
  const unsigned device = elf::arch_number(arch, &specific);
  char *end = nullptr;
  const unsigned sm = m.target.starts_with("sm_") ? (unsigned)std::strtoul(m.target.c_str() + 3, &end, 10) : 0;
  if (!sm)
    return fail(SK_ERR_BAD_BINARY, "%s: .target %s is not an sm_XY architecture", label.c_str(), m.target.c_str());
  const std::string suffix = end ? end : "";
  if (sm > device || (!suffix.empty() && sm != device))
    return fail(SK_ERR_INCOMPATIBLE, "%s: the PTX is for %s (.target), which a %s device cannot run%s",
                label.c_str(), m.target.c_str(), arch.c_str(),
                suffix.empty() ? "" : ": its architecture-specific features are that GPU's only");
  m.link_arch = suffix.empty() ? arch : arch + suffix;
  std::vector<Edit> edits;
  if (!max_version.empty() && newer(m.version, max_version)) {
    edits.push_back({p.toks_[p.version_tok].at, p.version.size(), max_version});
    m.rewrites.push_back(".version " + m.version + " lowered to " + max_version +
                         ", the newest the installed nvJitLink compiles");
  }

  // The call graph, in the cubin reader's form: a call through a pointer may reach any
  // function whose name the code uses otherwise than in a call.
  m.graph.label = label;
  m.graph.type = 1;  // relocatable: compiled and linked with the others
  std::set<std::string> defined, named;
  for (const Function &f : p.functions) {
    defined.insert(f.name);
    named.insert(f.words.begin(), f.words.end());
  }
  for (const Function &f : p.functions) {
    elf::CubinFunction g;
    g.name = f.name;
    g.local = !f.visible && !f.entry;
    g.weak = f.weak;
    g.indirect_calls = f.indirect_calls;
    g.dynamic_shared = f.dynamic_shared;
    for (const std::string &c : f.callees) {
      g.callees.push_back(c);
      if (!defined.count(c)) {
        g.externs.push_back(c);
        if (!library_function(c)) m.calls_outside = true;
      }
    }
    m.graph.functions.push_back(std::move(g));
    if (named.count(f.name)) m.graph.pointer_targets.push_back(f.name);
  }
  for (const std::string &w : p.module_words)
    if (p.declared.count(w) && !defined.count(w)) m.variables_name.push_back(w);
  // What it declares and another module defines: functions and variables a set resolves.
  for (const PtxFunctionText &d : p.declarations)
    if (!defined.count(d.name) &&
        std::find(m.graph.undefined.begin(), m.graph.undefined.end(), d.name) == m.graph.undefined.end())
      m.graph.undefined.push_back(d.name);
  for (const auto &[name, weak] : p.linked_vars) m.graph.variables.push_back({name, weak});
  m.graph.undefined_variables = p.extern_vars;

  // Its static shared variables, and which each function names, as a cubin's: the overlay lays
  // them out for the kernels' call trees. Debug sections may address a variable by name.
  std::map<std::string_view, uint32_t> var_index;
  for (const auto &[name, v] : p.shared_vars) {
    var_index[name] = (uint32_t)m.graph.shared_vars.size();
    elf::CubinSharedVar g;
    g.name = name;
    g.size = (uint32_t)std::min<uint64_t>(v.bytes, UINT32_MAX);
    g.align = v.align;
    g.overlay = v.movable && !p.section_labels && !p.module_words.count(name);
    m.graph.shared_vars.push_back(std::move(g));
  }
  for (size_t i = 0; i < p.functions.size(); ++i)
    for (const std::string &w : p.functions[i].words)
      if (const auto it = var_index.find(w); it != var_index.end())
        m.graph.functions[i].shared_vars.push_back(it->second);

  // Each function by name, and what each kernel (an entry, or a visible function that returns
  // nothing) reaches, walked once.
  std::map<std::string_view, const Function *> by_name;
  std::map<std::string_view, elf::CubinReach> reach_of;
  for (const Function &f : p.functions) {
    by_name[f.name] = &f;
    if ((f.entry || f.visible) && !f.returns) reach_of[f.name] = m.graph.reach(f.name);
  }

  // The functions that reach barrier 0, themselves or through a call (a call through a pointer
  // may reach one).
  std::set<std::string_view> barrier_functions;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Function &f : p.functions) {
      if (barrier_functions.count(f.name)) continue;
      bool reaches = f.barrier_zero || f.indirect_calls;
      for (const std::string &c : f.callees) reaches |= barrier_functions.count(c) > 0;
      if (reaches) changed = barrier_functions.insert(f.name).second;
    }
  }

  // The functions a kernel reaches that reads a grid register beyond x: each reads every grid
  // register from __sk_grid (x too: the x index is the block's modulo the grid's x extent).
  auto beyond_x = [&](std::string_view name) {
    const auto it = by_name.find(name);
    return it != by_name.end() && std::any_of(it->second->specials.begin(), it->second->specials.end(),
                                              [](const SpecialRead &s) { return grid_beyond_x(s.reg); });
  };
  std::set<std::string> grid_nd, grid_nd_kernels;
  for (const Function &f : p.functions) {
    if ((!f.entry && !f.visible) || f.returns) continue;
    const elf::CubinReach &reach = reach_of[f.name];
    if (std::any_of(reach.functions.begin(), reach.functions.end(),
                    [&](const std::string &r) { return beyond_x(r); })) {
      grid_nd_kernels.insert(f.name);
      grid_nd.insert(reach.functions.begin(), reach.functions.end());
    }
  }

  // The kernels whose block shape the caller gives (sk_kernel_desc.block): an entry without
  // .reqntid that reads a thread register beyond x, or any under a multi-dimensional .maxntid,
  // in itself or a helper. Every thread register read by such a kernel or a helper it reaches,
  // and by any helper a kernel with .reqntid reaches that reads one beyond x, comes from
  // __sk_thread, which reads the shape the call site stores.
  auto reads_thread = [&](std::string_view name, bool beyond_x_only) {
    const auto it = by_name.find(name);
    return it != by_name.end() &&
           std::any_of(it->second->specials.begin(), it->second->specials.end(), [&](const SpecialRead &s) {
             return thread_register(s.reg) >= 0 && (!beyond_x_only || s.reg.back() != 'x');
           });
  };
  std::set<std::string> block_nd, block_shape_kernels;
  for (const Function &f : p.functions) {
    if (!f.entry) continue;
    const elf::CubinReach &reach = reach_of[f.name];
    const bool flat_max = !f.maxntid[0] || f.maxntid[1] * f.maxntid[2] <= 1;
    if (!std::any_of(reach.functions.begin(), reach.functions.end(), [&](const std::string &r) {
          const auto it = by_name.find(r);
          if (it == by_name.end() || (it->second->visible && !it->second->entry)) return false;
          return !f.reqntid[0] ? reads_thread(r, flat_max) : r != f.name && reads_thread(r, true);
        }))
      continue;
    if (!f.reqntid[0]) block_shape_kernels.insert(f.name);
    for (const std::string &h : reach.functions)
      if (h != f.name || !f.reqntid[0]) block_nd.insert(h);
  }

  std::set<std::string> api_needed;
  std::set<size_t> replaced_specials;  // the special register reads the rewrite replaced
  DependentWaitFlow wait_flow(by_name, text);
  auto api_of = [&](const Function &f, const SpecialRead &s) -> std::string {
    if (workspace_register(s.reg) >= 0) return kWorkspaceFunction;
    if (grid_register(s.reg) >= 0 && grid_nd.count(f.name)) return kGridFunction;
    if (thread_register(s.reg) >= 0 && block_nd.count(f.name)) return kThreadFunction;
    return std::string(grid_api(s.reg));
  };
  // A helper's (a function no other module can call) block index and grid size are its
  // kernel's: read like the kernel's own, as a one-dimensional block's.
  for (const Function &f : p.functions) {
    if (!f.entry) {
      edits.insert(edits.end(), f.dependent_launch.begin(), f.dependent_launch.end());
      if (f.callees.count(kDependentWaitFunction)) api_needed.insert(kDependentWaitFunction);
    }
    if (f.entry || f.visible) continue;
    const uint32_t flat[3] = {0, 1, 1};
    for (const SpecialRead &s : f.specials) {
      const std::string with = special_read(s, flat, grid_nd.count(f.name), block_nd.count(f.name));
      if (with.empty()) continue;
      edits.push_back({s.at, s.len, with});
      replaced_specials.insert(s.at);
      if (const std::string fn = api_of(f, s); !fn.empty()) api_needed.insert(fn);
    }
  }
  for (const Function &f : p.functions) {
    if ((!f.entry && !f.visible) || f.returns) continue;  // a helper, never a sub-kernel
    PtxKernel k;
    k.name = f.name;
    k.entry = f.entry;
    std::copy(f.reqntid, f.reqntid + 3, k.reqntid);
    std::copy(f.maxntid, f.maxntid + 3, k.maxntid);
    k.min_blocks_per_sm = f.minnctapersm;
    k.max_registers = f.maxnreg;
    k.signature = f.signature;
    const uint32_t *block = f.reqntid[0] ? f.reqntid : f.maxntid;
    const bool flat = !block[0] || block[1] * block[2] <= 1;
    const elf::CubinReach &reach = reach_of[f.name];
    // The functions it reaches that this module defines (a call outside it links elsewhere).
    std::vector<const Function *> reached;
    for (const std::string &r : reach.functions)
      if (const auto it = by_name.find(r); it != by_name.end()) reached.push_back(it->second);
    // Its static shared memory: each variable a function it reaches names, once.
    std::set<std::string> vars;
    for (const Function *g : reached)
      for (const std::string &w : g->words)
        if (p.shared_vars.count(w)) vars.insert(w);
    for (const std::string &v : vars) {
      const Parser::SharedVar &var = p.shared_vars.at(v);
      k.static_shared = (k.static_shared + var.align - 1) / var.align * var.align + var.bytes;
    }
    k.multi_dimensional_grid = grid_nd_kernels.count(f.name);
    k.launches_dependents =
        std::any_of(reached.begin(), reached.end(), [](const Function *g) { return g->launches_dependents; });
    const bool waits = std::any_of(reached.begin(), reached.end(),
                                   [](const Function *g) { return g->callees.count(kDependentWaitFunction); });
    if (waits) k.write_before_dependent_wait = wait_flow.write_before_wait(f);
    k.block_shape_needed = block_shape_kernels.count(f.name);
    // Refused when any function it reaches does what a called function cannot.
    for (const Function *gp : reached) {
      const Function &g = *gp;
      if (block_nd.count(g.name) && !(g.visible && !g.entry) && reads_thread(g.name, false))
        k.reads_block_shape = true;
      if (!k.refusal.empty()) continue;
      std::string why = g.refusal;
      if (why.empty() && (g.entry || !g.visible))
        why = special_refusal(g.specials, (g.name == f.name && f.reqntid[0]) || block_nd.count(g.name));
      if (why.empty() && g.name != f.name && !flat && !g.visible && !block_nd.count(g.name))
        for (const SpecialRead &s : g.specials)
          if (s.reg.starts_with("%tid") || s.reg.starts_with("%ntid"))
            why = "reads " + s.reg + " of a multi-dimensional block";
      if (!why.empty()) k.refusal = g.name == f.name ? why : why + ", in '" + g.name + "', which it calls";
    }
    if (k.refusal.empty()) k.refusal = f.signature_error;  // the construct first, if both
    if (k.entry && k.refusal.empty()) {
      std::vector<Edit> mine = f.header_edits;
      std::vector<std::string> notes{".entry made a .func; parameters declared as a callee's"};
      if (!f.visible) notes[0] += "; made .visible";
      notes.insert(notes.end(), f.header_notes.begin(), f.header_notes.end());
      std::set<std::string> seen, api;
      const uint32_t one_d[3] = {block[0], 1, 1};
      for (const SpecialRead &s : f.specials) {
        if (!flat && !f.reqntid[0] && !k.block_shape_needed && thread_register(s.reg) >= 0) {
          k.refusal = "a " + std::to_string(block[0]) + "x" + std::to_string(block[1]) + "x" +
                      std::to_string(block[2]) + " block (.maxntid) without .reqntid: its shape is not known";
          break;
        }
        const std::string with =
            special_read(s, flat ? one_d : block, grid_nd.count(f.name), block_nd.count(f.name));
        if (with.empty()) continue;
        mine.push_back({s.at, s.len, with});
        replaced_specials.insert(s.at);
        const std::string fn = api_of(f, s);
        if (!fn.empty()) api.insert(fn);
        if (seen.insert(s.reg).second)
          notes.push_back(s.reg +
                          (fn.empty()                 ? std::string(" rebuilt from the block's thread index")
                           : fn == kWorkspaceFunction ? " read as the address of the step's grid word (" + fn +
                                                            "): cg::this_grid().sync() waits for the step's blocks"
                           : fn == kGridFunction   ? " read from the step's grid shape (" + fn + ")"
                           : fn == kThreadFunction ? " read from the block's shape its caller gives (" + fn + ")"
                                                   : " read as " + fn + "()"));
      }
      if (k.refusal.empty()) k.refusal = pass_by_address(f, &k, &mine, &notes);
      for (const Function *g : reached)
        if (k.refusal.empty() && !k.by_address.empty() && !g->entry && !g->param_to_generic.empty())
          k.refusal = "takes the address of a parameter and '" + g->name +
                      "', which it calls, makes a parameter address generic (" + g->param_to_generic + ")";
      bool leaves = false;
      if (k.refusal.empty() && barrier_functions.count(f.name))
        k.refusal = keep_step_after_return(f, reached, barrier_functions, &mine, &notes, &leaves);
      if (leaves) api.insert(kLeaveFunction);
      if (!f.exits.empty() && !leaves) notes.push_back("exit made ret");
      // ptxas keeps no setmaxnreg in relocatable code (C7504), which is what a link compiles.
      k.trades_registers =
          std::any_of(reached.begin(), reached.end(), [](const Function *g) { return g->trades_registers; });
      if (k.trades_registers)
        notes.push_back(
            "setmaxnreg (warp specialization) has no effect in a link, which compiles each module as relocatable "
            "code: every warp keeps the registers of the launch, as the kernel's own relocatable compile does; "
            "maybe slower than alone");
      if (waits) {
        notes.push_back(std::string("griddepcontrol.wait (programmatic dependent launch) calls ") +
                        kDependentWaitFunction + ": the thread waits there for the steps this one depends on" +
                        (k.write_before_dependent_wait.empty()
                             ? ", and what comes before it runs while they end (the step's early start)"
                             : "; the step waits at its start all the same, since the kernel may write memory "
                               "another block reads before it (" +
                                   k.write_before_dependent_wait + ")"));
        if (f.callees.count(kDependentWaitFunction)) api.insert(kDependentWaitFunction);
      }
      if (k.launches_dependents)
        notes.push_back(
            "griddepcontrol.launch_dependents taken out: a step after it that waits at griddepcontrol.wait may "
            "start early");
      if (k.refusal.empty()) {  // else it stays an .entry, as written
        edits.insert(edits.end(), mine.begin(), mine.end());
        if (!leaves) edits.insert(edits.end(), f.exits.begin(), f.exits.end());
        edits.insert(edits.end(), f.dependent_launch.begin(), f.dependent_launch.end());
        api_needed.insert(api.begin(), api.end());
        k.rewrites = std::move(notes);
      }
    }
    m.kernels.push_back(std::move(k));
  }
  // Which kernels can run on fewer threads than their super kernel's block: the count of every
  // barrier of the block and each %ntid.x of the functions they reach become their own.
  for (PtxKernel &k : m.kernels) {
    if (!k.refusal.empty()) continue;
    const elf::CubinReach &reach = reach_of.at(k.name);
    for (const std::string &r : reach.externs) {
      if (!library_function(r))
        k.narrow_refusal = "it calls '" + r + "', of another module, whose barriers count every thread";
      else if (!barrier_free(r))
        k.narrow_refusal = "it calls '" + r + "', which waits at a barrier of every thread of the block";
      if (!k.narrow_refusal.empty()) break;
    }
    for (const std::string &r : reach.functions) {
      if (!k.narrow_refusal.empty()) break;
      const Function &g = *by_name.at(r);
      if (g.indirect_calls) {
        k.narrow_refusal = "'" + r + "' calls through a pointer, whose barriers count every thread";
      } else if (g.block_dim_operand) {
        k.narrow_refusal = "'" + r + "' reads %ntid.x as an operand, not by a mov";
      } else if (g.trades_registers) {
        k.narrow_refusal =
            "'" + r + "' reallocates registers between warps (setmaxnreg), which every warp of a warpgroup must run";
      }
    }
  }
  // libsk's device API, declared where the rewrite calls it and the text does not.
  std::string decls;
  for (const std::string &fn : api_needed)
    if (!p.declared.count(fn))
      decls += "\n" + (fn == kLeaveFunction ? leave_declaration() : special_function_declaration(fn));
  if (!decls.empty()) edits.push_back({p.header_end, 0, decls + "\n"});

  // Where each function's definition and declarations stand in the rewritten text, and the
  // module's functions each definition uses, for a link to keep what its kernels reach.
  m.functions = std::move(p.declarations);
  std::set<size_t> edited;  // where an edit replaces a statement (a two-phase barrier 0)
  for (const Edit &e : edits)
    if (e.len) edited.insert(e.at);
  for (const Function &f : p.functions) {
    PtxFunctionText t;
    t.name = f.name;
    t.at = f.at;
    t.len = f.end - f.at;
    t.definition = true;
    t.exported = !f.entry && (f.visible || f.weak);
    t.named = p.module_words.count(f.name) > 0;
    for (const std::string &c : f.callees) (defined.count(c) ? t.uses : t.outside).push_back(c);
    for (const std::string &w : f.words)
      if (!f.callees.count(w) && p.declared.count(w)) (defined.count(w) ? t.uses : t.outside).push_back(w);
    for (const PtxStatement &st : f.body)
      if (const std::string_view id = barrier_of_block(st.toks); !id.empty() && !edited.count(st.at))
        t.barrier_counts.push_back((size_t)(id.data() - text.data()) + id.size());
    for (const SpecialRead &r : f.specials)
      if (r.reg == kBlockDimX && !replaced_specials.count(r.at)) t.block_dims.push_back(text.find(kBlockDimX, r.at));
    m.functions.push_back(std::move(t));
  }
  std::vector<size_t> ends, var_ends;
  for (const PtxFunctionText &t : m.functions) ends.push_back(t.at + t.len);
  for (const auto &[name, v] : p.shared_vars) {
    m.shared_text.push_back({v.at, 0, v.refs});
    var_ends.push_back(v.end);
  }
  std::vector<size_t *> marks{&m.declarations_at};
  m.declarations_at = p.header_end;
  for (size_t i = 0; i < m.functions.size(); ++i) {
    marks.insert(marks.end(), {&m.functions[i].at, &ends[i]});
    for (size_t &c : m.functions[i].barrier_counts) marks.push_back(&c);
    for (size_t &d : m.functions[i].block_dims) marks.push_back(&d);
  }
  for (size_t i = 0; i < m.shared_text.size(); ++i) {
    marks.insert(marks.end(), {&m.shared_text[i].at, &var_ends[i]});
    for (size_t &r : m.shared_text[i].refs) marks.push_back(&r);
  }
  m.whole = p.section_labels;
  m.text = apply(text, std::move(edits), std::move(marks));
  for (size_t i = 0; i < m.functions.size(); ++i) m.functions[i].len = ends[i] - m.functions[i].at;
  // The thread count the two-phase barriers and the returned threads' wait read, in the text the
  // rewrite added (ptx_early_return.hpp).
  const std::string count_read = thread_count_read();
  for (PtxFunctionText &t : m.functions) {
    if (!t.definition) continue;
    for (size_t at = m.text.find(count_read, t.at); at < t.at + t.len; at = m.text.find(count_read, at + 1))
      t.block_dims.push_back(at + count_read.find(kBlockDimX));
    std::sort(t.block_dims.begin(), t.block_dims.end());
  }
  // A variable stays where it is unless the rewritten text still names it at every place.
  for (size_t i = 0; i < m.shared_text.size(); ++i) {
    PtxSharedText &t = m.shared_text[i];
    elf::CubinSharedVar &v = m.graph.shared_vars[i];
    t.len = var_ends[i] - t.at;
    for (size_t r : t.refs)
      v.overlay = v.overlay && r + v.name.size() <= m.text.size() && m.text.compare(r, v.name.size(), v.name) == 0;
  }
  *out = std::move(m);
  return SK_OK;
}

}  // namespace sk::cuda
