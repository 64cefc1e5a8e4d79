// Several CUDA objects as one module (cuda/module_set.hpp): nvcc -dc objects whose kernel calls
// a function and reads a variable of another file (tests/kernels/cuda/cross_*.cu), given as
// objects and as the static library nvcc -lib makes of them. Each kernel is taken from its
// object and linked with the objects it needs, and no others; the program ptxas compiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "cuda/module_set.hpp"
#include "cuda_link_support.hpp"

using sk::cuda::BuiltImage;
using sk::cuda::CudaKernel;
using sk::cuda::CudaModule;
using sk::cuda_test::contains;
using sk::cuda_test::count;
using sk::cuda_test::kernel_bytes;
using sk::cuda_test::Scope;

namespace {

// cross_offset.cuh's template kernel, as cross_b.cu and cross_c.cu instantiate it.
constexpr const char *kOffset = "_Z12cross_offsetIfEvPT_S0_i";

// The files, read and kept for the images that point into them.
struct Files {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<sk::backend::ModuleImage> images;
  explicit Files(std::initializer_list<const char *> names) {
    for (const char *n : names) bytes.push_back(kernel_bytes(n));
    for (size_t i = 0; i < bytes.size(); ++i) images.push_back({names.begin()[i], bytes[i].data(), bytes[i].size()});
  }
};

sk_status load_set(sk::cuda::CudaModuleCache &cache, const Files &files, std::shared_ptr<const CudaModule> *out) {
  return sk::cuda::load_module_set(files.images, "sm_90", cache, "test", out);
}

std::shared_ptr<CudaKernel> take(const std::shared_ptr<const CudaModule> &m, const char *name,
                                 uint32_t threads = 0) {
  std::shared_ptr<CudaKernel> k;
  EXPECT_EQ(sk::cuda::make_cuda_kernel(m, name, sk::backend::KernelRequest{nullptr, threads}, "test", &k), SK_OK)
      << sk::last_error();
  return k;
}

std::vector<std::string> labels(const std::vector<std::shared_ptr<const CudaModule>> &modules) {
  std::vector<std::string> out;
  for (const auto &m : modules) out.push_back(m->label);
  return out;
}

// The program of `kernels` (each on 4 blocks), which ptxas compiles whole ("" on failure).
std::string program(std::initializer_list<std::shared_ptr<CudaKernel>> kernels) {
  Scope s;
  for (const auto &k : kernels) s.add(k, 4);
  EXPECT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  EXPECT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_FALSE(img.program_ptx.empty()) << img.why_linked;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(img.program_ptx, "sm_90", &log, true), 0) << log;
  return img.program_ptx;
}

}  // namespace

