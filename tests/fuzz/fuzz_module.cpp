// libFuzzer target: bytes as a kernel object. They go through sk_module_inspect and the ELF
// reader directly, then through the public API (sk_module_load on a host device, under symbols=process or strict by
// the last byte), and every function the object defines is looked up as a kernel, with its
// metadata and with a few given signatures. Nothing is launched: running an object's code is
// what loading it is for (docs/conventions.md, trust model), not something a fuzzer can judge;
// for the same reason objects with constructors or destructors, which loading and unloading
// run, and with indirect functions, whose resolvers loading runs, stop after the ELF reader.
#include <elf.h>
#include <sk.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "elf/elf_object.hpp"
#include "host/linker/linker_init.hpp"

namespace {
sk_device *open_device(const char *spec) {
  sk_device *dev = nullptr;
  if (sk_device_open(spec, &dev) != SK_OK) std::abort();
  return dev;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static sk_device *process = open_device("host:cores=1,timeout_ms=1000");
  static sk_device *strict = open_device("host:cores=1,timeout_ms=1000,symbols=strict");
  // sk_module_inspect runs none of the object's code: every input goes through it.
  size_t described = 0;
  sk_module_inspect(size && (data[0] & 1) ? "host:symbols=strict" : "host", data, size, nullptr, 0, &described);
  std::vector<std::string> names;
  sk::elf::Object object;
  if (sk::elf::parse_object(data, size, "fuzz", &object) == SK_OK) {
    for (const sk::elf::Section &s : object.sections) {
      const auto kind = sk::host::init_section(s).kind;
      if (s.size > 0 && (kind == sk::host::InitSection::Init || kind == sk::host::InitSection::Fini)) return 0;
    }
    for (const sk::elf::Symbol &s : object.symbols)
      if (s.type == STT_GNU_IFUNC) return 0;
    for (const sk::elf::Symbol &s : object.symbols)
      if (s.shndx != SHN_UNDEF && (s.bind == STB_GLOBAL || s.bind == STB_WEAK) && names.size() < 16)
        names.push_back(s.name);
  }
  names.push_back("capi_fill");  // a name seeds define, and one no object does
  names.push_back("");
  sk_device *dev = size && (data[size - 1] & 1) ? strict : process;
  sk_module *mod = nullptr;
  if (sk_module_load(dev, data, size, &mod) != SK_OK) return 0;
  static const char *const signatures[] = {"", "ptr", "ptr,u32,u32", "i8,u16,i64,f32,f64,u8", "ptr,float"};
  for (const std::string &name : names) {
    sk_kernel *k = nullptr;
    sk_module_get_kernel(mod, name.c_str(), &k);
    for (const char *sig : signatures) sk_module_get_kernel_with_signature(mod, name.c_str(), sig, &k);
  }
  sk_module_unload(mod);
  return 0;
}
