// CUDA backend without a GPU: the dlopen layer, device specs, and reading kernel binaries
// (relocatable cubins and LTO-IR) with every error path.
#include <gtest/gtest.h>
#include <sk.h>

#include <cstring>
#include <string>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/cuda_kernel.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/nvjitlink.hpp"
#include "cuda_test_support.hpp"
#include "elf/cubin.hpp"

using namespace sk::cuda;
using sk::cuda_test::kernel_bytes;

namespace {

std::shared_ptr<const CudaModule> load(const std::string &file) {
  std::vector<uint8_t> bytes = kernel_bytes(file);
  EXPECT_FALSE(bytes.empty()) << file;
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(load_cuda_module(bytes.data(), bytes.size(), file, &m), SK_OK) << sk::last_error();
  return m;
}

using sk::cuda_test::contains;

}  // namespace

TEST(CudaLibraries, MissingDriverLibraryIsNamed) {
  std::shared_ptr<const DriverApi> api;
  EXPECT_EQ(load_driver_api("libsk-test-no-such-driver.so.1", &api), SK_ERR_DEVICE);
  EXPECT_FALSE(api);
  EXPECT_TRUE(contains(sk::last_error(), "libsk-test-no-such-driver.so.1")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "CUDA driver")) << sk::last_error();
}

TEST(CudaLibraries, DriverWithoutSymbolsIsNamed) {
  // A real library that is not the driver: every cu* symbol is missing.
  std::shared_ptr<const DriverApi> api;
  EXPECT_EQ(load_driver_api("libm.so.6", &api), SK_ERR_DEVICE);
  EXPECT_TRUE(contains(sk::last_error(), "does not export cuInit")) << sk::last_error();
}

TEST(CudaLibraries, MissingNvJitLinkIsNamed) {
  std::shared_ptr<const NvJitLink> link;
  EXPECT_EQ(NvJitLink::load("libnvJitLink-sk-test-missing.so.13", &link), SK_ERR_DEVICE);
  EXPECT_TRUE(contains(sk::last_error(), "libnvJitLink-sk-test-missing.so.13")) << sk::last_error();
  EXPECT_EQ(NvJitLink::load("libm.so.6", &link), SK_ERR_DEVICE);
  EXPECT_TRUE(contains(sk::last_error(), "__nvJitLinkCreate_13_0")) << sk::last_error();
}

TEST(CudaLibraries, NvJitLinkLoadsWithItsVersionedSymbols) {
  std::shared_ptr<const NvJitLink> link;
  ASSERT_EQ(NvJitLink::get(&link), SK_OK) << sk::last_error();
  EXPECT_EQ(link->version().rfind("13.", 0), 0u) << link->version();
}

TEST(CudaDeviceOpen, FailsWithWhatIsMissingOrOpens) {
  sk_device *dev = reinterpret_cast<sk_device *>(0x1);
  sk_status st = sk_device_open("cuda:0", &dev);
  if (st == SK_OK) {
    sk_device_close(dev);
    GTEST_SKIP() << "a CUDA device is present: the no-GPU error path cannot be seen here";
  }
  EXPECT_EQ(st, SK_ERR_DEVICE);
  EXPECT_EQ(dev, reinterpret_cast<sk_device *>(0x1));  // out-parameter untouched
  const std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "libcuda.so.1") || contains(msg, "cuInit") || contains(msg, "no such device")) << msg;
  EXPECT_TRUE(contains(msg, "cuda:0")) << msg;
}