// Three nvcc -dc objects: cross_apply (cross_a.o) needs cross_b.o's function and variable, and
// is linked with it, before it; cross_scale and cross_square need nothing. One program holds
// each definition once and no kernel nobody took.
TEST(CudaModuleSet, ObjectsOfSeparableCompilationLinkWhatTheirKernelsUse) {
  sk::cuda::CudaModuleCache cache;
  Files files{"cross_a.o", "cross_b.o", "cross_c.o", "cross_a.o"};
  std::shared_ptr<const CudaModule> m;
  ASSERT_EQ(load_set(cache, files, &m), SK_OK) << sk::last_error();
  ASSERT_TRUE(m->set);
  EXPECT_EQ(m->set->objects.size(), 3u) << "the same bytes twice are one object";
  EXPECT_EQ(m->label, "cross_a.o + cross_b.o + cross_c.o + ... (4 files)");
  std::vector<std::string> declared;
  for (const auto &k : m->declared_kernels()) declared.push_back(k.name);
  EXPECT_EQ(declared,
            (std::vector<std::string>{"cross_apply", "cross_normalize", "cross_scale", kOffset, "cross_square"}));

  const auto apply = take(m, "cross_apply"), scale = take(m, "cross_scale"), square = take(m, "cross_square");
  ASSERT_TRUE(apply && scale && square);
  EXPECT_EQ(apply->module, m->set->objects[0]);
  EXPECT_EQ(apply->threads, 128u) << apply->threads_from;
  EXPECT_EQ(labels(apply->links), (std::vector<std::string>{"cross_b.o (compute_90 PTX)"}));
  EXPECT_TRUE(scale->links.empty() && square->links.empty());
  // The objects are the modules each file loads as alone: kernels of both loads link one copy.
  const std::vector<uint8_t> b = kernel_bytes("cross_b.o");
  std::shared_ptr<const CudaModule> alone;
  ASSERT_EQ(cache.load(b.data(), b.size(), "cross_b.o", "sm_90", &alone), SK_OK) << sk::last_error();
  EXPECT_EQ(alone, m->set->objects[1]);

  const std::string both = program({apply, scale});
  EXPECT_EQ(count(both, ".visible .func (.param .b32 func_retval0) _Z16cross_activationf("), 1u) << both;
  EXPECT_EQ(count(both, ".visible .global .align 4 .b8 cross_bias[16] = {"), 1u) << both;
  EXPECT_EQ(count(both, ".extern .global .align 4 .b8 cross_bias"), 0u) << both;
  // Alone, cross_apply still has what it uses; cross_c.o is in no program it is not needed in.
  const std::string one = program({apply});
  EXPECT_TRUE(contains(one, "_Z16cross_activationf(")) << one;
  EXPECT_FALSE(contains(one, "cross_square")) << one;
  EXPECT_FALSE(contains(one, "cross_scale")) << one << "an entry nobody took is cut";
  EXPECT_FALSE(contains(program({square}), "cross_activation"));
  // cross_normalize's call reaches cross_b.o's shared array: the two lie apart in the overlay
  // (4 + 512 bytes), which cross_square's program does not have.
  const auto normalize = take(m, "cross_normalize");
  ASSERT_TRUE(normalize);
  EXPECT_EQ(labels(normalize->links), (std::vector<std::string>{"cross_b.o (compute_90 PTX)"}));
  EXPECT_TRUE(contains(program({normalize, square}), "__sk_shared_overlay[516]"));
  // The header's template kernel, weak in cross_b.o and cross_c.o: taken from the first, and
  // linked beside the second's kernel, one definition compiles.
  const auto offset = take(m, kOffset);
  ASSERT_TRUE(offset);
  EXPECT_EQ(offset->module, m->set->objects[1]);
  EXPECT_TRUE(contains(program({offset, square}), std::string(".weak .func ") + kOffset + "("));

  std::shared_ptr<CudaKernel> none;
  EXPECT_EQ(sk::cuda::make_cuda_kernel(m, "cross_missing", sk::backend::KernelRequest{}, "test", &none),
            SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(sk::last_error(),
                       "no object of cross_a.o + cross_b.o + cross_c.o + ... (4 files) defines a "
                       "kernel 'cross_missing' (its kernels: cross_apply, cross_normalize, cross_scale, "))
      << sk::last_error();
}

// The static library of the same objects (nvcc -lib), with a member of host code: each kernel
// from its member, linked with the members it needs.
TEST(CudaModuleSet, AStaticLibrarysMembersComeInByNeed) {
  sk::cuda::CudaModuleCache cache;
  Files files{"libcross.a"};
  ASSERT_TRUE(sk::cuda::is_module_set(files.images));
  std::shared_ptr<const CudaModule> m;
  ASSERT_EQ(load_set(cache, files, &m), SK_OK) << sk::last_error();
  EXPECT_EQ(labels(m->set->objects), (std::vector<std::string>{"libcross.a(cross_a.o) (compute_90 PTX)",
                                                               "libcross.a(cross_b.o) (compute_90 PTX)",
                                                               "libcross.a(cross_c.o) (compute_90 PTX)"}))
      << "cross_host.o is host code";
  const auto apply = take(m, "cross_apply"), square = take(m, "cross_square");
  ASSERT_TRUE(apply && square);
  EXPECT_EQ(labels(apply->links), (std::vector<std::string>{"libcross.a(cross_b.o) (compute_90 PTX)"}));
  EXPECT_TRUE(square->links.empty());
  program({apply, square});
}

