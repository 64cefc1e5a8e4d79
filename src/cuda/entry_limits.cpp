#include "cuda/entry_limits.hpp"

#include <map>
#include <set>

#include "common/error.hpp"

namespace sk::cuda {
namespace {

// A function of the link: its cubin and its record there.
struct LinkedFunction {
  const elf::Cubin *cubin;
  const elf::CubinFunction *fn;
};

// Finds a call cycle reachable from `start` through the cubins' call graphs (a callee is looked
// up in its caller's cubin first, then among the others' global functions): the name of a
// function on it, or "" when there is none.
class CycleFinder {
 public:
  explicit CycleFinder(const std::vector<const elf::Cubin *> &cubins) {
    for (const elf::Cubin *c : cubins)
      for (const elf::CubinFunction &f : c->functions)
        if (!f.local) global_.emplace(f.name, LinkedFunction{c, &f});
  }
  std::string from(const elf::Cubin *cubin, const std::string &name) {
    state_.clear();
    return visit(cubin, name);
  }

 private:
  const elf::CubinFunction *lookup(const elf::Cubin *&cubin, const std::string &name) const {
    if (const elf::CubinFunction *f = cubin->find(name)) return f;
    auto it = global_.find(name);
    if (it == global_.end()) return nullptr;
    cubin = it->second.cubin;
    return it->second.fn;
  }
  std::string visit(const elf::Cubin *cubin, const std::string &name) {
    const elf::CubinFunction *f = lookup(cubin, name);
    if (!f) return "";
    int &s = state_[f];
    if (s == 1) return name;  // on the path: a cycle
    if (s == 2) return "";
    s = 1;
    for (const std::string &callee : f->callees)
      if (std::string on = visit(cubin, callee); !on.empty()) return on;
    state_[f] = 2;
    return "";
  }
  std::multimap<std::string, LinkedFunction> global_;
  std::map<const elf::CubinFunction *, int> state_;  // 1: on the path; 2: done
};

// Each distinct sub-kernel (symbol and module) once, with its first step.
std::vector<std::pair<size_t, const CudaKernel *>> distinct(const BuildRequest &req) {
  std::vector<std::pair<size_t, const CudaKernel *>> out;
  std::set<std::pair<const CudaModule *, std::string>> seen;
  for (size_t i = 0; i < req.kernels.size(); ++i)
    if (seen.insert({req.kernels[i]->module.get(), req.kernels[i]->symbol}).second)
      out.emplace_back(i, req.kernels[i].get());
  return out;
}

std::string quoted_list(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

}  // namespace

sk_status entry_stack_bytes(const BuildRequest &req, const BuiltImage &image, uint32_t stack_key, uint32_t *out) {
  const elf::CubinFunction *entry = image.info.find(image.entry);
  const uint32_t linked = entry ? entry->stack_size : 0;
  if (linked != kStackUnknown) {
    *out = linked;
    return SK_OK;
  }
  if (stack_key) {
    *out = stack_key;
    return SK_OK;
  }
  std::vector<const elf::Cubin *> cubins;
  for (const auto &k : req.kernels)
    if (k->module->kind == InputKind::Cubin) {
      bool seen = false;
      for (const elf::Cubin *c : cubins) seen |= c == &k->module->cubin;
      if (!seen) cubins.push_back(&k->module->cubin);
    }
  CycleFinder cycles(cubins);
  std::vector<std::string> recursing, all;
  for (const auto &[step, k] : distinct(req)) {
    const std::string name = req.plan->steps[step].kernel.name;
    all.push_back(name);
    if (k->module->kind != InputKind::Cubin) continue;
    if (std::string on = cycles.from(&k->module->cubin, k->symbol); !on.empty())
      recursing.push_back(name + "' (step " + std::to_string(step) + ") recurses through '" + on);
  }
  constexpr const char *kWayOut =
      "open the device with the key stack_bytes=N, the call stack per thread its deepest call needs (e.g. "
      "\"cuda:0,stack_bytes=8192\")";
  if (!recursing.empty())
    return fail(SK_ERR_INCOMPATIBLE,
                "super kernel '%s': ptxas cannot bound the call stack of its entry (\"Stack size ... cannot be "
                "statically determined\"): sub-kernel %s; %s",
                req.name.c_str(), quoted_list(recursing).c_str(), kWayOut);
  return fail(SK_ERR_INCOMPATIBLE,
              "super kernel '%s': ptxas cannot bound the call stack of its entry (\"Stack size ... cannot be "
              "statically determined\"): one of its sub-kernels %s recurses or calls through a function pointer "
              "the link cannot follow; %s",
              req.name.c_str(), quoted_list(all).c_str(), kWayOut);
}

sk_status check_entry_shared(const BuildRequest &req, const BuiltImage &image, uint32_t optin, uint32_t reserved,
                             const std::string &gpu) {
  if (!optin) return SK_OK;
  // The linked entry's .nv.shared.<entry> holds the block's reservation with its variables;
  // the opt-in bounds the rest and the dynamic bytes.
  const uint32_t own_static = image.static_shared > reserved ? image.static_shared - reserved : image.static_shared;
  if ((uint64_t)own_static + image.dynamic_shared <= optin) return SK_OK;
  size_t most_static = 0, most_dynamic = 0;
  for (size_t i = 1; i < req.kernels.size(); ++i) {
    if (req.kernels[i]->static_shared > req.kernels[most_static]->static_shared) most_static = i;
    if (req.kernels[i]->dynamic_shared > req.kernels[most_dynamic]->dynamic_shared) most_dynamic = i;
  }
  const CudaKernel &s = *req.kernels[most_static], &d = *req.kernels[most_dynamic];
  return fail(SK_ERR_INCOMPATIBLE,
              "super kernel '%s': its blocks need %u bytes of shared memory, but a block of %s may use %u besides "
              "the %u bytes the GPU reserves in every block (sm_90 reserves 1 KiB): %u static (the most of one "
              "sub-kernel: '%s', step %zu, %u bytes) and %u dynamic (the largest extern __shared__ array: '%s', "
              "step %zu, %u bytes, and libsk's block state)",
              req.name.c_str(), own_static + image.dynamic_shared, gpu.c_str(), optin, reserved, own_static,
              req.plan->steps[most_static].kernel.name.c_str(), most_static, s.static_shared, image.dynamic_shared,
              req.plan->steps[most_dynamic].kernel.name.c_str(), most_dynamic, d.dynamic_shared);
}

}  // namespace sk::cuda