TEST(CudaDeviceOpen, BadSpecsNameTheKey) {
  CudaSpec spec;
  ASSERT_EQ(parse_cuda_spec("cuda", &spec), SK_OK);
  EXPECT_EQ(spec.ordinal, 0);
  ASSERT_EQ(parse_cuda_spec("cuda:3", &spec), SK_OK);
  EXPECT_EQ(spec.ordinal, 3);
  ASSERT_EQ(parse_cuda_spec("cuda:1,timeout_ms=250,arch=sm_80", &spec), SK_OK);
  EXPECT_EQ(spec.ordinal, 1);
  EXPECT_EQ(spec.timeout_ms, 250u);
  EXPECT_EQ(spec.arch, "sm_80");
  ASSERT_EQ(parse_cuda_spec("cuda:device=2", &spec), SK_OK);
  EXPECT_EQ(spec.ordinal, 2);
  EXPECT_EQ(parse_cuda_spec("cuda:0,cores=4", &spec), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk::last_error(), "'cores'")) << sk::last_error();
  EXPECT_EQ(parse_cuda_spec("cuda:arch=gfx90a", &spec), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk::last_error(), "gfx90a")) << sk::last_error();
  EXPECT_EQ(parse_cuda_spec("cuda:0x", &spec), SK_ERR_INVALID_ARGUMENT);
  sk_device *dev = nullptr;
  EXPECT_EQ(sk_device_open("cuda:0,bogus=1", &dev), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "bogus")) << sk_last_error();
}

TEST(CudaCubin, ReadsFunctionsAttributesAndMetadata) {
  std::vector<uint8_t> bytes = kernel_bytes("chain.cubin");
  ASSERT_TRUE(sk::elf::looks_like_cubin(bytes.data(), bytes.size()));
  sk::elf::Cubin c;
  ASSERT_EQ(sk::elf::parse_cubin(bytes.data(), bytes.size(), "chain.cubin", &c), SK_OK) << sk::last_error();
  EXPECT_EQ(c.type, 1u);  // ET_REL
  EXPECT_EQ(c.sm, 90u);
  const sk::elf::CubinFunction *step = c.find("chain_step");
  ASSERT_NE(step, nullptr);
  EXPECT_FALSE(step->entry);
  EXPECT_GT(step->registers, 0u);
  EXPECT_LE(step->registers, 255u);
  EXPECT_GT(step->code_bytes, 0u);
  EXPECT_NE(std::find(step->externs.begin(), step->externs.end(), "sk_block_idx"), step->externs.end());
  EXPECT_NE(std::find(c.undefined.begin(), c.undefined.end(), "sk_block_num"), c.undefined.end());
  ASSERT_EQ(c.metadata_records.size(), 3u);
  bool found = false;
  for (const std::string &r : c.metadata_records)
    found |= r == "sk1;kernel=chain_step;sig=ptr,u32,u32;type=vector;threads=128";
  EXPECT_TRUE(found);
}

TEST(CudaCubin, GlobalKernelsAreEntries) {
  std::vector<uint8_t> bytes = kernel_bytes("misc.cubin");
  sk::elf::Cubin c;
  ASSERT_EQ(sk::elf::parse_cubin(bytes.data(), bytes.size(), "misc.cubin", &c), SK_OK) << sk::last_error();
  const sk::elf::CubinFunction *g = c.find("a_global_kernel");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->entry);
  EXPECT_EQ(g->param_bytes, 8u);  // one pointer
}

// Cooperative groups' block, warp and cluster syncs leave the record a grid sync leaves
// (EIATTR_COOP_GROUP_INSTR_OFFSETS); only the grid's needs a cooperative launch, on every
// architecture's encoding, in a debug build, and when the sync is in a device function the
// kernel calls (nvlink keeps it apart).
TEST(CudaCubin, AGridSyncIsToldFromCooperativeGroupsOfTheBlock) {
  for (const char *file :
       {"cooperative_groups_sass.cubin", "cooperative_groups_debug.cubin", "cooperative_groups_sm80.cubin",
        "cooperative_groups_sm120.cubin", "cooperative_groups_linked.cubin", "grid_sync_sass.cubin"}) {
    SCOPED_TRACE(file);
    std::vector<uint8_t> bytes = kernel_bytes(file);
    sk::elf::Cubin c;
    ASSERT_EQ(sk::elf::parse_cubin(bytes.data(), bytes.size(), file, &c), SK_OK) << sk::last_error();
    size_t kernels = 0;
    for (const sk::elf::CubinFunction &f : c.functions) {
      if (!f.entry) continue;
      ++kernels;
      const bool grid = f.name == "cg_grid_sync_call" || f.name == "gs_normalize" || f.name == "gs_neighbour" ||
                        f.name == "gs_syncs";
      EXPECT_EQ(f.grid_sync, grid) << f.name;
    }
    EXPECT_GE(kernels, 3u);
  }
  // The linked cubin has the sync in a function of its own, which the kernel calls.
  std::vector<uint8_t> bytes = kernel_bytes("cooperative_groups_linked.cubin");
  sk::elf::Cubin c;
  ASSERT_EQ(sk::elf::parse_cubin(bytes.data(), bytes.size(), "linked", &c), SK_OK) << sk::last_error();
  const sk::elf::CubinFunction *callee = c.find("_Z12cg_sync_gridv");
  ASSERT_NE(callee, nullptr);
  EXPECT_FALSE(callee->entry);
  const sk::elf::CubinFunction *kernel = c.find("cg_grid_sync_call");
  ASSERT_NE(kernel, nullptr);
  EXPECT_NE(std::find(kernel->callees.begin(), kernel->callees.end(), callee->name), kernel->callees.end());
}

