// What nvcc writes without -cubin, loaded as it was compiled (elf/fatbin.hpp): the host object
// of nvcc -dc (its __nv_relfatbin), fatbinaries of nvcc -dc -fatbin for two architectures and
// stored plain, zstd- and LZ4-compressed. Each gives the cubin of chain.cu that -dc -cubin gives
// (tests/kernels/cuda/CMakeLists.txt builds them all from one source with one set of options),
// and links; what does not fit the device, corrupt containers and linked code are refused by name.
#include <elf.h>
#include <gtest/gtest.h>
#include <sk.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "cuda/cuda_kernel.hpp"
#include "cuda/superkernel_build.hpp"
#include "cuda_link_support.hpp"
#include "cuda_test_support.hpp"
#include "elf/cubin.hpp"
#include "elf/fatbin.hpp"

using namespace sk::cuda;
using sk::cuda_test::contains;
using sk::cuda_test::kernel_bytes;

namespace {

[[maybe_unused]] const bool g_private_cache = *sk::cuda_test::private_cache_home() != 0;

// Every form of chain.cu that holds its relocatable cubin.
const char *const kForms[] = {"chain_host.o", "chain_multi.fatbin", "chain_plain.fatbin", "chain_lz4.fatbin"};

// The architecture the test kernels were built for ("sm_90"), from chain.cubin.
std::string test_arch() {
  const std::vector<uint8_t> bytes = kernel_bytes("chain.cubin");
  sk::elf::Cubin c;
  if (sk::elf::parse_cubin(bytes.data(), bytes.size(), "chain.cubin", &c) != SK_OK) return "sm_90";
  return "sm_" + std::to_string(c.sm);
}

std::shared_ptr<const CudaModule> load_as(const std::string &file, const std::vector<uint8_t> &bytes,
                                          sk_status expected = SK_OK, const std::string &arch = test_arch()) {
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(load_cuda_module(bytes.data(), bytes.size(), file, &m, arch), expected)
      << file << ": " << sk::last_error();
  return m;
}

// The fatbinary inside `bytes` (a host object: its first container's magic) starts here.
size_t fatbin_offset(const std::vector<uint8_t> &bytes) {
  const uint8_t magic[4] = {0x50, 0xed, 0x55, 0xba};
  for (size_t i = 0; i + 4 <= bytes.size(); i += 8)  // the section is 8-aligned
    if (std::memcmp(bytes.data() + i, magic, 4) == 0) return i;
  return 0;
}

// Its first container's bytes (a host object has more after it).
size_t fatbin_size(const std::vector<uint8_t> &bytes, size_t at) {
  uint64_t body = 0;
  std::memcpy(&body, bytes.data() + at + 8, 8);
  return 16 + body;
}

template <typename T>
void poke(std::vector<uint8_t> &bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

// Entry `index` of the fatbinary of `bytes` (ASSERTs are the caller's: an empty entry then).
sk::elf::FatbinEntry entry_of(const std::vector<uint8_t> &bytes, size_t index) {
  const size_t at = fatbin_offset(bytes);
  std::vector<sk::elf::FatbinEntry> entries;
  EXPECT_EQ(sk::elf::parse_fatbin(bytes.data() + at, fatbin_size(bytes, at), "test", &entries), SK_OK)
      << sk::last_error();
  if (index >= entries.size()) return {};
  sk::elf::FatbinEntry e = entries[index];
  e.offset += at;  // within `bytes`
  return e;
}

// Loads `bytes` as `file`: SK_ERR_BAD_BINARY whose message names the file and has `words`.
void expect_bad(const std::string &file, const std::vector<uint8_t> &bytes, std::vector<std::string> words) {
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(load_cuda_module(bytes.data(), bytes.size(), file, &m, test_arch()), SK_ERR_BAD_BINARY)
      << file << ": " << sk::last_error();
  words.push_back(file);
  for (const std::string &w : words) EXPECT_TRUE(contains(sk::last_error(), w)) << w << " in: " << sk::last_error();
}

}  // namespace

TEST(CudaFatbin, TheContainersHoldWhatNvccWasAskedFor) {
  const std::string arch = test_arch();
  const uint32_t sm = (uint32_t)std::stoul(arch.substr(3));
  struct Expect {
    const char *file;
    uint64_t compression;
  } forms[] = {{"chain_host.o", sk::elf::kFatbinZstd},
               {"chain_multi.fatbin", sk::elf::kFatbinZstd},
               {"chain_plain.fatbin", 0},
               {"chain_lz4.fatbin", sk::elf::kFatbinLz4}};
  for (const Expect &f : forms) {
    const std::vector<uint8_t> bytes = kernel_bytes(f.file);
    ASSERT_FALSE(bytes.empty()) << f.file;
    const size_t at = fatbin_offset(bytes);
    EXPECT_EQ(sk::elf::looks_like_fatbin(bytes.data(), bytes.size()), at == 0) << f.file;
    std::vector<sk::elf::FatbinEntry> entries;
    ASSERT_EQ(sk::elf::parse_fatbin(bytes.data() + at, fatbin_size(bytes, at), f.file, &entries), SK_OK)
        << sk::last_error();
    const bool multi = std::string(f.file) == "chain_multi.fatbin";
    ASSERT_EQ(entries.size(), multi ? 3u : 2u) << f.file;  // [SASS for another arch,] SASS, PTX
    const sk::elf::FatbinEntry &sass = entries[multi ? 1 : 0], &ptx = entries.back();
    EXPECT_EQ(sass.kind, sk::elf::kFatbinElf);
    EXPECT_EQ(sass.arch, sm);
    EXPECT_EQ(sass.describe(), arch + " cubin");
    EXPECT_EQ(sass.flags & sk::elf::kFatbinCompressionMask, f.compression) << f.file;
    EXPECT_EQ(ptx.kind, sk::elf::kFatbinPtx);
    EXPECT_EQ(ptx.describe(), "compute_" + arch.substr(3) + " PTX");
    if (multi) {
      EXPECT_EQ(entries[0].kind, sk::elf::kFatbinElf);
      EXPECT_NE(entries[0].arch, sm);
    }
  }
}

// The cubin inside is chain.cubin byte for byte (nvcc made both from one source with one set
// of options), so everything libsk reads of it is the same: functions, registers, metadata,
// the kernels' signatures, usage and shared memory.
TEST(CudaFatbin, EachFormLoadsAsTheCubinItHolds) {
  const std::vector<uint8_t> cubin = kernel_bytes("chain.cubin");
  auto direct = load_as("chain.cubin", cubin);
  ASSERT_TRUE(direct);
  for (const char *file : kForms) {
    SCOPED_TRACE(file);
    auto m = load_as(file, kernel_bytes(file));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, InputKind::Cubin);
    EXPECT_EQ(m->label, std::string(file) + " (" + test_arch() + " cubin)");
    EXPECT_TRUE(m->bytes == cubin) << m->bytes.size() << " bytes extracted, chain.cubin has " << cubin.size();
    EXPECT_EQ(m->given, kernel_bytes(file));
    EXPECT_EQ(m->cubin.type, 1u);  // ET_REL
    EXPECT_EQ(m->cubin.sm, direct->cubin.sm);
    ASSERT_EQ(m->cubin.functions.size(), direct->cubin.functions.size());
    for (size_t i = 0; i < m->cubin.functions.size(); ++i) {
      EXPECT_EQ(m->cubin.functions[i].name, direct->cubin.functions[i].name);
      EXPECT_EQ(m->cubin.functions[i].registers, direct->cubin.functions[i].registers);
      EXPECT_EQ(m->cubin.functions[i].externs, direct->cubin.functions[i].externs);
    }
    EXPECT_EQ(m->cubin.metadata_records, direct->cubin.metadata_records);
    ASSERT_EQ(m->metadata.size(), direct->metadata.size());
    EXPECT_EQ(m->threads, direct->threads);
    for (const char *name : {"chain_step", "chain_axpy"}) {
      std::shared_ptr<CudaKernel> a, b;
      ASSERT_EQ(make_cuda_kernel(m, name, nullptr, "test", &a), SK_OK) << sk::last_error();
      ASSERT_EQ(make_cuda_kernel(direct, name, nullptr, "test", &b), SK_OK) << sk::last_error();
      EXPECT_EQ(sk::signature_to_string(a->signature), sk::signature_to_string(b->signature));
      EXPECT_EQ(a->threads, b->threads);
      EXPECT_EQ(a->usage, b->usage);
      EXPECT_GT(a->registers, 0u);
      EXPECT_EQ(a->registers, b->registers);
      EXPECT_EQ(a->static_shared, b->static_shared);
    }
  }
}

