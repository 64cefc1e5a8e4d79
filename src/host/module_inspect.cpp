// sk_module_inspect on the host backend: the kernels an object, or each member of an archive,
// declares, read by the parsers sk_module_load uses (elf/ and common/kernel_metadata) without
// linking it, so no code of it runs: each record's signature as sk_module_get_kernel takes it,
// its core type, whether the object defines its function and the device API its code reaches.
#include <map>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "common/json_writer.hpp"
#include "common/kernel_metadata.hpp"
#include "elf/archive.hpp"
#include "elf/function_references.hpp"
#include "elf/kernel_records.hpp"
#include "host/host_device.hpp"
#include "host/linker/relocation.hpp"
#include "host/open.hpp"

namespace sk::host {
namespace {

// Writes an object's keys of the JSON: its label, `kind` (none for an archive member), machine and
// declared kernels. A malformed object or record fails as sk_module_load fails on it, naming
// `label`.
sk_status write_object(JsonWriter &j, const void *bytes, size_t size, const std::string &label, const char *kind) {
  elf::Object o;
  if (sk_status st = elf::parse_object(bytes, size, label, &o); st != SK_OK) return st;
  std::vector<KernelMetadata> declared;
  if (sk_status st = parse_kernel_metadata(elf::kernel_records(o), label, &declared); st != SK_OK) return st;
  const std::map<std::string, elf::FunctionReach> reach = elf::reach_by_function(o);
  j.key("module").value(label);
  if (kind) j.key("kind").value(kind);
  const RelocArch *arch = reloc_arch(o.machine);
  j.key("machine").value(arch ? std::string(arch->name) : "e_machine " + std::to_string(o.machine));
  j.key("kernels").begin_array();
  for (const KernelMetadata &meta : declared) {
    j.begin_object();
    j.key("name").value(meta.name);
    Signature sig;
    const std::string what = kernel_of(meta.name, label);
    // As sk_module_get_kernel takes it: a signature that does not parse is the kernel's error.
    const bool taken = kernel_signature(nullptr, &meta, what, "sk_module_get_kernel", "", &sig) == SK_OK;
    j.key("signature").value(taken ? signature_to_string(sig) : meta.signature);
    j.key("core_type").value(meta.core_type);
    const auto fn = reach.find(meta.name);
    j.key("defined").value(fn != reach.end());
    j.key("device_api").begin_array();
    if (fn != reach.end())
      for (const char *name : device_api_names(device_api_usage(fn->second.undefined))) j.value(name);
    j.end_array();
    if (!taken) j.key("error").value(last_error());
    j.end_object();
  }
  j.end_array();
  return SK_OK;
}

}  // namespace

sk_status inspect_host_module(const char *spec, const void *image, size_t size, std::string *json) {
  DeviceSpec parsed;
  if (sk_status st = parse_device_spec(spec, &parsed); st != SK_OK) return st;
  HostSpec keys;
  if (sk_status st = parse_host_spec(parsed, &keys); st != SK_OK) return st;
  const std::string label = backend::memory_image_label(size);
  if (sk_status st = backend::check_object_size(size, label); st != SK_OK) return st;
  JsonWriter j;
  j.begin_object();
  if (!elf::is_archive(image, size)) {
    if (sk_status st = write_object(j, image, size, label, "object"); st != SK_OK) return st;
  } else {
    elf::Archive archive;
    if (sk_status st = elf::parse_archive(image, size, label, &archive); st != SK_OK) return st;
    j.key("module").value(label);
    j.key("kind").value("archive");
    j.key("members").begin_array();
    for (size_t i = 0; i < archive.members.size(); ++i) {
      const elf::ArchiveMember &m = archive.members[i];
      j.begin_object();
      j.key("name").value(m.name);
      j.key("bytes").value(uint64_t{m.size});
      if (sk_status st = write_object(j, m.data, m.size, archive.member_label(i), nullptr); st != SK_OK) return st;
      j.end_object();
    }
    j.end_array();
  }
  j.end_object();
  *json = j.str();
  return SK_OK;
}

}  // namespace sk::host