TEST(CudaCubin, MalformedBytesAreBadBinary) {
  std::vector<uint8_t> bytes = kernel_bytes("chain.cubin");
  sk::elf::Cubin c;
  // Truncated: the section header table is past the end.
  EXPECT_EQ(sk::elf::parse_cubin(bytes.data(), 200, "truncated.cubin", &c), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "truncated.cubin")) << sk::last_error();
  // A section offset pointing outside the image.
  std::vector<uint8_t> bad = bytes;
  uint64_t shoff;
  std::memcpy(&shoff, bad.data() + 0x28, 8);
  const uint64_t huge = 0xffffffffull;
  std::memcpy(bad.data() + shoff + 64 * 2 + 0x18, &huge, 8);  // section 2's sh_offset
  EXPECT_EQ(sk::elf::parse_cubin(bad.data(), bad.size(), "corrupt.cubin", &c), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "corrupt.cubin")) << sk::last_error();
  const char garbage[] = "definitely not a kernel binary";
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(load_cuda_module(garbage, sizeof garbage, "garbage.bin", &m), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "garbage.bin")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "nvcc -dc -cubin")) << sk::last_error();
}

TEST(CudaCubin, HostObjectsAreAnotherMachine) {
  // A host program is an x86-64 / AArch64 ELF: not EM_CUDA.
  std::vector<uint8_t> self = sk::cuda_test::read_file("/bin/true");
  ASSERT_GT(self.size(), 64u);
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(load_cuda_module(self.data(), self.size(), "host.o", &m), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "EM_CUDA")) << sk::last_error();
}

TEST(CudaModule, KernelsFromMetadata) {
  auto m = load("chain.cubin");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, InputKind::Cubin);
  std::shared_ptr<CudaKernel> k;
  ASSERT_EQ(make_cuda_kernel(m, "chain_axpy", nullptr, "test", &k), SK_OK) << sk::last_error();
  EXPECT_EQ(sk::signature_to_string(k->signature), "ptr,f32,ptr,u32");
  EXPECT_EQ(k->threads, 128u);
  EXPECT_GT(k->registers, 0u);
  EXPECT_TRUE(k->usage & sk::kUsesBlockIdx);
  EXPECT_TRUE(k->usage & sk::kUsesBlockNum);
  EXPECT_FALSE(k->usage & sk::kUsesSyncAll);
  auto s = load("sync.cubin");
  ASSERT_EQ(make_cuda_kernel(s, "sync_sum", nullptr, "test", &k), SK_OK) << sk::last_error();
  EXPECT_TRUE(k->usage & sk::kUsesSyncAll);
  auto o = load("overlap.cubin");
  ASSERT_EQ(make_cuda_kernel(o, "overlap_consume", nullptr, "test", &k), SK_OK) << sk::last_error();
  EXPECT_TRUE(k->usage & sk::kUsesWaitPreTaskEnd);
  ASSERT_EQ(make_cuda_kernel(o, "overlap_produce", nullptr, "test", &k), SK_OK) << sk::last_error();
  EXPECT_TRUE(k->usage & sk::kUsesSetNextTaskStart);
}

