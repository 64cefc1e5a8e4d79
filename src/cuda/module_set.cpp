#include "cuda/module_set.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "elf/archive.hpp"
#include "elf/demangle.hpp"
#include "elf/fatbin.hpp"

namespace sk::cuda {
namespace {

// A module that cannot be one object of several: what it defines for the others is unknown.
sk_status check_object(const CudaModule &m, const char *call) {
  if (m.library)
    return fail(SK_ERR_UNSUPPORTED,
                "%s: %s is a shared library or executable, linked already: load it alone (sk_module_load_file)",
                call, m.label.c_str());
  if (m.kind == InputKind::LtoIr)
    return fail(SK_ERR_UNSUPPORTED,
                "%s: %s is LTO-IR, whose functions and variables are known only to a whole link: load it alone, or "
                "give its PTX (nvcc -ptx -rdc=true) or an nvcc -dc object with PTX (-arch=sm_XY) among the objects",
                call, m.label.c_str());
  return SK_OK;
}

// Every object of the images: loose ones, and each archive's members that hold device code.
sk_status gather(const std::vector<backend::ModuleImage> &images, const std::string &arch, CudaModuleCache &cache,
                 const char *call, std::vector<SetObject> *out) {
  auto add = [&](const void *bytes, size_t size, const std::string &label, bool member) -> sk_status {
    std::shared_ptr<const CudaModule> m;
    if (sk_status st = cache.load(bytes, size, label, arch, &m); st != SK_OK) return st;
    if (sk_status st = check_object(*m, call); st != SK_OK) return st;
    // The same bytes given twice are one object.
    if (std::none_of(out->begin(), out->end(), [&](const SetObject &g) { return g.module == m; }))
      out->push_back({std::move(m), label, member});
    return SK_OK;
  };
  for (const backend::ModuleImage &image : images) {
    if (!elf::is_archive(image.bytes, image.size)) {
      if (sk_status st = add(image.bytes, image.size, image.label, false); st != SK_OK) return st;
      continue;
    }
    elf::Archive archive;
    if (sk_status st = elf::parse_archive(image.bytes, image.size, image.label, &archive); st != SK_OK) return st;
    size_t device = 0;
    for (size_t i = 0; i < archive.members.size(); ++i) {
      const elf::ArchiveMember &member = archive.members[i];
      if (elf::host_code_only(member.data, member.size)) continue;
      if (sk_status st = add(member.data, member.size, archive.member_label(i), true); st != SK_OK) return st;
      ++device;
    }
    if (!device)
      return fail(SK_ERR_INCOMPATIBLE, "%s: %s: none of its %zu members holds device code (each is host code)", call,
                  image.label.c_str(), archive.members.size());
  }
  return SK_OK;
}

// "a.o + b.o", or the first three and how many in all.
std::string set_label(const std::vector<backend::ModuleImage> &images) {
  std::string label;
  for (size_t i = 0; i < images.size() && i < 3; ++i) label += (i ? " + " : "") + images[i].label;
  if (images.size() > 3) label += " + ... (" + std::to_string(images.size()) + " files)";
  return label;
}

// The names an object defines for the others, each with whether its definition is weak.
std::vector<std::pair<std::string, bool>> definitions(const CudaModule &m) {
  std::vector<std::pair<std::string, bool>> out;
  for (const elf::CubinFunction &f : m.cubin.functions)
    if (!f.local) out.emplace_back(f.name, f.weak);
  for (const elf::CubinVariable &v : m.cubin.variables) out.emplace_back(v.name, v.weak);
  return out;
}

}  // namespace

bool is_module_set(const std::vector<backend::ModuleImage> &images) {
  return images.size() > 1 || (images.size() == 1 && elf::is_archive(images[0].bytes, images[0].size));
}

sk_status resolve_module_set(const std::vector<SetObject> &given, const char *call,
                             std::shared_ptr<ModuleSet> *out) {
  auto set = std::make_shared<ModuleSet>();
  for (const SetObject &o : given) set->objects.push_back(o.module);
  // name -> the first object defining it so: loose objects first, as a linker pulls a member
  // only for what is still undefined.
  std::map<std::string, size_t, std::less<>> strong, weak;
  for (const bool members : {false, true})
    for (size_t i = 0; i < given.size(); ++i) {
      if (given[i].member != members) continue;
      for (const auto &[name, is_weak] : definitions(*given[i].module)) {
        auto [it, fresh] = (is_weak ? weak : strong).emplace(name, i);
        if (!fresh && !is_weak && !members)
          return fail(SK_ERR_BAD_BINARY,
                      "%s: %s is defined by %s and by %s: a device link holds one definition of each name (make "
                      "one static, or give one of the two objects)",
                      call, elf::quoted_symbol(name).c_str(), given[it->second].label.c_str(),
                      given[i].label.c_str());
      }
    }
  for (const SetObject &o : given)
    for (const KernelMetadata &k : o.module->declared_kernels())
      if (std::none_of(set->kernels.begin(), set->kernels.end(),
                       [&](const KernelMetadata &d) { return d.name == k.name; }))
        set->kernels.push_back(k);
  set->definer = weak;
  for (const auto &[name, i] : strong) set->definer[name] = i;
  // What each object needs directly: the definer of each name it uses undefined, and of each it
  // defines weak where another defines it strong.
  std::vector<std::vector<size_t>> needs(given.size());
  for (size_t i = 0; i < given.size(); ++i) {
    const elf::Cubin &c = given[i].module->cubin;
    auto need = [&](const std::string &name) {
      if (auto it = set->definer.find(name);
          it != set->definer.end() && it->second != i &&
          std::find(needs[i].begin(), needs[i].end(), it->second) == needs[i].end())
        needs[i].push_back(it->second);
    };
    for (const std::string &name : c.undefined) need(name);
    for (const std::string &name : c.undefined_variables) need(name);
    for (const auto &[name, is_weak] : definitions(*given[i].module))
      if (is_weak && strong.count(name)) need(name);
  }
  // Each object's links (ModuleSet::links), depth first, on a stack of our own: an archive's
  // chain of needs may be longer than a thread's stack is deep.
  set->links.resize(given.size());
  for (size_t root = 0; root < given.size(); ++root) {
    std::vector<bool> seen(given.size());
    seen[root] = true;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};  // an object, and its next need
    while (!stack.empty()) {
      auto &[i, next] = stack.back();
      if (next == needs[i].size()) {
        if (i != root) set->links[root].push_back(i);
        stack.pop_back();
      } else if (const size_t n = needs[i][next++]; !seen[n]) {
        seen[n] = true;
        stack.push_back({n, 0});
      }
    }
  }
  *out = std::move(set);
  return SK_OK;
}

