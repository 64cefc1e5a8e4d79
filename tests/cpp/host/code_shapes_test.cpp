// Code shapes a build system produces beyond the default model: -mcmodel=large and medium objects
// (gcc, clang, -O0/-O2) compute what the default-model build of the same source computes, fused
// and unfused; LTO objects without machine code are refused naming the flag, fat ones load;
// thread-local storage is refused saying why. And what debuggers and profilers are told: the
// in-memory ELF given to GDB's JIT interface, and perf's map.
#include <elf.h>
#include <gtest/gtest.h>

#include <sk.h>
#include <unistd.h>
#include <thread>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/device_spec.hpp"
#include "host/host_device.hpp"
#include "host/linker/debug_registration.hpp"
#include "host/linker/perf_map.hpp"
#include "host/linker/relocation.hpp"
#include "linker_test_support.hpp"
#include "sk_assert.hpp"

extern "C" {
struct jit_descriptor {
  uint32_t version;
  uint32_t action_flag;
  sk::host::DebugRegistration::Entry *relevant_entry;
  sk::host::DebugRegistration::Entry *first_entry;
};
extern jit_descriptor __jit_debug_descriptor;
}

namespace {

using sk::test::kernel_path;

std::vector<std::string> shape_variants() {
  std::vector<std::string> out;
  std::stringstream ss(SK_TEST_SHAPE_VARIANTS);
  for (std::string v; std::getline(ss, v, ',');)
    if (!v.empty()) out.push_back(v);
  return out;
}

constexpr uint32_t kN = 5000;

// shape_fill(a); shape_reverse(b, a); shape_reverse(a, b), with three block dims; a then b.
void run_chain(const std::string &object, bool fused, std::vector<uint32_t> *out) {
  sk_device *dev = nullptr;
  ASSERT_SK(sk_device_open("host:cores=2", &dev));
  sk_module *mod = nullptr;
  ASSERT_SK(sk_module_load_file(dev, object.c_str(), &mod));
  sk_kernel *fill = nullptr, *reverse = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod, "shape_fill", &fill));
  ASSERT_SK(sk_module_get_kernel(mod, "shape_reverse", &reverse));
  uint32_t *buf = nullptr;
  ASSERT_SK(sk_mem_alloc(dev, 2 * kN * sizeof(uint32_t), reinterpret_cast<void **>(&buf)));
  uint32_t *a = buf, *b = buf + kN, n = kN;
  void *fill_args[] = {&a, &n}, *ab_args[] = {&b, &a, &n}, *ba_args[] = {&a, &b, &n};
  if (fused) {
    sk_scope *scope = nullptr;
    sk_superkernel *sk = nullptr;
    ASSERT_SK(sk_scope_begin(dev, "shapes", nullptr, &scope));
    ASSERT_SK(sk_add_kernel(scope, fill, 4, fill_args, nullptr));
    ASSERT_SK(sk_add_kernel(scope, reverse, 3, ab_args, nullptr));
    ASSERT_SK(sk_add_kernel(scope, reverse, 5, ba_args, nullptr));
    ASSERT_SK(sk_finalize(scope, &sk));
    ASSERT_SK(sk_launch(sk, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    sk_superkernel_destroy(sk);
  } else {
    ASSERT_SK(sk_launch_kernel(fill, 4, fill_args, nullptr));
    ASSERT_SK(sk_launch_kernel(reverse, 3, ab_args, nullptr));
    ASSERT_SK(sk_launch_kernel(reverse, 5, ba_args, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
  }
  out->assign(buf, buf + 2 * kN);
  sk_mem_free(dev, buf);
  sk_module_unload(mod);
  sk_device_close(dev);
}

const std::vector<uint32_t> &default_model_result() {
  static std::vector<uint32_t> want;
  if (want.empty()) run_chain(kernel_path("gcc-O2-pie", "shape_models"), false, &want);
  return want;
}

class CodeModel : public ::testing::TestWithParam<std::string> {};

TEST_P(CodeModel, FusedAndUnfusedEqualTheDefaultCodeModel) {
  const std::string object = kernel_path(GetParam(), "shape_models");
  std::vector<uint32_t> unfused, fused;
  ASSERT_NO_FATAL_FAILURE(run_chain(object, false, &unfused));
  ASSERT_NO_FATAL_FAILURE(run_chain(object, true, &fused));
  ASSERT_EQ(default_model_result().size(), 2 * kN);
  EXPECT_EQ(unfused, default_model_result()) << object;
  EXPECT_EQ(fused, unfused) << object;
}

// The object really is what the model makes: its data is reached through 64-bit fields.
TEST_P(CodeModel, ObjectAddressesItsDataTheModelsWay) {
  sk::test::Loaded l;
  ASSERT_EQ(sk::test::load_kernel(GetParam(), "shape_models", sk::test::Resolver().options(), &l), SK_OK)
      << l.message;
  const std::string &v = GetParam();
  using sk::test::has_relocation;
#if defined(__x86_64__)
  if (v.find("-largepic") != std::string::npos) {  // everything from the GOT's base
    EXPECT_TRUE(has_relocation(l.object, R_X86_64_GOTPC64)) << v;
    EXPECT_TRUE(has_relocation(l.object, R_X86_64_GOT64)) << v;
    EXPECT_TRUE(has_relocation(l.object, R_X86_64_GOTOFF64)) << v;
  } else if (v.find("-large") != std::string::npos) {  // 64-bit absolute addresses
    EXPECT_TRUE(has_relocation(l.object, R_X86_64_64)) << v;
  } else {  // medium: large data from the GOT's base, code within 2 GiB
    EXPECT_TRUE(has_relocation(l.object, R_X86_64_GOTOFF64)) << v;
    EXPECT_TRUE(has_relocation(l.object, R_X86_64_GOTPC32)) << v;
  }
#elif defined(__aarch64__)
  EXPECT_TRUE(has_relocation(l.object, R_AARCH64_MOVW_UABS_G3) || has_relocation(l.object, R_AARCH64_ABS64)) << v;
#endif
  // Written by the kernel, read back through the linked symbol: the data is where code finds it.
  auto *scratch = l.sym<uint32_t>("shape_scratch");
  ASSERT_NE(scratch, nullptr);
  scratch[19999] = 7;  // the array's last element lies inside a writable mapping
  EXPECT_EQ(scratch[19999], 7u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CodeModel, ::testing::ValuesIn(shape_variants()), sk::test::variant_name);

#if defined(__x86_64__)
// gcc -mcmodel=medium -fcommon: the tentative definition is a large common (SHN_X86_64_LCOMMON)
// and the big arrays are in .lbss / .lrodata / .ldata.
TEST(CodeModelMedium, LargeCommonsAndLargeDataSectionsLoad) {
  const std::vector<uint8_t> bytes = sk::test::kernel_bytes("gcc-O2-medium", "shape_models");
  sk::elf::Object o;
  ASSERT_EQ(sk::elf::parse_object(bytes.data(), bytes.size(), "m.o", &o), SK_OK);
  bool common = false;
  for (const sk::elf::Symbol &s : o.symbols)
    if (s.name == "shape_scratch") common = s.shndx == SHN_COMMON;
  EXPECT_TRUE(common) << "shape_scratch is not a (large) common";
  for (const char *name : {".lbss", ".lrodata", ".ldata"}) EXPECT_GE(o.find_section(name), 0) << name;
}
#endif

// ---- LTO objects ----

TEST(Lto, SlimGccObjectIsRefusedNamingTheFlag) {
  const std::string path = kernel_path("gcc-O2-lto", "shape_models");
  sk_device *dev = nullptr;
  ASSERT_SK(sk_device_open("host:cores=1", &dev));
  sk_module *mod = nullptr;
  EXPECT_EQ(sk_module_load_file(dev, path.c_str(), &mod), SK_ERR_UNSUPPORTED);
  const std::string msg = sk_last_error();
  EXPECT_NE(msg.find("gcc-O2-lto/shape_models.o"), std::string::npos) << msg;
  EXPECT_NE(msg.find("compiled with -flto: add -ffat-lto-objects or compile without -flto"), std::string::npos)
      << msg;
  EXPECT_EQ(mod, nullptr);
  sk_device_close(dev);
}

TEST(Lto, ClangBitcodeIsRefusedNamingTheFlag) {
  const std::string path = kernel_path("clang-O2-lto", "shape_models");
  const std::vector<uint8_t> bytes = sk::test::read_bytes(path);
  ASSERT_GE(bytes.size(), 4u);
  ASSERT_EQ(bytes[0], 'B') << "clang -flto did not write bitcode";
  sk_device *dev = nullptr;
  ASSERT_SK(sk_device_open("host:cores=1", &dev));
  sk_module *mod = nullptr;
  EXPECT_EQ(sk_module_load(dev, bytes.data(), bytes.size(), &mod), SK_ERR_UNSUPPORTED);
  const std::string msg = sk_last_error();
  EXPECT_NE(msg.find("LLVM bitcode"), std::string::npos) << msg;
  EXPECT_NE(msg.find("compile without -flto"), std::string::npos) << msg;
  EXPECT_EQ(sk_module_load_file(dev, path.c_str(), &mod), SK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(sk_last_error()).find("clang-O2-lto/shape_models.o"), std::string::npos) << sk_last_error();
  // The same bitcode in its wrapper header (0x0B17C0DE, as Apple's toolchains write it).
  std::vector<uint8_t> wrapped = {0xde, 0xc0, 0x17, 0x0b, 0, 0, 0, 0, 20, 0, 0, 0};
  wrapped.resize(20, 0);
  wrapped.insert(wrapped.end(), bytes.begin(), bytes.end());
  EXPECT_EQ(sk_module_load(dev, wrapped.data(), wrapped.size(), &mod), SK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(sk_last_error()).find("LLVM bitcode"), std::string::npos) << sk_last_error();
  sk_device_close(dev);
}

TEST(Lto, FatGccObjectLoadsItsRegularCode) {
  std::vector<uint32_t> fused;
  ASSERT_NO_FATAL_FAILURE(run_chain(kernel_path("gcc-O2-fatlto", "shape_models"), true, &fused));
  EXPECT_EQ(fused, default_model_result());
}

// 1 MiB of thread-locals: beyond glibc's static TLS space for the models that need it there,
// fine through __tls_get_addr.
TEST(ThreadLocalSpace, StaticModelsRefusedNamingTheVariableDynamicOnesLoad) {
  for (const std::string &variant : sk::test::kernel_variants()) {
    sk::test::Loaded l;
    const sk_status st = sk::test::load_kernel(variant, "tls_too_big", sk::test::Resolver().options(), &l);
    if (variant.find("-pic") != std::string::npos) {
      ASSERT_EQ(st, SK_OK) << variant << ": " << l.message;
      auto touch = l.fn<int (*)(int)>("tls_too_big_touch");
      EXPECT_EQ(touch(7), 1);
      EXPECT_EQ(touch(7), 2);
      int other = 0;
      std::thread([&] { other = touch(7); }).join();
      EXPECT_EQ(other, 1) << variant << ": another thread has its own";
      continue;
    }
    EXPECT_EQ(st, SK_ERR_UNSUPPORTED) << variant;
    for (const char *want : {"'tls_too_big_buffer'", "local exec", "static TLS", "tls_too_big.o",
                             "glibc.rtld.optional_static_tls", "-fPIC"})
      EXPECT_NE(l.message.find(want), std::string::npos) << variant << ": " << want << " in " << l.message;
  }
}

// ---- debuggers and profilers ----

TEST(DebugRegistration, DescribesEveryFunctionAtItsLinkedAddressWhileRegistered) {
  sk::test::Loaded l;
  ASSERT_EQ(sk::test::load_kernel("gcc-O0-pie", "shape_models", sk::test::Resolver().options(), &l), SK_OK)
      << l.message;
  sk::host::DebugRegistration::Entry *before = __jit_debug_descriptor.first_entry;
  std::unique_ptr<sk::host::DebugRegistration> reg = sk::host::DebugRegistration::create(*l.linked);
  ASSERT_NE(reg, nullptr);
  ASSERT_NE(__jit_debug_descriptor.first_entry, nullptr);
  EXPECT_EQ(__jit_debug_descriptor.first_entry->symfile_addr, reinterpret_cast<const char *>(reg->symfile().data()));
  EXPECT_EQ(__jit_debug_descriptor.first_entry->next_entry, before);
  EXPECT_EQ(__jit_debug_descriptor.action_flag, 0u);

  // The description is an ELF object of this machine: .text at the code, one symbol per function.
  const std::vector<uint8_t> &f = reg->symfile();
  sk::elf::Object d;
  ASSERT_EQ(sk::elf::parse_object(f.data(), f.size(), "jit.o", &d), SK_OK) << sk_last_error();
  EXPECT_EQ(d.machine, sk::host::kHostMachine);
  Elf64_Ehdr eh;
  std::memcpy(&eh, f.data(), sizeof eh);
  Elf64_Shdr text;
  std::memcpy(&text, f.data() + eh.e_shoff + sizeof(Elf64_Shdr), sizeof text);
  ASSERT_EQ(d.sections[1].name, ".text");
  for (const char *name : {"shape_fill", "shape_reverse", "shape_mix"}) {  // shape_mix is static
    const sk::elf::Symbol *sym = nullptr;
    for (const sk::elf::Symbol &s : d.symbols)
      if (s.name == name) sym = &s;
    ASSERT_NE(sym, nullptr) << name;
    EXPECT_EQ(sym->type, STT_FUNC);
    EXPECT_GT(sym->size, 0u);
    void *linked = nullptr;
    for (const sk::host::CodeSymbol &c : l.linked->code_symbols())
      if (c.name == name) linked = c.address;
    EXPECT_EQ(text.sh_addr + sym->value, reinterpret_cast<uint64_t>(linked)) << name;
  }
  // The relocated unwind table rides along at its own address, for gdb to unwind with.
  ASSERT_FALSE(l.linked->unwind_tables().empty());
  const auto [table, table_size] = l.linked->unwind_tables().front();
  ASSERT_GE(d.find_section(".eh_frame"), 0);
  const sk::elf::Section &eh_frame = d.sections[d.find_section(".eh_frame")];
  ASSERT_EQ(eh_frame.size, table_size);
  EXPECT_EQ(std::memcmp(eh_frame.data, table, table_size), 0);
  Elf64_Shdr eh_shdr;
  std::memcpy(&eh_shdr, f.data() + eh.e_shoff + d.find_section(".eh_frame") * sizeof(Elf64_Shdr), sizeof eh_shdr);
  EXPECT_EQ(eh_shdr.sh_addr, reinterpret_cast<uint64_t>(table));
  reg.reset();
  EXPECT_EQ(__jit_debug_descriptor.first_entry, before);
}

// Lines of the perf map naming `name`, as [start, start + size).
std::vector<std::pair<uint64_t, uint64_t>> perf_map_lines(const std::string &name) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::ifstream f(sk::host::perf_map_path());
  for (std::string line; std::getline(f, line);) {
    std::istringstream ss(line);
    std::string start, size, n;
    if (ss >> start >> size >> n && n == name)
      out.emplace_back(std::stoull(start, nullptr, 16),
                       std::stoull(start, nullptr, 16) + std::stoull(size, nullptr, 16));
  }
  return out;
}

// Loads shape_models on a host device of `spec`; the address of shape_fill.
void load_on(const char *spec, uint64_t *address) {
  sk::DeviceSpec s;
  ASSERT_EQ(sk::parse_device_spec(spec, &s), SK_OK);
  std::unique_ptr<sk::host::HostDevice> dev;
  ASSERT_EQ(sk::host::HostDevice::open(s, &dev), SK_OK) << sk_last_error();
  const std::vector<uint8_t> bytes = sk::test::kernel_bytes("gcc-O2-pie", "shape_models");
  std::shared_ptr<sk::host::LinkedModule> mod;
  ASSERT_EQ(dev->load_module(bytes.data(), bytes.size(), "shape_models.o", &mod), SK_OK) << sk_last_error();
  const sk::host::LinkedFunction *fn = mod->object->find_function("shape_fill");
  ASSERT_NE(fn, nullptr);
  *address = reinterpret_cast<uint64_t>(fn->address);
}

TEST(PerfMap, WrittenOnlyWhenAskedWithALineCoveringEachFunction) {
  ::unsetenv("SK_PERF_MAP");
  std::remove(sk::host::perf_map_path().c_str());
  uint64_t at = 0;
  ASSERT_NO_FATAL_FAILURE(load_on("host:cores=1", &at));
  EXPECT_TRUE(perf_map_lines("shape_fill").empty()) << "a perf map was written without perf_map=1";

  auto covered = [](uint64_t address) {
    for (auto [begin, end] : perf_map_lines("shape_fill"))
      if (begin <= address && address < end) return true;
    return false;
  };
  ASSERT_NO_FATAL_FAILURE(load_on("host:cores=1,perf_map=1", &at));
  EXPECT_TRUE(covered(at)) << "no line of " << sk::host::perf_map_path() << " covers shape_fill at 0x" << std::hex
                           << at;

  ::setenv("SK_PERF_MAP", "1", 1);  // the environment asks; perf_map=0 overrides it
  ASSERT_NO_FATAL_FAILURE(load_on("host:cores=1", &at));
  EXPECT_TRUE(covered(at));
  const size_t lines = perf_map_lines("shape_fill").size();
  ASSERT_NO_FATAL_FAILURE(load_on("host:cores=1,perf_map=0", &at));
  EXPECT_EQ(perf_map_lines("shape_fill").size(), lines);
  ::unsetenv("SK_PERF_MAP");
  std::remove(sk::host::perf_map_path().c_str());

  sk_device *dev = nullptr;
  EXPECT_EQ(sk_device_open("host:perf_map=2", &dev), SK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sk_last_error()).find("perf_map"), std::string::npos) << sk_last_error();
}

}  // namespace