// A shared library compiled -rdc (nvcc -shared -rdc=true): its units' PTX, where the device link
// read it (__nv_relfatbin; its .nv_fatbin is that link's SASS), every unit read at load, each
// kernel linked with the units it needs.
TEST(CudaModuleSet, ASharedLibraryOfSeparableCompilationLinksItsUnitsByNeed) {
  const auto m = sk::cuda_test::load("libcross_rdc.so");
  ASSERT_TRUE(m && m->set);
  EXPECT_TRUE(m->library);
  ASSERT_EQ(m->set->objects.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(m->ptx_unit_if_read(i), m->set->objects[i]);
  std::vector<std::string> declared;
  for (const auto &k : m->declared_kernels()) declared.push_back(k.name);
  EXPECT_EQ(declared,
            (std::vector<std::string>{"cross_apply", "cross_normalize", "cross_scale", kOffset, "cross_square"}));
  const auto apply = take(m, "cross_apply"), square = take(m, "cross_square");
  ASSERT_TRUE(apply && square);
  EXPECT_EQ(labels(apply->links), (std::vector<std::string>{m->set->objects[1]->label}));
  EXPECT_TRUE(contains(m->set->objects[1]->label, "libcross_rdc.so (compute_90 PTX, translation unit "))
      << m->set->objects[1]->label;
  EXPECT_TRUE(square->links.empty());
  const std::string both = program({apply, square});
  EXPECT_TRUE(contains(both, "_Z16cross_activationf(")) << both;
}

// A unit of such a library whose PTX the reader refuses (here a target past every GPU) is left
// out: its kernels are refused with the reader's reason, the others taken as before.
TEST(CudaModuleSet, AnUnreadableUnitOfASharedLibraryRefusesItsKernelsAlone) {
  std::vector<uint8_t> bytes = kernel_bytes("libcross_rdc.so");
  const std::string entry = ".entry cross_square(", target = ".target sm_90";
  const auto square = std::search(bytes.begin(), bytes.end(), entry.begin(), entry.end());
  ASSERT_NE(square, bytes.end()) << "the PTX is stored plain (--compress-mode=none)";
  const auto rbegin = std::make_reverse_iterator(square);
  const auto at = std::search(rbegin, bytes.rend(), target.rbegin(), target.rend());
  ASSERT_NE(at, bytes.rend());
  std::copy_n(".target sm_99", target.size(), at.base() - target.size());
  std::shared_ptr<const CudaModule> m;
  ASSERT_EQ(sk::cuda::load_cuda_module(bytes.data(), bytes.size(), "patched.so", &m, "sm_90"), SK_OK)
      << sk::last_error();
  ASSERT_TRUE(m->set);
  EXPECT_EQ(m->set->objects.size(), 2u);
  std::shared_ptr<CudaKernel> k;
  EXPECT_EQ(sk::cuda::make_cuda_kernel(m, "cross_square", sk::backend::KernelRequest{}, "test", &k),
            SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "test: kernel 'cross_square': its translation unit's PTX cannot be read: "))
      << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "sm_99")) << sk::last_error();
  const auto apply = take(m, "cross_apply");
  ASSERT_TRUE(apply);
  EXPECT_EQ(apply->links.size(), 1u);
}

// A chain of needs through three PTX files, and back: a.ptx's kernel calls b's function, which
// calls c's, which calls one of a's. Each object's links come before it, the nearest need last;
// the kernel's program holds all three, and compiles whole.
TEST(CudaModuleSet, NeedsAreFollowedThroughAChainAndACycle) {
  auto ptx = [](const std::string &body) { return ".version 8.0\n.target sm_90\n.address_size 64\n" + body; };
  const std::string call = "{\n.param .b32 cp;\n.param .b32 cr;\nst.param.b32 [cp], %r1;\ncall.uni (cr), ";
  const std::string a =
                        ptx(".extern .func (.param .b32 r) chain_b(.param .b32 x);\n"
                            ".visible .func (.param .b32 r) chain_a_back(.param .b32 x)\n{\n.reg .b32 %r<2>;\n"
                            "ld.param.b32 %r1, [x];\nst.param.b32 [r], %r1;\nret;\n}\n"
                            ".visible .entry chain_kernel(.param .u64 out)\n.reqntid 32\n{\n.reg .b32 %r<3>;\n"
                            ".reg .b64 %rd<2>;\nmov.u32 %r1, %tid.x;\n" +
                            call +
                            "chain_b, (cp);\nld.param.b32 %r2, [cr];\n}\nld.param.u64 %rd1, [out];\n"
                            "st.global.u32 [%rd1], %r2;\nret;\n}\n"),
                    b =
                        ptx(".extern .func (.param .b32 r) chain_c(.param .b32 x);\n"
                            ".visible .func (.param .b32 r) chain_b(.param .b32 x)\n{\n.reg .b32 %r<3>;\n"
                            "ld.param.b32 %r1, [x];\n" +
                            call + "chain_c, (cp);\nld.param.b32 %r2, [cr];\n}\nst.param.b32 [r], %r2;\nret;\n}\n"),
                    c = ptx(
                        ".extern .func (.param .b32 r) chain_a_back(.param .b32 x);\n"
                        ".visible .func (.param .b32 r) chain_c(.param .b32 x)\n{\n.reg .b32 %r<3>;\n"
                        "ld.param.b32 %r1, [x];\n" +
                        call + "chain_a_back, (cp);\nld.param.b32 %r2, [cr];\n}\nst.param.b32 [r], %r2;\nret;\n}\n");
  const std::vector<sk::backend::ModuleImage> images{
      {"a.ptx", a.data(), a.size()}, {"b.ptx", b.data(), b.size()}, {"c.ptx", c.data(), c.size()}};
  sk::cuda::CudaModuleCache cache;
  std::shared_ptr<const CudaModule> m;
  ASSERT_EQ(sk::cuda::load_module_set(images, "sm_90", cache, "test", &m), SK_OK) << sk::last_error();
  EXPECT_EQ(m->set->links[0], (std::vector<size_t>{2, 1}));
  EXPECT_EQ(m->set->links[1], (std::vector<size_t>{0, 2}));
  EXPECT_EQ(m->set->links[2], (std::vector<size_t>{1, 0}));
  const auto k = take(m, "chain_kernel");
  ASSERT_TRUE(k);
  EXPECT_EQ(labels(k->links), (std::vector<std::string>{"c.ptx", "b.ptx"}));
  const std::string one = program({k});
  for (const char *f : {"chain_a_back(", "chain_b(", "chain_c("}) EXPECT_TRUE(contains(one, f)) << f << one;
}

