#include "cuda/ptx_special_registers.hpp"

#include "common/device_api_usage.hpp"

namespace sk::cuda {

int grid_register(std::string_view reg) {
  static const std::string_view order[] = {"%ctaid.x",  "%ctaid.y",  "%ctaid.z",
                                           "%nctaid.x", "%nctaid.y", "%nctaid.z"};
  for (int i = 0; i < 6; ++i)
    if (reg == order[i]) return i;
  return -1;
}

bool grid_beyond_x(std::string_view reg) { return grid_register(reg) >= 0 && reg.back() != 'x'; }

int thread_register(std::string_view reg) {
  static const std::string_view order[] = {"%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z"};
  for (int i = 0; i < 6; ++i)
    if (reg == order[i]) return i;
  return -1;
}

int workspace_register(std::string_view reg) { return reg == "%envreg1" ? 1 : reg == "%envreg2" ? 2 : -1; }

bool special_register(std::string_view reg) {
  return grid_register(reg) >= 0 || thread_register(reg) >= 0 || workspace_register(reg) >= 0;
}

bool library_function(std::string_view name) {
  return device_api_bit(name) || name == kGridFunction || name == kThreadFunction || name == kWorkspaceFunction ||
         name == kDependentWaitFunction;
}

std::string_view grid_api(std::string_view reg) {
  if (reg == "%ctaid.x") return "sk_block_idx";
  if (reg == "%nctaid.x") return "sk_block_num";
  return "";
}

std::string special_refusal(const std::vector<SpecialRead> &reads, bool shape_known) {
  for (const SpecialRead &s : reads) {
    const bool yz = s.reg.back() != 'x';
    if (yz && thread_register(s.reg) >= 0 && !shape_known)
      return "a multi-dimensional block (reads " + s.reg + ") whose shape its PTX does not give (no .reqntid)";
  }
  return "";
}

std::string special_read(const SpecialRead &s, const uint32_t block[3], bool grid_nd, bool block_nd) {
  const std::string g = s.guard.empty() ? "" : s.guard + " ";
  const std::string axis = s.reg.substr(s.reg.size() - 1);
  const int a = axis == "x" ? 0 : axis == "y" ? 1 : 2;
  auto set = [&](const std::string &v) { return g + "mov.u32 " + s.dst + ", " + v + ";"; };
  auto call = [&](const char *fn, int what) {
    return "{ .param .b32 sk_r; .param .b32 sk_a; st.param.b32 [sk_a], " + std::to_string(what) + "; call (sk_r), " +
           fn + ", (sk_a); " + g + "ld.param.b32 " + s.dst + ", [sk_r]; }";
  };
  if (const int what = workspace_register(s.reg); what >= 0) return call(kWorkspaceFunction, what);
  if (const int what = grid_register(s.reg); what >= 0 && grid_nd) return call(kGridFunction, what);
  if (const int what = thread_register(s.reg); what >= 0 && block_nd) return call(kThreadFunction, what);
  // Outside such a sub-kernel a grid register is an .x one.
  if (const std::string_view fn = grid_api(s.reg); !fn.empty())
    return "{ .param .b32 sk_r; call (sk_r), " + std::string(fn) + ", (); " + g + "ld.param.b32 " + s.dst +
           ", [sk_r]; }";
  const bool flat = block[1] * block[2] <= 1;
  if (s.reg.starts_with("%ntid"))
    return a == 0 && (flat || !block[0]) ? "" : set(std::to_string(flat ? 1 : block[a]));
  // %tid
  if (flat) return a == 0 ? "" : set("0");
  const std::string x = std::to_string(block[0]), xy = std::to_string(block[0] * block[1]);
  const std::string head = "{ .reg .b32 %sk_t; mov.u32 %sk_t, %tid.x; ";
  if (a == 0) return head + g + "rem.u32 " + s.dst + ", %sk_t, " + x + "; }";
  if (a == 1)
    return head + "div.u32 %sk_t, %sk_t, " + x + "; " + g + "rem.u32 " + s.dst + ", %sk_t, " +
           std::to_string(block[1]) + "; }";
  return head + g + "div.u32 " + s.dst + ", %sk_t, " + xy + "; }";
}

std::string special_function_declaration(const std::string &fn) {
  if (fn == kDependentWaitFunction) return ".extern .func " + fn + "\n()\n;";
  return ".extern .func (.param .b32 sk_r) " + fn +
         (fn == kGridFunction || fn == kThreadFunction || fn == kWorkspaceFunction ? "\n(.param .b32 sk_a)\n;"
                                                                                   : "\n()\n;");
}

}  // namespace sk::cuda