TEST(CudaModule, KernelErrorsNameTheCulprit) {
  auto m = load("misc.cubin");
  ASSERT_TRUE(m);
  std::shared_ptr<CudaKernel> k;
  EXPECT_EQ(make_cuda_kernel(m, "not_there", nullptr, "sk_module_get_kernel", &k), SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(sk::last_error(), "'not_there'")) << sk::last_error();
  EXPECT_EQ(make_cuda_kernel(m, "a_global_kernel", nullptr, "sk_module_get_kernel", &k), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "__global__")) << sk::last_error();
  // Barrier 15 is the super kernel's own (.nv.info counts 16 for the helper that names it).
  EXPECT_EQ(m->cubin.find("names_barrier_3")->barriers, 4u);
  EXPECT_EQ(make_cuda_kernel(m, "names_barrier_15", nullptr, "sk_module_get_kernel", &k), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "kernel 'names_barrier_15'")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "'_Z15misc_barrier_15v', which it calls, may name barrier 15"))
      << sk::last_error();
  EXPECT_EQ(make_cuda_kernel(m, "names_barrier_3", nullptr, "sk_module_get_kernel", &k), SK_OK) << sk::last_error();
  EXPECT_EQ(make_cuda_kernel(m, "no_metadata", nullptr, "sk_module_get_kernel", &k), SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(sk::last_error(), "sk_module_get_kernel_with_signature")) << sk::last_error();
  ASSERT_EQ(make_cuda_kernel(m, "no_metadata", "ptr,u32", "sk_module_get_kernel_with_signature", &k), SK_OK)
      << sk::last_error();
  EXPECT_EQ(k->threads, kDefaultThreads);
  EXPECT_EQ(make_cuda_kernel(m, "wide_block", "ptr,u64", "sk_module_get_kernel_with_signature", &k),
            SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "ptr,u32")) << sk::last_error();
  ASSERT_EQ(make_cuda_kernel(m, "wide_block", nullptr, "test", &k), SK_OK);
  EXPECT_EQ(k->threads, 256u);
}

TEST(CudaModule, LtoIrMetadataIsReadThroughNvJitLink) {
  auto m = load("lto.ltoir");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, InputKind::LtoIr);
  EXPECT_TRUE(m->metadata_note.empty()) << m->metadata_note;
  std::shared_ptr<CudaKernel> k;
  ASSERT_EQ(make_cuda_kernel(m, "lto_scale", nullptr, "sk_module_get_kernel", &k), SK_OK) << sk::last_error();
  EXPECT_EQ(sk::signature_to_string(k->signature), "ptr,u32,u32");
  EXPECT_EQ(k->threads, 128u);
  // Its calls are unknown before linking: assumed to synchronise, so never multiplexed.
  EXPECT_TRUE(k->usage & sk::kUsesSyncAll);
  EXPECT_EQ(make_cuda_kernel(m, "lto_scale", "ptr,u32,u64", "test", &k), SK_ERR_INCOMPATIBLE);
  EXPECT_EQ(make_cuda_kernel(m, "not_in_the_ir", nullptr, "sk_module_get_kernel", &k), SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(sk::last_error(), "sk_module_get_kernel_with_signature")) << sk::last_error();
}

TEST(CudaModule, PtxMetadataRecords) {
  const std::string ptx =
      ".visible .global .align 1 .b8 sk_kernel_meta_f[12] = {115, 107, 49, 59, 107, 101, 114, 110, 101, 108, 61, "
      "0};\n"
      ".visible .global .align 1 .b8 other[2] = {1, 0};\n";
  std::vector<std::string> r = ptx_metadata_records(ptx);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], "sk1;kernel=");
  EXPECT_TRUE(ptx_metadata_records(".b8 sk_kernel_meta_g[3] = {1, 2, 0};").empty());  // not a record
}

TEST(CudaModule, LinkedCubinsCannotBeFused) {
  // A linked (ET_EXEC) cubin: flip e_type of a relocatable one.
  std::vector<uint8_t> bytes = kernel_bytes("chain.cubin");
  const uint16_t exec = 2;
  std::memcpy(bytes.data() + 16, &exec, 2);
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(load_cuda_module(bytes.data(), bytes.size(), "linked.cubin", &m), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "nvcc -dc -cubin")) << sk::last_error();
}