// Static __shared__ variables of objects one kernel's calls reach share the overlay: a.ptx's
// kernel calls b.ptx's function, each with its tile (1 + 2 KiB), laid out apart as one call
// tree, which c.ptx's 4 KiB tile, a kernel of its own, lies over. Before, a call into another
// module kept every variable of the link in place (7 KiB).
TEST(CudaModuleSet, ACallIntoAnotherObjectIsFollowedByTheSharedOverlay) {
  auto ptx = [](const std::string &body) { return ".version 8.0\n.target sm_90\n.address_size 64\n" + body; };
  const std::string a =
                        ptx(".extern .func (.param .b32 r) tile_b_sum(.param .b32 x);\n"
                            ".shared .align 4 .b8 tile_a[1024];\n"
                            ".visible .entry tile_ka(.param .u64 out)\n.reqntid 32\n{\n.reg .b32 %r<4>;\n"
                            ".reg .b64 %rd<2>;\nmov.u32 %r1, %tid.x;\nst.shared.u32 [tile_a], %r1;\n"
                            "{\n.param .b32 cp;\n.param .b32 cr;\nst.param.b32 [cp], %r1;\n"
                            "call.uni (cr), tile_b_sum, (cp);\nld.param.b32 %r2, [cr];\n}\n"
                            "ld.shared.u32 %r3, [tile_a+4];\nadd.u32 %r3, %r3, %r2;\nld.param.u64 %rd1, [out];\n"
                            "st.global.u32 [%rd1], %r3;\nret;\n}\n"),
                    b =
                        ptx(".shared .align 4 .b8 tile_b[2048];\n"
                            ".visible .func (.param .b32 r) tile_b_sum(.param .b32 x)\n{\n.reg .b32 %r<3>;\n"
                            "ld.param.b32 %r1, [x];\nst.shared.u32 [tile_b+4], %r1;\nld.shared.u32 %r2, [tile_b];\n"
                            "st.param.b32 [r], %r2;\nret;\n}\n"),
                    c =
                        ptx(".shared .align 4 .b8 tile_c[4096];\n"
                            ".visible .entry tile_kc(.param .u64 out)\n.reqntid 32\n{\n.reg .b32 %r<3>;\n"
                            ".reg .b64 %rd<2>;\nmov.u32 %r1, %tid.x;\nst.shared.u32 [tile_c+8], %r1;\n"
                            "ld.shared.u32 %r2, [tile_c];\nld.param.u64 %rd1, [out];\nst.global.u32 [%rd1], %r2;\n"
                            "ret;\n}\n");
  const std::vector<sk::backend::ModuleImage> images{
      {"a.ptx", a.data(), a.size()}, {"b.ptx", b.data(), b.size()}, {"c.ptx", c.data(), c.size()}};
  sk::cuda::CudaModuleCache cache;
  std::shared_ptr<const CudaModule> m;
  ASSERT_EQ(sk::cuda::load_module_set(images, "sm_90", cache, "test", &m), SK_OK) << sk::last_error();
  const auto ka = take(m, "tile_ka"), kc = take(m, "tile_kc");
  ASSERT_TRUE(ka && kc);
  EXPECT_TRUE(contains(program({ka}), "__sk_shared_overlay[3072]"))
      << "tile_b, reached through the call, and tile_a";
  const std::string both = program({ka, kc});
  EXPECT_TRUE(contains(both, "__sk_shared_overlay[4096]")) << both;
  EXPECT_FALSE(contains(both, "[tile_") || contains(both, ".b8 tile_")) << "each tile is the overlay's: " << both;
}