sk_status load_module_set(const std::vector<backend::ModuleImage> &images, const std::string &arch,
                          CudaModuleCache &cache, const char *call, std::shared_ptr<const CudaModule> *out) {
  std::vector<SetObject> given;
  if (sk_status st = gather(images, arch, cache, call, &given); st != SK_OK) return st;
  auto m = std::make_shared<CudaModule>();
  std::shared_ptr<ModuleSet> set;
  if (sk_status st = resolve_module_set(given, call, &set); st != SK_OK) return st;
  m->set = std::move(set);
  m->label = set_label(images);
  m->metadata = m->set->kernels;
  *out = std::move(m);
  return SK_OK;
}

sk_status make_set_kernel(const CudaModule &module, const char *name, const backend::KernelRequest &request,
                          const char *call, std::shared_ptr<CudaKernel> *out) {
  const ModuleSet &set = *module.set;
  const auto it = set.definer.find(name);
  if (const auto why = set.unreadable.find(name); it == set.definer.end() && why != set.unreadable.end())
    return fail(SK_ERR_BAD_BINARY, "%s: kernel '%s': its translation unit's PTX cannot be read: %s", call, name,
                why->second.c_str());
  if (it == set.definer.end()) {
    std::vector<std::string> names;
    for (const KernelMetadata &k : set.kernels) names.push_back(k.name);
    return fail(SK_ERR_NOT_FOUND, "%s: no object of %s defines a kernel '%s' (its kernels: %s)", call,
                module.label.c_str(), name, names.empty() ? "none" : some_names(names).c_str());
  }
  std::shared_ptr<CudaKernel> k;
  if (sk_status st = make_cuda_kernel(set.objects[it->second], name, request, call, &k); st != SK_OK) return st;
  for (size_t l : set.links[it->second]) k->links.push_back(set.objects[l]);
  *out = std::move(k);
  return SK_OK;
}

}  // namespace sk::cuda