TEST(CudaFatbin, ASuperKernelOfEachFormLinks) {
  const std::string arch = test_arch();
  for (const char *file : kForms) {
    SCOPED_TRACE(file);
    auto m = load_as(file, kernel_bytes(file));
    ASSERT_TRUE(m);
    sk::cuda_test::Scope s;
    s.add(sk::cuda_test::kernel(m, "chain_step"), 8);
    s.add(sk::cuda_test::kernel(m, "chain_axpy"), 8);
    s.add(sk::cuda_test::kernel(m, "chain_step"), 4);
    ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
    BuiltImage img;
    ASSERT_EQ(build_superkernel(s.request(arch), &img), SK_OK) << sk::last_error();
    EXPECT_EQ(img.info.type, 2u);  // ET_EXEC: linked
    EXPECT_NE(img.info.find("sk_superkernel_entry"), nullptr);
    EXPECT_NE(img.info.find("chain_step"), nullptr);
    EXPECT_NE(img.info.find("chain_axpy"), nullptr);
  }
}

// The module cache compares the bytes given: the same host object twice is one module (its
// kernels link once), and it is not chain.cubin's module although it holds the same cubin.
TEST(CudaFatbin, TheCacheKnowsAModuleByTheBytesGiven) {
  CudaModuleCache cache;
  const std::vector<uint8_t> host = kernel_bytes("chain_host.o"), cubin = kernel_bytes("chain.cubin");
  std::shared_ptr<const CudaModule> a, b, c;
  ASSERT_EQ(cache.load(host.data(), host.size(), "a.o", test_arch(), &a), SK_OK) << sk::last_error();
  ASSERT_EQ(cache.load(host.data(), host.size(), "b.o", test_arch(), &b), SK_OK) << sk::last_error();
  ASSERT_EQ(cache.load(cubin.data(), cubin.size(), "chain.cubin", test_arch(), &c), SK_OK) << sk::last_error();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(CudaFatbin, WithoutTheDevicesArchitectureItSaysWhatItHolds) {
  // A device older than every entry: neither its SASS nor PTX it can run.
  const std::string arch = test_arch(), older = "sm_75";
  load_as("chain_multi.fatbin", kernel_bytes("chain_multi.fatbin"), SK_ERR_INCOMPATIBLE, older);
  const std::string msg = sk::last_error();
  for (const std::string &w :
       std::vector<std::string>{"chain_multi.fatbin", ", " + arch + " and PTX for compute_" + arch.substr(3),
                                "SASS for sm_", "the device is " + older, "-arch=" + older, "runs neither"})
    EXPECT_TRUE(contains(msg, w)) << w << " in: " << msg;
  load_as("chain_host.o", kernel_bytes("chain_host.o"), SK_ERR_INCOMPATIBLE, older);
  EXPECT_TRUE(contains(sk::last_error(), "__nv_relfatbin")) << sk::last_error();
  // A newer device without its SASS runs the newest PTX there: compute_90's, as the driver's
  // JIT would.
  const std::string newer = arch == "sm_120" ? "sm_121" : "sm_120";
  std::shared_ptr<const CudaModule> m;
  const std::vector<uint8_t> multi = kernel_bytes("chain_multi.fatbin");
  ASSERT_EQ(sk::cuda::load_cuda_module(multi.data(), multi.size(), "chain_multi.fatbin", &m, newer), SK_OK)
      << sk::last_error();
  EXPECT_EQ(m->kind, sk::cuda::InputKind::Ptx);
  EXPECT_TRUE(contains(m->label, "(compute_" + arch.substr(3) + " PTX)")) << m->label;
}

TEST(CudaFatbin, CorruptContainersAreBadBinaryNamingTheField) {
  const std::vector<uint8_t> zstd = kernel_bytes("chain_host.o"), lz4 = kernel_bytes("chain_lz4.fatbin"),
                             plain = kernel_bytes("chain_plain.fatbin");
  const sk::elf::FatbinEntry z = entry_of(zstd, 0), l = entry_of(lz4, 0), p = entry_of(plain, 0);
  ASSERT_EQ(z.kind, sk::elf::kFatbinElf);
  ASSERT_EQ(l.kind, sk::elf::kFatbinElf);
  ASSERT_EQ(p.kind, sk::elf::kFatbinElf);
  const size_t flags = 0x28, compressed = 0x10, uncompressed = 0x38;
  {  // A bad magic inside the host object's section.
    std::vector<uint8_t> b = zstd;
    b[fatbin_offset(b)] ^= 0xff;
    expect_bad("magic.o", b, {"magic", "__nv_relfatbin"});
  }
  {  // An unknown compression flag, and each codec's flag on the other's data.
    std::vector<uint8_t> b = zstd;
    poke<uint64_t>(b, z.offset + flags, (z.flags & ~sk::elf::kFatbinCompressionMask) | 0x4000);
    expect_bad("unknown.o", b, {"fatbinary entry 0", "flags", "unknown compression 0x4000"});
    poke<uint64_t>(b, z.offset + flags, (z.flags & ~sk::elf::kFatbinCompressionMask) | sk::elf::kFatbinLz4);
    expect_bad("zstd_as_lz4.o", b, {"fatbinary entry 0", "LZ4"});
    std::vector<uint8_t> c = lz4;
    poke<uint64_t>(c, l.offset + flags, (l.flags & ~sk::elf::kFatbinCompressionMask) | sk::elf::kFatbinZstd);
    expect_bad("lz4_as_zstd.fatbin", c, {"fatbinary entry 0", "zstd"});
    std::vector<uint8_t> d = plain;  // compressed flag on plain bytes
    poke<uint64_t>(d, p.offset + flags, p.flags | sk::elf::kFatbinZstd);
    expect_bad("plain_as_zstd.fatbin", d, {"fatbinary entry 0", "compressed size"});
  }
  {  // The payload cut: the file ends inside it.
    std::vector<uint8_t> b(lz4.begin(), lz4.begin() + (long)(l.offset + 64 + 100));
    expect_bad("cut.fatbin", b, {"entries size", "runs past the end"});
    // The container's size agrees with the cut, the entry's payload size does not.
    poke<uint64_t>(b, 8, b.size() - 16);
    expect_bad("cut.fatbin", b, {"fatbinary entry 0", "payload size", "runs past the end"});
    // The compressed size shorter than the compressed data.
    std::vector<uint8_t> c = zstd;
    poke<uint32_t>(c, z.offset + compressed, z.compressed_size / 2);
    expect_bad("short.o", c, {"fatbinary entry 0", "zstd"});
    std::vector<uint8_t> d = lz4;
    poke<uint32_t>(d, l.offset + compressed, l.compressed_size / 2);
    expect_bad("short.fatbin", d, {"fatbinary entry 0", "LZ4"});
    poke<uint32_t>(d, l.offset + compressed, (uint32_t)l.payload_size + 1);
    expect_bad("long.fatbin", d, {"fatbinary entry 0", "compressed size"});
  }
  {  // Lies about the uncompressed size: a little, and past what may be allocated.
    std::vector<uint8_t> b = zstd;
    poke<uint64_t>(b, z.offset + uncompressed, z.uncompressed_size + 8);
    expect_bad("more.o", b, {"fatbinary entry 0", "uncompressed size", "zstd frame"});
    poke<uint64_t>(b, z.offset + uncompressed, uint64_t{1} << 40);
    expect_bad("huge.o", b, {"fatbinary entry 0", "uncompressed size", "1 GiB"});
    std::vector<uint8_t> c = lz4;
    poke<uint64_t>(c, l.offset + uncompressed, l.uncompressed_size + 8);
    expect_bad("more.fatbin", c,
               {"fatbinary entry 0", "decompresses to " + std::to_string(l.uncompressed_size),
                "uncompressed size " + std::to_string(l.uncompressed_size + 8)});
    poke<uint64_t>(c, l.offset + uncompressed, l.uncompressed_size - 8);
    expect_bad("less.fatbin", c, {"fatbinary entry 0", "LZ4", "uncompressed size"});
    poke<uint64_t>(c, l.offset + uncompressed, (uint64_t)l.compressed_size * 1000);
    expect_bad("ratio.fatbin", c, {"fatbinary entry 0", "uncompressed size", "cannot come from"});
  }
  {  // An entry header size past its container; a container version libsk does not know.
    std::vector<uint8_t> b = plain;
    poke<uint32_t>(b, p.offset + 4, 1u << 30);
    expect_bad("header.fatbin", b, {"fatbinary entry 0", "header size"});
    std::vector<uint8_t> c = plain;
    poke<uint16_t>(c, 4, 2);
    expect_bad("version.fatbin", c, {"version 2"});
  }
}

// Truncations and flipped header bytes never crash and never load something else.
TEST(CudaFatbin, DamagedContainersFailCleanly) {
  for (const char *file : {"chain_multi.fatbin", "chain_lz4.fatbin", "chain_plain.fatbin"}) {
    const std::vector<uint8_t> bytes = kernel_bytes(file);
    std::shared_ptr<const CudaModule> m;
    for (size_t cut = 0; cut < bytes.size(); cut += 8) {
      const sk_status st = load_cuda_module(bytes.data(), cut, file, &m, test_arch());
      EXPECT_NE(st, SK_OK) << file << " cut at " << cut;
    }
    const size_t second = (size_t)entry_of(bytes, 1).offset;
    for (size_t at : {size_t{16}, second})
      for (size_t i = at; i < at + 64; ++i)
        for (uint8_t x : {0x01, 0x80, 0xff}) {
          std::vector<uint8_t> b = bytes;
          b[i] ^= x;
          (void)load_cuda_module(b.data(), b.size(), file, &m, test_arch());  // any status, no crash
        }
  }
}

// A shared library's section table and .nv_fatbin, damaged: each is refused naming the file
// (a table or section past the end, a container that does not read), or reads; never a crash.
TEST(CudaFatbin, ADamagedSharedLibraryFailsCleanly) {
  const std::vector<uint8_t> bytes = kernel_bytes("libdecode_two.so");
  std::shared_ptr<const CudaModule> m;
  ASSERT_EQ(load_cuda_module(bytes.data(), bytes.size(), "lib.so", &m, test_arch()), SK_OK) << sk::last_error();
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  // The section header fields, and every byte of the table's first entries and of the
  // .nv_fatbin section's header.
  auto damaged = [&](size_t at, uint8_t x) {
    std::vector<uint8_t> b = bytes;
    b[at] ^= x;
    const sk_status st = load_cuda_module(b.data(), b.size(), "lib.so", &m, test_arch());
    if (st != SK_OK) EXPECT_TRUE(contains(sk::last_error(), "lib.so")) << at << ": " << sk::last_error();
    return st;
  };
  for (size_t at :
       {offsetof(Elf64_Ehdr, e_shoff), offsetof(Elf64_Ehdr, e_shoff) + 7, offsetof(Elf64_Ehdr, e_shentsize),
        offsetof(Elf64_Ehdr, e_shnum) + 1, offsetof(Elf64_Ehdr, e_shstrndx)})
    EXPECT_NE(damaged(at, 0x40), SK_OK) << at;
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    const size_t header = eh.e_shoff + size_t{i} * sizeof(Elf64_Shdr);
    for (size_t f :
         {offsetof(Elf64_Shdr, sh_name), offsetof(Elf64_Shdr, sh_offset) + 5, offsetof(Elf64_Shdr, sh_size) + 5})
      (void)damaged(header + f, 0x80);  // any status, no crash
  }
  for (size_t cut : {size_t{100}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_NE(load_cuda_module(bytes.data(), cut, "lib.so", &m, test_arch()), SK_OK) << cut;
}

// nvcc -c: the fatbinary's cubin is linked, which cannot be fused. The PTX beside it can
// (cuda/ptx_module.hpp), but whole-program PTX keeps only __global__ kernels: chain.cu has
// none, so the refusal gives the -rdc advice (CudaFakeDriver's PTX tests load decode_global's).
TEST(CudaFatbin, ALinkedCubinInsideIsRefusedWithTheRdcAdvice) {
  load_as("chain_whole.o", kernel_bytes("chain_whole.o"), SK_ERR_UNSUPPORTED);
  const std::string msg = sk::last_error();
  for (const char *w : {"chain_whole.o", "linked cubin", "nvcc -dc", "-rdc=true"})
    EXPECT_TRUE(contains(msg, w)) << w << " in: " << msg;
}

TEST(CudaFatbin, AHostObjectWithoutAFatbinaryIsAnotherMachine) {
  // chain_host.o with its fatbinary section renamed.
  std::vector<uint8_t> bytes = kernel_bytes("chain_host.o");
  const std::string name = "__nv_relfatbin";
  int renamed = 0;
  for (auto it = std::search(bytes.begin(), bytes.end(), name.begin(), name.end()); it != bytes.end();
       it = std::search(it + 1, bytes.end(), name.begin(), name.end()), ++renamed)
    *(it + 2) = 'X';
  ASSERT_GT(renamed, 0);
  load_as("renamed.o", bytes, SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "renamed.o")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "without a fatbinary")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "EM_CUDA")) << sk::last_error();
}