// nvcc -rdc's weak definitions (a template function and an inline variable in both files) are
// no conflict, and neither object needs the other; two objects that define one name strongly
// are refused, naming both; an archive's members may, and a loose object's definition counts
// before theirs.
TEST(CudaModuleSet, WeakDefinitionsAreOneAndStrongOnesTwiceAreRefused) {
  sk::cuda::CudaModuleCache cache;
  std::shared_ptr<const CudaModule> m;
  Files weak{"rdc_sum.ptx", "rdc_scale.ptx"};
  ASSERT_EQ(load_set(cache, weak, &m), SK_OK) << sk::last_error();
  const auto sum = take(m, "rdc_sum", 32), scale = take(m, "rdc_scale", 32);
  ASSERT_TRUE(sum && scale);
  EXPECT_TRUE(sum->links.empty() && scale->links.empty());
  const std::string both = program({sum, scale});
  EXPECT_EQ(count(both, "kRdcWeights[16] = {"), 1u) << both;

  Files twice{"cross_b.o", "cross_b_lineinfo.o"};
  EXPECT_EQ(load_set(cache, twice, &m), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(),
                       "'_Z16cross_activationf' (cross_activation(float)) is defined by "
                       "cross_b.o and by cross_b_lineinfo.o: a device link holds one definition"))
      << sk::last_error();
  Files member_too{"libcross.a", "cross_b_lineinfo.o"};
  ASSERT_EQ(load_set(cache, member_too, &m), SK_OK) << sk::last_error();
  EXPECT_EQ(labels(take(m, "cross_apply")->links), (std::vector<std::string>{"cross_b_lineinfo.o (compute_90 PTX)"}))
      << "a loose object's definition counts before a member's";
  EXPECT_EQ(take(m, "cross_scale")->module->label, "cross_b_lineinfo.o (compute_90 PTX)");
}

// What cannot be one object of several is refused, naming it: LTO-IR and a shared library
// (what they define is known only to a whole link), an archive of host code alone.
TEST(CudaModuleSet, WhatCannotBeOneOfSeveralObjectsIsNamed) {
  sk::cuda::CudaModuleCache cache;
  std::shared_ptr<const CudaModule> m;
  Files ir{"cross_a.o", "decode_global.ltoir"};
  EXPECT_EQ(load_set(cache, ir, &m), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(),
                       "decode_global.ltoir is LTO-IR, whose functions and variables are known only "
                       "to a whole link"))
      << sk::last_error();
  Files library{"libdecode_two.so", "cross_a.o"};
  EXPECT_EQ(load_set(cache, library, &m), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "is a shared library or executable, linked already")) << sk::last_error();

  // An archive of cross_host.o alone ("!<arch>\n", one 60-byte member header, even padding).
  std::vector<uint8_t> host = kernel_bytes("cross_host.o");
  ASSERT_FALSE(host.empty());
  char header[61];
  std::snprintf(header, sizeof header, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", "cross_host.o/", "0", "0", "0", "644",
                host.size());
  std::vector<uint8_t> archive(reinterpret_cast<const uint8_t *>("!<arch>\n"),
                               reinterpret_cast<const uint8_t *>("!<arch>\n") + 8);
  archive.insert(archive.end(), header, header + 60);
  archive.insert(archive.end(), host.begin(), host.end());
  if (archive.size() % 2) archive.push_back('\n');
  const std::vector<sk::backend::ModuleImage> images{{"libhost.a", archive.data(), archive.size()}};
  EXPECT_EQ(sk::cuda::load_module_set(images, "sm_90", cache, "test", &m), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "libhost.a: none of its 1 members holds device code")) << sk::last_error();
}