// libsk's own sub-kernels (extern "C" __device__, SK_KERNEL_CUDA) as PTX: a fatbinary of nvcc
// -dc holds it beside its SASS; without that SASS (its entries made another kind here) the
// device fuses from the PTX, with the metadata's signature and threads, as from the cubin.
TEST(CudaFatbin, DeviceSubKernelsFuseFromItsPtx) {
  std::vector<uint8_t> multi = kernel_bytes("chain_multi.fatbin");
  for (size_t i = 0; i < 3; ++i)
    if (const sk::elf::FatbinEntry e = entry_of(multi, i); e.kind == sk::elf::kFatbinElf)
      poke<uint16_t>(multi, e.offset, 7);  // a kind libsk does not read
  auto m = load_as("chain_multi.fatbin", multi);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->kind, sk::cuda::InputKind::Ptx);
  std::shared_ptr<sk::cuda::CudaKernel> step;
  ASSERT_EQ(make_cuda_kernel(m, "chain_step", nullptr, "test", &step), SK_OK) << sk::last_error();
  EXPECT_EQ(sk::signature_to_string(step->signature), "ptr,u32,u32");
  EXPECT_EQ(step->threads, 128u);
  EXPECT_EQ(step->threads_from, "metadata");
  ASSERT_TRUE(step->ptx);
  EXPECT_FALSE(step->ptx->entry);
  EXPECT_TRUE(step->ptx->rewrites.empty()) << "a function is linked as it was written";
  sk::cuda_test::Scope s;
  s.add(step, 4);
  s.add(step, 4);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  sk::cuda::BuiltImage img;
  EXPECT_EQ(build_superkernel(s.request(test_arch()), &img), SK_OK) << sk::last_error();
}
