// Kernels from PTX as their compilers wrote it (cuda/ptx_module.hpp): Triton's decode-step
// kernels (tests/kernels/triton, checked in), the same as CUDA C++ `__global__` kernels (nvcc
// -ptx, and PTX-only fatbinaries), and kernels whose constructs cannot be fused. Each loads,
// its rewrite compiles, and they fuse with each other and with `__device__` sub-kernels in a
// real nvJitLink link, checked in the linked SASS.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/device_api_usage.hpp"
#include "cuda/nvjitlink.hpp"
#include "cuda/ptx_join.hpp"
#include "cuda/ptx_module.hpp"
#include "cuda/ptx_prune.hpp"
#include "cuda_link_support.hpp"
#include "elf/shared_overlay_layout.hpp"

using sk::cuda::BuildRequest;
using sk::cuda::BuiltImage;
using sk::cuda::CudaKernel;
using sk::cuda::CudaModule;
using sk::cuda::PtxModule;
using sk::cuda_test::contains;
using sk::cuda_test::count;
using sk::cuda_test::kernel_bytes;
using sk::cuda_test::load;
using sk::cuda_test::read_file;
using sk::cuda_test::Scope;
using sk::cuda_test::triton_path;

namespace {

// The kernels of the decode step, as Triton 3.9 compiled them (scripts/ptx-fixtures), with
// the threads and dynamic shared bytes its metadata gives (.json beside each).
struct TritonFixture {
  const char *file, *kernel, *signature;
  uint32_t threads, shared;
};
const TritonFixture kTriton[] = {
    {"rmsnorm", "rmsnorm_kernel", "ptr,ptr,ptr,u32,f32,ptr,ptr", 128, 16},
    {"rope", "rope_kernel", "ptr,ptr,ptr,ptr,u32,u32,ptr,ptr", 32, 0},
    {"decode_attention", "decode_attention_kernel", "ptr,ptr,ptr,ptr,u32,u32,u32,u32,f32,ptr,ptr", 128, 2048},
    {"silu_mul", "silu_mul_kernel", "ptr,ptr,ptr,u32,ptr,ptr", 128, 0},
    {"residual_add", "residual_add_kernel", "ptr,ptr,ptr,u32,ptr,ptr", 128, 0},
    {"gemv", "gemv_kernel", "ptr,ptr,ptr,u32,u32,ptr,ptr", 128, 512},
    {"project", "project_kernel", "ptr,ptr,ptr,u32,u32,u32,ptr,ptr", 128, 49152},
};

// The same operations as nvcc `__global__` kernels (tests/kernels/cuda/decode_global.cu).
const char *const kGlobal[] = {"rmsnorm_global",  "rope_global",         "decode_attention_global",
                               "silu_mul_global", "residual_add_global", "gemv_global"};

// A module's text, without the NUL its bytes end with (nvJitLink reads PTX as a C string).
std::string text_of(const std::vector<uint8_t> &b) {
  std::string t(b.begin(), b.end());
  while (!t.empty() && t.back() == '\0') t.pop_back();
  return t;
}

std::shared_ptr<const CudaModule> load_triton(const std::string &name) {
  const std::vector<uint8_t> bytes = read_file(triton_path(name + ".ptx"));
  EXPECT_FALSE(bytes.empty()) << triton_path(name + ".ptx");
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(sk::cuda::load_cuda_module(bytes.data(), bytes.size(), name + ".ptx", &m), SK_OK) << sk::last_error();
  return m;
}

std::shared_ptr<CudaKernel> take(const std::shared_ptr<const CudaModule> &m, const char *name, uint32_t threads = 0,
                                 uint32_t shared = 0) {
  std::shared_ptr<CudaKernel> k;
  EXPECT_EQ(sk::cuda::make_cuda_kernel(m, name, sk::backend::KernelRequest{nullptr, threads, shared}, "test", &k),
            SK_OK)
      << sk::last_error();
  return k;
}

sk_status refused(const std::shared_ptr<const CudaModule> &m, const char *name, uint32_t threads = 0,
                  uint32_t shared = 0) {
  std::shared_ptr<CudaKernel> k;
  return sk::cuda::make_cuda_kernel(m, name, sk::backend::KernelRequest{nullptr, threads, shared}, "test", &k);
}

bool has_rewrite(const std::vector<std::string> &rewrites, const std::string &what) {
  for (const std::string &r : rewrites)
    if (contains(r, what)) return true;
  return false;
}

// PTX text written here, loaded as `label`.
std::shared_ptr<const CudaModule> load_ptx(const std::string &text, const char *label) {
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(sk::cuda::load_cuda_module(text.data(), text.size(), label, &m), SK_OK) << sk::last_error();
  return m;
}

// A kernel of PTX text written here (a .reqntid 32 entry whose body is `body`, parameters
// `params`), loaded.
std::shared_ptr<const CudaModule> load_text(const std::string &params, const std::string &body) {
  return load_ptx(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(" + params +
                      ")\n.reqntid 32\n{\n.reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n" + body + "\nret;\n}\n",
                  "k.ptx");
}

// The definition of function `name` in `ptx`, from its `.func` line to its closing line.
std::string function_text(const std::string &ptx, const std::string &name) {
  size_t at = ptx.rfind(" " + name + "(");  // the definition, after the entry declares it
  if (at == std::string::npos) return "";
  at = ptx.rfind('\n', at) + 1;
  return ptx.substr(at, ptx.find("\n}\n", at) + 3 - at);
}

}  // namespace

// Each Triton kernel: its signature from the parameter list (the two scratch pointers Triton
// appends included), its threads from .reqntid, the dynamic shared memory its metadata gives
// required where it uses global_smem, and the rewrites recorded.
TEST(CudaPtx, TritonKernelsLoadWithTheirLaunchFacts) {
  for (const TritonFixture &f : kTriton) {
    SCOPED_TRACE(f.file);
    auto m = load_triton(f.file);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, sk::cuda::InputKind::Ptx);
    ASSERT_TRUE(m->ptx);
    EXPECT_EQ(m->ptx->version, "9.4");
    EXPECT_EQ(m->ptx->target, "sm_90a");
    EXPECT_EQ(m->ptx->link_arch, "sm_90a");
    // Declared from its entry: sk_module_kernel_count and _name list it.
    ASSERT_EQ(m->metadata.size(), 1u);
    EXPECT_EQ(m->metadata[0].name, f.kernel);
    EXPECT_EQ(m->metadata[0].signature, f.signature);
    if (f.shared) {
      EXPECT_EQ(refused(m, f.kernel), SK_ERR_INCOMPATIBLE);
      EXPECT_TRUE(contains(sk::last_error(), ".extern .shared")) << sk::last_error();
      EXPECT_TRUE(contains(sk::last_error(), f.kernel)) << sk::last_error();
    }
    auto k = take(m, f.kernel, 0, f.shared);
    ASSERT_TRUE(k);
    EXPECT_EQ(sk::signature_to_string(k->signature), f.signature);
    EXPECT_EQ(k->threads, f.threads);
    EXPECT_EQ(k->threads_from, ".reqntid");
    EXPECT_EQ(k->dynamic_shared, f.shared);
    EXPECT_EQ(k->usage, sk::kUsesBlockIdx) << "the rewrite reads the block index through sk_block_idx()";
    ASSERT_TRUE(k->ptx);
    EXPECT_TRUE(k->ptx->entry);
    EXPECT_TRUE(has_rewrite(k->ptx->rewrites, ".entry made a .func")) << k->ptx->rewrites.front();
    EXPECT_TRUE(has_rewrite(k->ptx->rewrites, "%ctaid.x read as sk_block_idx()"));
    EXPECT_TRUE(has_rewrite(k->ptx->rewrites, ".reqntid " + std::to_string(f.threads)));
    // The threads it requires, and no other.
    EXPECT_EQ(refused(m, f.kernel, f.threads * 2, f.shared), SK_ERR_INCOMPATIBLE);
    EXPECT_TRUE(contains(sk::last_error(), ".reqntid")) << sk::last_error();
    const std::string text = text_of(m->bytes);
    EXPECT_FALSE(contains(text, ".entry")) << "every entry is a function now";
    EXPECT_FALSE(contains(text, "%ctaid")) << "the grid is libsk's";
    EXPECT_FALSE(contains(text, ".ptr")) << "kernel parameter attributes are gone";
    EXPECT_TRUE(contains(text, "call (sk_r), sk_block_idx, ();"));
  }
}

// What the version lowering depends on: the installed nvJitLink's PTX ISA.
TEST(CudaPtx, TheVersionIsLoweredToTheInstalledNvJitLinks) {
  EXPECT_EQ(sk::cuda::ptx_isa_of_nvjitlink("13.0"), "9.0");
  EXPECT_EQ(sk::cuda::ptx_isa_of_nvjitlink("13.1"), "9.1");
  EXPECT_EQ(sk::cuda::ptx_isa_of_nvjitlink("12.4"), "8.4");
  EXPECT_EQ(sk::cuda::ptx_isa_of_nvjitlink("12.8"), "8.7");
  EXPECT_EQ(sk::cuda::ptx_isa_of_nvjitlink("unknown"), "");
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load_triton("rmsnorm");
  ASSERT_TRUE(m);
  const std::string isa = sk::cuda::ptx_isa_of_nvjitlink(linker->version());
  ASSERT_FALSE(isa.empty()) << linker->version();
  EXPECT_TRUE(contains(text_of(m->bytes), ".version " + isa + "\n")) << isa;
  ASSERT_EQ(m->ptx->rewrites.size(), 1u);
  EXPECT_TRUE(contains(m->ptx->rewrites[0], ".version 9.4 lowered to " + isa)) << m->ptx->rewrites[0];
}

// PTX that the lowered version does not compile: the link's error says it was lowered, from what.
TEST(CudaPtx, ALinkFailingOnLoweredPtxSaysItWasLowered) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  std::string text = text_of(read_file(triton_path("residual_add.ptx")));
  // An instruction no ISA has stands for one newer than nvJitLink's.
  const size_t ret = text.rfind("\tret;");
  ASSERT_NE(ret, std::string::npos);
  text.insert(ret, "\tnewer.instruction.b32 %r1;\n");
  const std::shared_ptr<const CudaModule> m = load_ptx(text, "newer.ptx");
  ASSERT_TRUE(m);
  Scope s;
  s.add(take(m, "residual_add_kernel"), 4);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  EXPECT_NE(build_superkernel(s.request(), &img), SK_OK);
  EXPECT_TRUE(contains(sk::last_error(), "newer.ptx: .version 9.4 lowered to")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "a newer nvJitLink")) << sk::last_error();
}

// The rewritten text of every fixture is a relocatable module ptxas compiles for the link's
// architecture: the kernels as functions, nothing an entry alone may hold.
TEST(CudaPtx, EveryRewriteCompilesAsRelocatableCode) {
  std::vector<std::pair<std::string, std::shared_ptr<const CudaModule>>> modules;
  for (const TritonFixture &f : kTriton) modules.push_back({f.file, load_triton(f.file)});
  modules.push_back({"decode_global.ptx", load("decode_global.ptx")});
  modules.push_back({"refuse_global.ptx", load("refuse_global.ptx")});
  for (const auto &[name, m] : modules) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(m);
    std::string log;
    EXPECT_EQ(sk::cuda_test::ptxas(text_of(m->bytes), m->ptx->link_arch, &log), 0) << log;
  }
}

// nvcc's __global__ kernels: pointers are plain .u64 (pointers, then), a struct by value is a
// byte array, threads come from __launch_bounds__ (.maxntid) or the caller, the grid-stride
// loops read gridDim.x through sk_block_num(), and the attention kernel's extern __shared__
// scores need their size.
TEST(CudaPtx, GlobalKernelsLoadWithTheirLaunchFacts) {
  auto m = load("decode_global.ptx");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->ptx->link_arch, "sm_90");
  auto rms = take(m, "rmsnorm_global");
  ASSERT_TRUE(rms);
  EXPECT_EQ(rms->threads, 256u);
  EXPECT_EQ(rms->threads_from, ".maxntid");
  EXPECT_EQ(rms->ptx->min_blocks_per_sm, 2u);
  EXPECT_EQ(sk::signature_to_string(rms->signature), "ptr,ptr,ptr,u32,f32");
  // Its block reduction's __shared__ float partial[32] and total: 132 bytes, the linked entry's.
  EXPECT_EQ(rms->static_shared, 132u);
  // At most the launch bounds' threads.
  EXPECT_EQ(refused(m, "rmsnorm_global", 512), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), ".maxntid 256, 1, 1")) << sk::last_error();
  auto small = take(m, "rmsnorm_global", 128);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->threads, 128u);
  EXPECT_EQ(small->threads_from, "caller");
  // No launch bounds: the caller says.
  EXPECT_EQ(refused(m, "silu_mul_global"), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "silu_mul_global")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "sk_kernel_desc.threads")) << sk::last_error();
  auto silu = take(m, "silu_mul_global", 128);
  ASSERT_TRUE(silu);
  EXPECT_EQ(silu->usage, sk::kUsesBlockIdx | sk::kUsesBlockNum);
  EXPECT_TRUE(has_rewrite(silu->ptx->rewrites, "%nctaid.x read as sk_block_num()"));
  auto rope = take(m, "rope_global", 64);
  ASSERT_TRUE(rope);
  EXPECT_EQ(sk::signature_to_string(rope->signature), "ptr,ptr,ptr,ptr,{u32[3]}");
  EXPECT_EQ(refused(m, "decode_attention_global"), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "sk_kernel_desc.dynamic_shared")) << sk::last_error();
  auto attn = take(m, "decode_attention_global", 0, 1024);
  ASSERT_TRUE(attn);
  EXPECT_EQ(attn->dynamic_shared, 1024u);
  EXPECT_EQ(attn->dynamic_shared_from, "caller");
  // A given signature must pass the parameters alike: the struct as any 12 bytes aligned 4.
  std::shared_ptr<CudaKernel> k;
  EXPECT_EQ(sk::cuda::make_cuda_kernel(m, "rope_global", {"ptr,ptr,ptr,ptr,{f32,f32,f32}", 64}, "test", &k), SK_OK)
      << sk::last_error();
  EXPECT_EQ(sk::cuda::make_cuda_kernel(m, "rope_global", {"ptr,ptr,ptr,ptr,{f64,f32}", 64}, "test", &k),
            SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "parameter 4")) << sk::last_error();
  EXPECT_EQ(sk::cuda::make_cuda_kernel(m, "rope_global", {"ptr,ptr,ptr", 64}, "test", &k), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "5 parameters")) << sk::last_error();
  EXPECT_EQ(refused(m, "no_such_kernel"), SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(sk::last_error(), "rmsnorm_global")) << "lists the kernels there are: " << sk::last_error();
}

// What cannot be fused is refused by name, saying which construct; the module's other kernels
// still load, link and compile (the refused entries stay entries, as written).
TEST(CudaPtx, ConstructsThatCannotBeFusedAreRefusedByName) {
  auto m = load("refuse_global.ptx");
  ASSERT_TRUE(m);
  const std::map<std::string, std::string> expect = {
      {"refuse_cluster", "thread block cluster"},
      {"refuse_dynamic_parallelism", "dynamic parallelism (calls __cudaCDP2"},
      {"refuse_named_barrier",
       "barrier 15 (bar.sync), which the super kernel's own block barriers use: warps that left the sub-kernel "
       "would count at it, in '"},
  };
  for (const auto &[name, why] : expect) {
    SCOPED_TRACE(name);
    EXPECT_EQ(refused(m, name.c_str(), 128), SK_ERR_UNSUPPORTED);
    EXPECT_TRUE(contains(sk::last_error(), "'" + name + "'")) << sk::last_error();
    EXPECT_TRUE(contains(sk::last_error(), why)) << sk::last_error();
    EXPECT_TRUE(m->ptx->find(name)->rewrites.empty());
  }
  EXPECT_TRUE(take(m, "refuse_child", 32));
  EXPECT_EQ(refused(m, "refuse_named_barrier", 128), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "refuse_pair_barrierEv', which it calls")) << sk::last_error();

  // The barrier's operand wherever the statement names it: bar.red's is the second; other
  // barriers, and barrier 15 of the warp (bar.warp.sync's mask), are not libsk's.
  auto barrier = [](const std::string &statement) {
    return load_text(".param .u64 out", ".reg .pred %p<2>;\n" + statement);
  };
  for (const char *s : {"barrier.sync 15;", "bar.arrive 15, 64;", "barrier.sync.aligned 0xf, 32;",
                        "bar.red.popc.u32 %r1, 15, %p1;", "@%p1 bar.sync 15;"}) {
    SCOPED_TRACE(s);
    EXPECT_EQ(refused(barrier(s), "k"), SK_ERR_UNSUPPORTED);
    EXPECT_TRUE(contains(sk::last_error(), "own block barriers use")) << sk::last_error();
  }
  for (const char *s :
       {"bar.sync 14, 64;", "bar.red.popc.u32 %r1, 1, 15, %p1;", "bar.warp.sync 15;", "bar.sync %r1;"})
    EXPECT_TRUE(take(barrier(s), "k", 32)) << s;

  // The block's shared memory size: the entry's in a super kernel.
  for (const char *reg : {"%dynamic_smem_size", "%total_smem_size"}) {
    EXPECT_EQ(refused(barrier(std::string("mov.u32 %r1, ") + reg + ";"), "k"), SK_ERR_UNSUPPORTED);
    EXPECT_TRUE(contains(sk::last_error(), std::string("shared memory size (reads ") + reg)) << sk::last_error();
  }

  // Warp specialization (Triton's warp_specialize=True): its warpgroups would trade registers,
  // which the link's relocatable compile leaves out (ptxas C7504), so it fuses, and says so.
  auto ws = load_triton("matmul_ws");
  ASSERT_TRUE(ws);
  EXPECT_TRUE(take(ws, "matmul_ws_kernel", 0, 115168));
  EXPECT_TRUE(
      has_rewrite(ws->ptx->find("matmul_ws_kernel")->rewrites, "setmaxnreg (warp specialization) has no effect"));
  EXPECT_FALSE(has_rewrite(ws->ptx->find("matmul_ws_kernel")->rewrites, "__sk_leave"))
      << "its warpgroups' own barriers count their threads";
}

// A kernel launched with a two-dimensional block whose PTX does not give its shape (no
// .reqntid; llama.cpp's mul_mat_vec_q and RoPE): the caller gives it (sk_kernel_desc.block), and
// every thread register it and its helpers read comes from __sk_thread, which rebuilds the
// thread's index from the flat one and the shape its call site stores. Shapes that cannot be
// are refused by name; the kernels link.
TEST(CudaPtx, ABlockShapeTheCallerGivesRebuildsTheThreadIndex) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load("block2d.ptx");
  ASSERT_TRUE(m);
  auto with_block = [&](const char *name, uint32_t x, uint32_t y, uint32_t z, uint32_t threads = 0,
                        std::shared_ptr<CudaKernel> *out = nullptr) {
    sk::backend::KernelRequest r{nullptr, threads, 0, {x, y, z}};
    std::shared_ptr<CudaKernel> k;
    const sk_status st = sk::cuda::make_cuda_kernel(m, name, r, "test", &k);
    if (out) *out = k;
    return st;
  };
  for (const char *name : {"scale_rows_2d", "sum_blocks_2d"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(refused(m, name, 128), SK_ERR_INCOMPATIBLE);
    EXPECT_TRUE(contains(sk::last_error(), "of a block whose shape its PTX does not give")) << sk::last_error();
    EXPECT_TRUE(contains(sk::last_error(), "sk_kernel_desc.block")) << sk::last_error();
    std::shared_ptr<CudaKernel> k;
    ASSERT_EQ(with_block(name, 32, 4, 1, 0, &k), SK_OK) << sk::last_error();
    EXPECT_EQ(k->threads, 128u);
    EXPECT_TRUE(k->ptx->block_shape_needed && k->ptx->reads_block_shape);
    EXPECT_TRUE(has_rewrite(k->ptx->rewrites, "read from the block's shape its caller gives (__sk_thread)"));
  }
  // A kernel whose helper reads threadIdx.y needs the shape too, one dimension or more; one
  // that reads no thread register beyond x anywhere takes a one-dimensional block only.
  std::shared_ptr<CudaKernel> copy;
  EXPECT_EQ(refused(m, "copy_1d", 128), SK_ERR_INCOMPATIBLE);
  ASSERT_EQ(with_block("copy_1d", 128, 1, 1, 0, &copy), SK_OK) << sk::last_error();
  EXPECT_TRUE(copy->ptx->block_shape_needed && copy->ptx->reads_block_shape);
  auto flat = load("refuse_global.ptx");
  std::shared_ptr<CudaKernel> child;
  EXPECT_EQ(sk::cuda::make_cuda_kernel(flat, "refuse_child", {nullptr, 0, 0, {32, 4, 1}}, "test", &child),
            SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "reads no thread register beyond x")) << sk::last_error();
  EXPECT_EQ(sk::cuda::make_cuda_kernel(flat, "refuse_child", {nullptr, 0, 0, {128, 1, 1}}, "test", &child), SK_OK)
      << sk::last_error();
  EXPECT_EQ(child->threads, 128u);
  // The shape itself.
  EXPECT_EQ(with_block("scale_rows_2d", 32, 0, 1), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk::last_error(), "block {32, 0, 1} has an extent of 0")) << sk::last_error();
  EXPECT_EQ(with_block("scale_rows_2d", 64, 32, 1), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk::last_error(), "is 2048 threads, above 1024")) << sk::last_error();
  EXPECT_EQ(with_block("scale_rows_2d", 32, 4, 1, 256), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk::last_error(), "block {32, 4, 1} is not threads 256")) << sk::last_error();
  const std::string text = text_of(m->bytes);
  EXPECT_TRUE(contains(text, ".extern .func (.param .b32 sk_r) __sk_thread")) << text;
  EXPECT_FALSE(std::regex_search(text, std::regex("mov\\.u32\\s+%r\\d+, %tid\\.y"))) << text;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text, m->ptx->link_arch, &log), 0) << log;

  // A .reqntid kernel's own reads stay constants; its helper's go through __sk_thread, with the
  // .reqntid shape stored; a block other than its .reqntid is refused.
  const std::string shaped =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".func (.param .b32 r) helper()\n{\n.reg .b32 %r<3>;\nmov.u32 %r1, %tid.y;\nst.param.b32 [r], %r1;\nret;\n}\n"
      ".visible .entry k(.param .u64 out)\n.reqntid 8, 4, 1\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n"
      "{ .param .b32 r; call (r), helper, (); ld.param.b32 %r1, [r]; }\nmov.u32 %r2, %tid.y;\n"
      "add.u32 %r1, %r1, %r2;\nld.param.u64 %rd1, [out];\nst.global.u32 [%rd1], %r1;\nret;\n}\n";
  const std::shared_ptr<const CudaModule> rm = load_ptx(shaped, "shaped.ptx");
  ASSERT_TRUE(rm);
  auto rk = take(rm, "k");
  ASSERT_TRUE(rk);
  EXPECT_TRUE(!rk->ptx->block_shape_needed && rk->ptx->reads_block_shape);
  const std::string rt = text_of(rm->bytes);
  EXPECT_TRUE(contains(rt, "rem.u32 %r2, %sk_t, 4;")) << rt;            // the entry's %tid.y: tid / 8 % 4
  EXPECT_TRUE(contains(rt, "call (sk_r), __sk_thread, (sk_a)")) << rt;  // the helper's
  std::shared_ptr<CudaKernel> wrong;
  EXPECT_EQ(sk::cuda::make_cuda_kernel(rm, "k", {nullptr, 0, 0, {16, 2, 1}}, "test", &wrong), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "requires a block of 8 x 4 x 1 threads (.reqntid), not {16, 2, 1}"))
      << sk::last_error();
  EXPECT_EQ(sk::cuda_test::ptxas(rt, "sm_90", &log), 0) << log;

  // Fused: each call site stores its step's shape, x in the low word, y and z in the high
  // word's halves; two shapes of one kernel call it at two sites.
  auto fuse = [](std::vector<std::shared_ptr<CudaKernel>> kernels, BuiltImage *img) {
    Scope s;
    for (const auto &k : kernels) s.add(k, 4);
    ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
    ASSERT_EQ(build_superkernel(s.request(), img), SK_OK) << sk::last_error();
  };
  std::shared_ptr<CudaKernel> a, b;
  ASSERT_EQ(with_block("sum_blocks_2d", 32, 4, 1, 0, &a), SK_OK) << sk::last_error();
  ASSERT_EQ(with_block("sum_blocks_2d", 16, 8, 1, 0, &b), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_NO_FATAL_FAILURE(fuse({a, b, copy}, &img));
  auto shape = [](uint64_t x, uint64_t y, uint64_t z) {
    return "mov.b64 %bs, " + std::to_string((z << 16 | y) << 32 | x) + ";";
  };
  EXPECT_TRUE(contains(img.ptx, shape(32, 4, 1))) << img.ptx;
  EXPECT_TRUE(contains(img.ptx, shape(16, 8, 1))) << img.ptx;
  EXPECT_TRUE(contains(img.ptx, shape(128, 1, 1))) << img.ptx;
  EXPECT_EQ(count(img.ptx, "// call site "), 3u) << img.ptx;
  // The block's extents are the stored shape's, z too: a kernel narrower than the super
  // kernel's block (32 x 2 x 2 of 256 threads) reads its own, not the block's threads / (x·y).
  std::shared_ptr<CudaKernel> deep, wide;
  ASSERT_EQ(with_block("sum_blocks_2d", 32, 2, 2, 0, &deep), SK_OK) << sk::last_error();
  ASSERT_EQ(with_block("copy_1d", 256, 1, 1, 0, &wide), SK_OK) << sk::last_error();
  BuiltImage narrow;
  ASSERT_NO_FATAL_FAILURE(fuse({deep, wide}, &narrow));
  EXPECT_EQ(narrow.threads, 256u);
  EXPECT_TRUE(contains(narrow.ptx, shape(32, 2, 2))) << narrow.ptx;
  const std::string thread = function_text(narrow.ptx, "__sk_thread");
  ASSERT_TRUE(contains(thread, ".func (.param .b32 r) __sk_thread(")) << narrow.ptx;
  EXPECT_FALSE(contains(thread, "%ntid")) << thread;
}

// Programmatic dependent launch (llama.cpp's kernels for sm_90 use it throughout): each
// griddepcontrol.wait, in a kernel or a helper, calls libsk's __sk_dependent_wait, and a step of
// such a kernel starts early where PDL would start its graph node early, after a kernel that
// launches its dependents (griddepcontrol.launch_dependents, taken out): the planner lets it
// wait in the kernel (wait_in_kernel) unless early-start=0. The kernels fuse, compile and link.
TEST(CudaPtx, ProgrammaticDependentLaunchWaitsWhereTheKernelWaits) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load("dependent_launch.ptx");
  ASSERT_TRUE(m);
  const std::string original = sk::cuda_test::kernel_text("dependent_launch.ptx");
  const size_t waits = count(original, "griddepcontrol.wait;");
  EXPECT_EQ(waits, 5u) << original;  // the helper's and four kernels'
  EXPECT_TRUE(contains(original, "griddepcontrol.launch_dependents;"));
  const std::string text = text_of(m->bytes);
  EXPECT_FALSE(contains(text, "griddepcontrol")) << text;
  EXPECT_EQ(count(text, "call __sk_dependent_wait, ();"), waits) << text;
  EXPECT_TRUE(contains(text, ".extern .func __sk_dependent_wait\n()\n;")) << text;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text, m->ptx->link_arch, &log), 0) << log;
  const char *const names[] = {"pdl_scale", "pdl_mirror", "pdl_weighted", "pdl_one_waits"};
  std::vector<std::shared_ptr<CudaKernel>> ks;
  for (const char *name : names) {
    auto k = take(m, name, 128);
    ASSERT_TRUE(k) << name;
    EXPECT_TRUE(k->usage & sk::kUsesGridDependencyWait) << name;  // pdl_mirror's wait is its helper's
    EXPECT_FALSE(k->usage & sk::kUsesWaitPreTaskEnd) << name;
    EXPECT_TRUE(has_rewrite(k->ptx->rewrites,
                            "griddepcontrol.wait (programmatic dependent launch) calls "
                            "__sk_dependent_wait"))
        << name;
    const bool launches = std::string(name) == "pdl_scale" || std::string(name) == "pdl_mirror";
    EXPECT_EQ(has_rewrite(k->ptx->rewrites, "griddepcontrol.launch_dependents taken out"), launches) << name;
    EXPECT_EQ((k->usage & sk::kUsesGridDependencyLaunch) != 0, launches) << name;
    // Thread 0 alone waits: the others may go on to its store without waiting themselves.
    const bool writes = std::string(name) == "pdl_one_waits";
    EXPECT_EQ((k->usage & sk::kUsesWriteBeforeGridDependencyWait) != 0, writes) << name;
    EXPECT_EQ(k->ptx->write_before_dependent_wait.starts_with("st.global.f32 at line "), writes)
        << name << ": " << k->ptx->write_before_dependent_wait;
    ks.push_back(k);
  }
  for (const char *options : {"", "early-start=0"}) {
    SCOPED_TRACE(options);
    Scope s;
    s.options = options;
    for (const auto &k : ks) s.add(k, 8);
    ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
    ASSERT_EQ(s.plan.steps.size(), 4u);
    // The first waits for nothing; pdl_one_waits after pdl_weighted, which does not launch its
    // dependents early, waits at its start as a graph node would.
    const bool early = *options == 0;
    EXPECT_FALSE(s.plan.steps[0].wait_in_kernel);
    EXPECT_EQ(s.plan.steps[1].wait_in_kernel, early);
    EXPECT_EQ(s.plan.steps[2].wait_in_kernel, early);
    EXPECT_FALSE(s.plan.steps[3].wait_in_kernel);
    BuiltImage img;
    ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
    EXPECT_TRUE(contains(img.ptx, ".visible .func __sk_dependent_wait()")) << img.ptx;
  }
  // A guarded wait keeps its guard.
  auto guarded = load_text(".param .u32 n",
                           ".reg .pred %p<2>;\nld.param.u32 %r1, [n];\nsetp.ne.u32 %p1, %r1, 0;\n"
                           "@%p1 griddepcontrol.wait;");
  ASSERT_TRUE(guarded);
  const std::string guarded_text = text_of(guarded->bytes);
  EXPECT_TRUE(contains(guarded_text, "@%p1 call __sk_dependent_wait, ();")) << guarded_text;
  EXPECT_EQ(sk::cuda_test::ptxas(guarded_text, guarded->ptx->link_arch, &log), 0) << log;
  auto k = take(guarded, "k");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->usage & (sk::kUsesGridDependencyWait | sk::kUsesGridDependencyLaunch), sk::kUsesGridDependencyWait);
  // Triton's, compiled with launch_pdl (gdc_wait, then gdc_launch_dependents): the same, and
  // after an nvcc kernel that launches its dependents it starts early.
  auto triton = load_triton("scale_pdl");
  ASSERT_TRUE(triton);
  EXPECT_EQ(count(text_of(triton->bytes), "call __sk_dependent_wait, () ;"), 1u);
  auto scale_pdl = take(triton, "scale_pdl_kernel", 128);
  ASSERT_TRUE(scale_pdl);
  EXPECT_TRUE(scale_pdl->usage & sk::kUsesGridDependencyWait);
  EXPECT_TRUE(scale_pdl->usage & sk::kUsesGridDependencyLaunch);
  Scope s;
  s.add(ks[0], 8);
  s.add(scale_pdl, 8);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  EXPECT_TRUE(s.plan.steps[1].wait_in_kernel);
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
}

// A kernel of programmatic dependent launch whose head may write memory another block reads
// waits at its start, fused: PDL holds a head back until every block of the kernel before has
// passed its trigger, a fused block runs it as soon as its own part of the step before ends.
// Each path from the kernel's start to a griddepcontrol.wait is followed, through branches and
// into the functions it calls; loads, stores to shared and local memory and prefetches keep the
// early start.
TEST(CudaPtx, AKernelThatMayWriteBeforeItsGridDependencyWaitWaitsAtItsStart) {
  const std::string head =
      ".shared .align 16 .b8 sh[128];\n.local .align 4 .b8 lo[16];\n.reg .pred %p<2>;\n"
      "ld.param.u64 %rd1, [out];\nld.param.u32 %r1, [n];\nsetp.ne.u32 %p1, %r1, 0;\n";  // lines 9-14
  struct Case {
    const char *what, *body, *write;  // write: what the analysis names, "" for none
  } const cases[] = {
      {"a store", "st.global.u32 [%rd1], %r1;\ngriddepcontrol.wait;", "st.global.u32 at line 15"},
      {"a generic store", "st.u32 [%rd1], %r1;\ngriddepcontrol.wait;", "st.u32 at line 15"},
      {"an atomic", "atom.global.add.u32 %r2, [%rd1], 1;\ngriddepcontrol.wait;", "atom.global.add.u32 at line 15"},
      {"a loop after the wait", "griddepcontrol.wait;\n$L0:\nst.global.u32 [%rd1], %r1;\n@%p1 bra $L0;", ""},
      {"a bulk copy to global memory",
       "cp.async.bulk.global.shared::cta.bulk_group [%rd1], [sh], 128;\n"
       "griddepcontrol.wait;",
       "cp.async.bulk.global.shared::cta.bulk_group at line 15"},
      {"a store after the wait", "griddepcontrol.wait;\nst.global.u32 [%rd1], %r1;", ""},
      {"a guarded wait", "@%p1 griddepcontrol.wait;\nst.global.u32 [%rd1], %r1;", "st.global.u32 at line 16"},
      {"a branch past the wait", "@%p1 bra $L1;\ngriddepcontrol.wait;\n$L1:\nst.global.u32 [%rd1], %r1;",
       "st.global.u32 at line 18"},
      {"a return past the wait", "@%p1 bra $L1;\ngriddepcontrol.wait;\nst.global.u32 [%rd1], %r1;\n$L1:\nret;", ""},
      {"a wait in a loop", "$L0:\n@%p1 griddepcontrol.wait;\nst.global.u32 [%rd1], %r1;\n@%p1 bra $L0;",
       "st.global.u32 at line 17"},
      {"reads, block-local stores and prefetches",
       "ld.global.u32 %r2, [%rd1];\nst.shared.u32 [sh], %r2;\nst.local.u32 [lo], %r2;\n"
       "atom.shared.add.u32 %r3, [sh], 1;\nprefetch.global.L2 [%rd1];\n"
       "cp.async.bulk.prefetch.L2.global [%rd1], 128;\ncp.async.ca.shared.global [sh+16], [%rd1], 4;\n"
       "cp.async.wait_all;\nbar.sync 0;\ngriddepcontrol.wait;\nst.global.u32 [%rd1], %r2;",
       ""},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    auto m = load_text(".param .u64 out, .param .u32 n", head + c.body);
    ASSERT_TRUE(m) << sk::last_error();
    auto k = take(m, "k");
    ASSERT_TRUE(k);
    EXPECT_TRUE(k->usage & sk::kUsesGridDependencyWait);
    EXPECT_EQ(k->ptx->write_before_dependent_wait, c.write);
    EXPECT_EQ((k->usage & sk::kUsesWriteBeforeGridDependencyWait) != 0, *c.write != 0);
    EXPECT_EQ(has_rewrite(k->ptx->rewrites, std::string("the step waits at its start all the same, since the kernel "
                                                        "may write memory another block reads before it (") +
                                                c.write + ")"),
              *c.write != 0);
    std::string log;
    EXPECT_EQ(sk::cuda_test::ptxas(text_of(m->bytes), m->ptx->link_arch, &log), 0) << log;
  }

  // Into the functions it calls: a helper that always waits is the kernel's wait; one that may
  // return without waiting is not; a write before a helper's wait is named where it stands; a
  // function outside the module may write anything.
  const std::string module =
      ".version 8.0\n.target sm_90\n.address_size 64\n"                                   // 1-3
      ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);\n"            // 4
      ".func waits()\n{\ngriddepcontrol.wait;\nret;\n}\n"                                 // 5-9
      ".func stores_then_waits(.param .b64 p)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n"  // 10-13
      "ld.param.u64 %rd1, [p];\nmov.u32 %r1, 7;\nst.global.u32 [%rd1], %r1;\n"            // 14-16
      "griddepcontrol.wait;\nret;\n}\n"                                                   // 17-19
      ".func may_wait(.param .b32 n)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<2>;\n"           // 20-23
      "ld.param.u32 %r1, [n];\nsetp.ne.u32 %p1, %r1, 0;\n@%p1 bra $L;\n"                  // 24-26
      "griddepcontrol.wait;\n$L:\nret;\n}\n";                                             // 27-30
  auto kernel = [](const char *name, const char *call) {
    return std::string(".visible .entry ") + name +
           "(.param .u64 out, .param .u32 n)\n.reqntid 32\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n"
           "ld.param.u64 %rd1, [out];\nld.param.u32 %r1, [n];\n" +
           call + "\nst.global.u32 [%rd1], %r1;\ngriddepcontrol.wait;\nret;\n}\n";
  };
  const std::string text =
      module + kernel("after_waits", "call.uni waits, ();") +
      kernel("after_stores", "{ .param .b64 a; st.param.b64 [a], %rd1; call.uni stores_then_waits, (a); }") +
      kernel("after_may_wait", "{ .param .b32 a; st.param.b32 [a], %r1; call.uni may_wait, (a); }") +
      kernel("prints",
             "{ .param .b64 f; .param .b64 a; .param .b32 r; st.param.b64 [f], %rd1; "
             "st.param.b64 [a], %rd1; call.uni (r), vprintf, (f, a); }") +
      ".func recurse(.param .b32 n)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<2>;\nld.param.u32 %r1, [n];\n"  // 79-83
      "setp.ne.u32 %p1, %r1, 0;\n@%p1 bra $L;\nsub.u32 %r1, %r1, 1;\n"                                  // 84-86
      "{ .param .b32 a; st.param.b32 [a], %r1; call.uni recurse, (a); }\n"                              // 87
      "$L:\ngriddepcontrol.wait;\nret;\n}\n" +
      kernel("recurses", "{ .param .b32 a; st.param.b32 [a], %r1; call.uni recurse, (a); }");
  auto m = load_ptx(text, "helpers.ptx");
  ASSERT_TRUE(m) << sk::last_error();
  struct Want {
    const char *kernel, *write;
  } const wants[] = {
      {"after_waits", ""},
      {"after_stores", "st.global.u32 at line 16 in 'stores_then_waits', which it reaches"},
      {"after_may_wait", "st.global.u32 at line 63"},
      {"prints", "a call of 'vprintf' at line 74, outside the module"},
      {"recurses", "a recursive call of 'recurse' at line 87 in 'recurse', which it reaches"},
  };
  std::vector<std::shared_ptr<CudaKernel>> ks;
  for (const Want &w : wants) {
    SCOPED_TRACE(w.kernel);
    auto k = take(m, w.kernel);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->ptx->write_before_dependent_wait, w.write);
    EXPECT_EQ((k->usage & sk::kUsesWriteBeforeGridDependencyWait) != 0, *w.write != 0);
    ks.push_back(k);
  }
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text_of(m->bytes), m->ptx->link_arch, &log), 0) << log;
  // Calls nested deeper than compilers write are taken to write, without a walk that deep.
  std::string nested =
      ".version 8.0\n.target sm_90\n.address_size 64\n.func f300()\n{\ngriddepcontrol.wait;\nret;\n}\n";
  for (int i = 299; i >= 0; --i)
    nested += ".func f" + std::to_string(i) + "()\n{\ncall.uni f" + std::to_string(i + 1) + ", ();\nret;\n}\n";
  nested += kernel("deep", "call.uni f0, ();");
  auto deep = load_ptx(nested, "nested.ptx");
  ASSERT_TRUE(deep) << sk::last_error();
  auto dk = take(deep, "deep");
  ASSERT_TRUE(dk);
  EXPECT_TRUE(dk->ptx->write_before_dependent_wait.starts_with("a call nested too deep, of 'f255' at line "))
      << dk->ptx->write_before_dependent_wait;

  // Planned after a kernel that lets its dependents start early: only the one that writes
  // nothing before its wait waits in the kernel. nvcc's: pdl_refill_acc refills, before its
  // wait, a buffer that pdl_read_acc reads before its trigger.
  auto pdl = load("dependent_launch.ptx");
  ASSERT_TRUE(pdl);
  auto scale = take(pdl, "pdl_scale", 128), read_acc = take(pdl, "pdl_read_acc", 128),
       refill = take(pdl, "pdl_refill_acc", 128);
  ASSERT_TRUE(scale && read_acc && refill);
  EXPECT_EQ(read_acc->usage & (sk::kUsesGridDependencyWait | sk::kUsesGridDependencyLaunch),
            sk::kUsesGridDependencyLaunch);
  EXPECT_TRUE(refill->usage & sk::kUsesWriteBeforeGridDependencyWait);
  EXPECT_TRUE(refill->ptx->write_before_dependent_wait.starts_with("st.global.f32 at line "))
      << refill->ptx->write_before_dependent_wait;
  for (size_t i = 0; i < ks.size(); ++i) {
    SCOPED_TRACE(wants[i].kernel);
    Scope s;
    s.add(scale, 8);
    s.add(ks[i], 8);
    ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
    EXPECT_EQ(s.plan.steps[1].wait_in_kernel, *wants[i].write == 0);
  }
  Scope s;
  s.add(read_acc, 8);
  s.add(refill, 8);
  s.add(scale, 8);
  s.add(scale, 8);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  EXPECT_FALSE(s.plan.steps[1].wait_in_kernel);
  EXPECT_TRUE(s.plan.steps[3].wait_in_kernel);
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
}

// A PTX sub-kernel is compiled in the link, as a function: its register count is known only
// there. The link caps libsk's own code with the entry's .maxnreg, from 32 up to what the link
// says a sub-kernel function needs, each PTX module compiling uncapped: fewer registers than an
// uncapped link (max-registers=0), whose waits take registers freely. The scope option
// max-registers=N caps the whole link instead; explain's cuda_entry says which cap applied.
TEST(CudaPtx, MaxRegistersCapsTheLinkOfPtxSubKernels) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  EXPECT_EQ(sk::cuda::registers_the_link_asks(
                "error   : entry function 'e' with max regcount of 32 calls function 'k' with regcount of 38\n"
                "error   : entry function 'e' with max regcount of 32 calls function 'j' with regcount of 45\n"),
            45u);
  EXPECT_EQ(sk::cuda::registers_the_link_asks("ptxas fatal   : Insufficient registers"), 0u);
  EXPECT_EQ(sk::cuda::with_entry_maxnreg(".entry e()\n  .reqntid 128, 1, 1\n{\n}\n", 40),
            ".entry e()\n  .reqntid 128, 1, 1\n  .maxnreg 40\n{\n}\n");
  auto m = load("dependent_launch.ptx");
  ASSERT_TRUE(m);
  auto scale = take(m, "pdl_scale", 128), mirror = take(m, "pdl_mirror", 128);
  ASSERT_TRUE(scale && mirror);
  auto registers = [&](const char *options, uint32_t *cap) -> uint32_t {
    Scope s;
    s.options = options;
    s.add(scale, 8);
    s.add(mirror, 8);
    EXPECT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
    BuiltImage img;
    EXPECT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
    *cap = img.register_cap;
    const sk::elf::CubinFunction *e = img.info.find("sk_superkernel_entry");
    return e ? e->registers : 0;
  };
  uint32_t cap = 0;
  const uint32_t capped = registers("", &cap);
  EXPECT_GE(cap, sk::cuda::kEntryRegisterFloor);
  EXPECT_LE(capped, cap);
  const uint32_t learned = cap;
  const uint32_t free = registers("max-registers=0", &cap);
  EXPECT_EQ(cap, 0u);
  EXPECT_LT(capped, free);  // uncapped, libsk's waits take more
  EXPECT_LE(registers("max-registers=40", &cap), 40u);
  EXPECT_EQ(cap, 40u);
  EXPECT_EQ(registers("", &cap), capped);  // the cache's cubin says its cap too
  EXPECT_EQ(cap, learned);
  // A cap an instruction cannot compile under (Triton's wgmma) fails the link, naming the option.
  auto ws = load_triton("matmul_ws");
  ASSERT_TRUE(ws);
  auto matmul = take(ws, "matmul_ws_kernel", 0, 115168);
  ASSERT_TRUE(matmul);
  Scope s;
  s.options = "max-registers=32";
  s.add(matmul, 4);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  BuiltImage img;
  EXPECT_EQ(build_superkernel(s.request(), &img), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "Insufficient registers (32)")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "(the scope option max-registers=32 caps the link)")) << sk::last_error();
  EXPECT_FALSE(contains(sk::last_error(), "lowered")) << sk::last_error();
}

// A parameter whose address the kernel takes (`__grid_constant__`: a CUtensorMap for TMA, as nvcc
// and Triton's host-side tensor descriptors pass it) is passed as the generic address of its
// bytes, wherever the super kernel holds them: the kernel's arithmetic on the parameter-space
// address is followed from the mov that takes it to the cvta.param that makes it generic, which
// reads the address passed instead; its values read by ld.param are loaded through it. The
// rewrite compiles.
TEST(CudaPtx, AParameterWhoseAddressIsTakenIsPassedAsTheGenericAddressOfItsBytes) {
  auto nvcc = load("grid_constant.ptx");
  ASSERT_TRUE(nvcc);
  auto tma = take(nvcc, "tma_copy_global", 128);
  ASSERT_TRUE(tma);
  EXPECT_EQ(sk::signature_to_string(tma->signature), "{u64[16]}@128,ptr");
  EXPECT_EQ(tma->ptx->by_address, std::vector<uint32_t>{0});
  EXPECT_TRUE(
      has_rewrite(tma->ptx->rewrites, "parameter 'tma_copy_global_param_0' passed as the address of its bytes"));
  auto coefficients = take(nvcc, "grid_constant_global", 64);
  ASSERT_TRUE(coefficients);
  EXPECT_EQ(sk::signature_to_string(coefficients->signature), "{u32[10]},ptr");
  EXPECT_EQ(coefficients->ptx->by_address, std::vector<uint32_t>{0});
  const std::string text = text_of(nvcc->bytes);
  EXPECT_TRUE(contains(text, ".param .b64 tma_copy_global_param_0,")) << text;
  EXPECT_TRUE(contains(text, ".param .b64 grid_constant_global_param_0,")) << text;
  // nvcc: `mov.b64 %rd2, P` goes; `cvta.param.u64 %rd4, %rd2` reads the address passed.
  EXPECT_FALSE(std::regex_search(text, std::regex("mov\\.b64\\s+%rd2, tma_copy_global_param_0"))) << text;
  EXPECT_FALSE(contains(text, "cvta.param")) << text;
  EXPECT_TRUE(contains(text, "ld.param.b64 %rd4, [tma_copy_global_param_0];")) << text;
  EXPECT_TRUE(contains(text, "ld.param.b64 %rd5, [grid_constant_global_param_0];")) << text;
  // A member read from the bytes, through the same address.
  EXPECT_TRUE(contains(text,
                       "{ .reg .b64 %sk_pq; ld.param.b64 %sk_pq, [grid_constant_global_param_0]; ld.f32 %f2, "
                       "[%sk_pq+36]; }"))
      << text;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text, nvcc->ptx->link_arch, &log), 0) << log;

  // Triton's host-side tensor descriptors: the 32-bit form, `mov.b32 %r6, P`, then
  // `cvt.u64.u32 %rd4, %r6` and `cvta.param.u64 %rd1, %rd4`.
  auto triton = load_triton("tma_scale");
  ASSERT_TRUE(triton);
  auto scale = take(triton, "tma_scale_kernel", 0, 4104);
  ASSERT_TRUE(scale);
  EXPECT_EQ(sk::signature_to_string(scale->signature),
            "{u64[16]}@64,u32,u32,u64,u64,{u64[16]}@64,u32,u32,u64,u64,f32,ptr,ptr");
  EXPECT_EQ(scale->ptx->by_address, (std::vector<uint32_t>{0, 5}));
  const std::string t = text_of(triton->bytes);
  EXPECT_TRUE(contains(t, "ld.param.b64 %rd1, [tma_scale_kernel_param_0];")) << t;
  EXPECT_TRUE(contains(t, "ld.param.b64 %rd2, [tma_scale_kernel_param_5];")) << t;
  EXPECT_FALSE(std::regex_search(t, std::regex("mov\\.b32\\s+%r6, tma_scale_kernel_param_0"))) << t;
  EXPECT_FALSE(std::regex_search(t, std::regex("cvt\\.u64\\.u32\\s+%rd4, %r6"))) << t;
  EXPECT_EQ(sk::cuda_test::ptxas(t, triton->ptx->link_arch, &log), 0) << log;

  // A scalar whose address is taken passes the same way; constant offsets are followed.
  auto scalar = load_text(".param .u32 n, .param .u64 out",
                          "mov.u64 %rd1, n;\ncvta.param.u64 %rd2, %rd1;\nld.u32 %r1, [%rd2];\n"
                          "ld.param.u64 %rd3, [out];\nst.global.u32 [%rd3], %r1;");
  auto k = take(scalar, "k");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->ptx->by_address, std::vector<uint32_t>{0});
  EXPECT_TRUE(contains(text_of(scalar->bytes), ".param .b64 n,")) << text_of(scalar->bytes);
  EXPECT_EQ(sk::cuda_test::ptxas(text_of(scalar->bytes), "sm_90", &log), 0) << log;
  auto offsets = load_text(".param .align 8 .b8 s[32], .param .u64 out",
                           "mov.b32 %r1, s;\nadd.s32 %r2, %r1, 16;\ncvt.u64.u32 %rd1, %r2;\nsub.s64 %rd2, %rd1, 4;\n"
                           "@%p1 cvta.param.u64 %rd3, %rd2;\nld.u32 %r3, [%rd3];\nld.param.u64 %rd4, [out];\n"
                           "st.global.u32 [%rd4], %r3;");
  ASSERT_TRUE(take(offsets, "k"));
  EXPECT_TRUE(contains(text_of(offsets->bytes), "@%p1 ld.param.b64 %rd3, [s]; @%p1 add.s64 %rd3, %rd3, 12;"))
      << text_of(offsets->bytes);
  EXPECT_EQ(sk::cuda_test::ptxas(std::regex_replace(text_of(offsets->bytes), std::regex("\\.reg \\.b32 %r<8>;"),
                                                    ".reg .b32 %r<8>;\n.reg .pred %p1;\nsetp.eq.u32 %p1, %r7, 0;"),
                                 "sm_90", &log),
            0)
      << log;

  // Read through a register that holds its address, as CUB's kernels read a struct parameter
  // (`mov.b64 %rd387, P; ld.param.u8 %rs16, [%rd387]; ld.param.u32 %r1176, [%rd387+8]`).
  auto by_register = load_text(".param .align 8 .b8 s[32], .param .u64 out",
                               "mov.b64 %rd1, s;\nld.param.u8 %r1, [%rd1];\nld.param.v2.u32 {%r2, %r3}, [%rd1+8];\n"
                               "add.s64 %rd2, %rd1, 16;\nld.param.u64 %rd3, [%rd2+8];\nld.param.u64 %rd4, [out];\n"
                               "st.global.u32 [%rd4], %r1;\nst.global.v2.u32 [%rd4+4], {%r2, %r3};\n"
                               "st.global.u64 [%rd4+16], %rd3;");
  ASSERT_TRUE(take(by_register, "k"));
  const std::string via = text_of(by_register->bytes);
  for (const char *load : {"ld.param.b64 %sk_pq, [s]; ld.u8 %r1, [%sk_pq]; }",
                           "ld.param.b64 %sk_pq, [s]; ld.v2.u32 {%r2, %r3}, [%sk_pq+8]; }",
                           "ld.param.b64 %sk_pq, [s]; ld.u64 %rd3, [%sk_pq+24]; }"})
    EXPECT_TRUE(contains(via, load)) << load << " in:\n" << via;
  EXPECT_EQ(sk::cuda_test::ptxas(via, "sm_90", &log), 0) << log << via;

  // What the rewrite cannot follow is refused by name: parameters read through a register
  // address it does not follow beside it, another use of the parameter or of a register holding
  // its address, a cvta.param of an address from elsewhere, a helper's.
  auto loaded_address = load_text(".param .align 8 .b8 s[16]",
                                  "mov.u64 %rd1, s;\nld.global.u64 %rd2, [%rd7];\nld.param.u32 %r1, [%rd2+4];\n"
                                  "cvta.param.u64 %rd3, %rd1;");
  EXPECT_EQ(refused(loaded_address, "k"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "register address (ld.param.u32 [%rd2]) that holds no parameter's address"))
      << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "parameter 's'")) << sk::last_error();
  auto other_use = load_text(".param .align 64 .b8 s[128]", "prefetch.param.tensormap [s];");
  EXPECT_EQ(refused(other_use, "k"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "prefetch.param.tensormap")) << sk::last_error();
  auto unknown = load_text(".param .align 64 .b8 s[128]", "mov.u64 %rd1, s;\nadd.u64 %rd2, %rd1, s;");
  EXPECT_EQ(refused(unknown, "k"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "uses parameter 's', whose address it takes")) << sk::last_error();
  auto stored = load_text(".param .align 64 .b8 s[128]",
                          "mov.u64 %rd1, s;\nst.global.u64 [%rd7], %rd1;\ncvta.param.u64 %rd2, %rd1;");
  EXPECT_EQ(refused(stored, "k"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "uses the address of parameter 's' (in %rd1)")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "(st.global.u64)")) << sk::last_error();
  auto elsewhere = load_text(".param .align 64 .b8 s[128]",
                             "mov.u64 %rd1, s;\ncvta.param.u64 %rd2, %rd1;\nld.global.u64 %rd3, [%rd2];\n"
                             "cvta.param.u64 %rd4, %rd3;");
  EXPECT_EQ(refused(elsewhere, "k"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "makes %rd3 a generic address")) << sk::last_error();
  auto narrow = load_text(".param .align 64 .b8 s[128]", "mov.u32 %r1, s;\ncvta.param.u32 %r2, %r1;");
  EXPECT_EQ(refused(narrow, "k"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "32-bit generic address")) << sk::last_error();
  const std::string helper_text =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".func (.param .b64 r) h(.param .b64 a)\n{\n.reg .b64 %rd<3>;\nld.param.u64 %rd1, [a];\n"
      "cvta.param.u64 %rd2, %rd1;\nst.param.b64 [r], %rd2;\nret;\n}\n"
      ".visible .entry k(.param .align 64 .b8 s[128])\n{\n.reg .b64 %rd<4>;\nmov.u64 %rd1, s;\n"
      "cvta.param.u64 %rd3, %rd1;\n{ .param .b64 a0; .param .b64 r0; st.param.b64 [a0], %rd3;\n"
      "call (r0), h, (a0); }\nret;\n}\n";
  const std::shared_ptr<const CudaModule> helper = load_ptx(helper_text, "h.ptx");
  ASSERT_TRUE(helper);
  EXPECT_EQ(refused(helper, "k"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "'h', which it calls, makes a parameter address generic (cvta.param.u64)"))
      << sk::last_error();
}

// A struct parameter indexed at run time, as PyTorch's multi-tensor kernels index their
// metadata by block (param_index.cu): nvcc computes parameter-space addresses from the one it
// takes (`add.s64 %rd8, %rd5, %rd7`) and reads through them. Fused, the register that took the
// address is given the generic address of the bytes, the arithmetic stays, and each ld.param
// through a computed address is a load through the generic one. Addresses computed in fewer
// than 64 bits, or used otherwise than read through, are refused by name.
TEST(CudaPtx, AParameterIndexedAtRunTimeIsReadThroughItsGenericAddress) {
  auto nvcc = load("param_index.ptx");
  ASSERT_TRUE(nvcc);
  auto k = take(nvcc, "multi_tensor_scale");
  ASSERT_TRUE(k);
  EXPECT_EQ(sk::signature_to_string(k->signature), "u32,{u64[20]},f32,f32");
  EXPECT_EQ(k->ptx->by_address, std::vector<uint32_t>{1});
  EXPECT_TRUE(has_rewrite(k->ptx->rewrites, "the kernel computes addresses in it at run time"))
      << k->ptx->rewrites[0];
  const std::string text = text_of(nvcc->bytes);
  EXPECT_TRUE(std::regex_search(text, std::regex("ld\\.param\\.b64 %rd5, \\[multi_tensor_scale_param_1\\];")))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("add\\.s64\\s+%rd8, %rd5, %rd7;"))) << text;
  EXPECT_TRUE(contains(text, "ld.u8 %r9, [%rd8+80];")) << text;
  EXPECT_TRUE(contains(text, "ld.u64 %rd14, [%rd1];")) << text;
  EXPECT_TRUE(contains(text, "ld.u64 %rd15, [%rd1+32];")) << text;
  EXPECT_FALSE(std::regex_search(text, std::regex("ld\\.param\\.\\w+\\s+[^,]+, \\[%rd"))) << text;
  // cat's metadata, indexed by blockIdx.y; a table both made generic for a helper and indexed.
  auto cat = take(nvcc, "cat_rows");
  ASSERT_TRUE(cat);
  EXPECT_EQ(cat->ptx->by_address, std::vector<uint32_t>{1});
  auto table = take(nvcc, "table_lookup");
  ASSERT_TRUE(table);
  EXPECT_EQ(table->ptx->by_address, std::vector<uint32_t>{0});
  EXPECT_TRUE(has_rewrite(table->ptx->rewrites, "the kernel computes addresses in it at run time"));
  // The scalars beside it are still passed by value.
  EXPECT_TRUE(std::regex_search(text, std::regex("ld\\.param\\.u32\\s+%r7, \\[multi_tensor_scale_param_0\\];")))
      << text;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text, nvcc->ptx->link_arch, &log), 0) << log;

  // A register given several addresses (a pointer stepping through the parameter) is computed
  // too: it takes the generic address, steps from it, and is made generic by a move.
  auto loop =
      load_text(".param .align 64 .b8 s[128], .param .u64 out",
                "mov.u64 %rd1, s;\nadd.u64 %rd1, %rd1, 8;\ncvta.param.u64 %rd2, %rd1;\nld.u32 %r1, "
                "[%rd2];\nld.param.u32 %r2, [%rd1+4];\nld.param.u32 %r3, [%rd1+-8];\nld.param.u64 %rd3, [out];\n"
                "st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r3};");
  ASSERT_TRUE(take(loop, "k"));
  const std::string stepped = text_of(loop->bytes);
  for (const char *line : {"ld.param.b64 %rd1, [s];", "add.u64 %rd1, %rd1, 8;", "mov.b64 %rd2, %rd1;",
                           "ld.u32 %r2, [%rd1+4];", "ld.u32 %r3, [%rd1+-8];"})
    EXPECT_TRUE(contains(stepped, line)) << line << " in:\n" << stepped;
  EXPECT_EQ(sk::cuda_test::ptxas(stepped, "sm_90", &log), 0) << log << stepped;

  // Where a generic address cannot be: computed in 32 bits, truncated, stored, split.
  const struct {
    const char *body, *why;
  } refusals[] = {
      {"mov.u32 %r1, s;\nadd.s32 %r2, %r1, %r3;\nld.param.u32 %r4, [%r2];",
       "computes the address of parameter 's' in %r1 at run time, in fewer than 64 bits (mov.u32)"},
      {"mov.u64 %rd1, s;\nadd.s64 %rd2, %rd1, %rd3;\ncvt.u32.u64 %r1, %rd2;\nld.param.u32 %r2, [%rd2];",
       "in %r1 at run time, in fewer than 64 bits (cvt.u32.u64)"},
      {"mov.u64 %rd1, s;\nadd.s64 %rd2, %rd1, %rd3;\nst.global.u64 [%rd4], %rd2;\nld.param.u32 %r2, [%rd2];",
       "uses the address of parameter 's' (in %rd2) in a way libsk cannot rewrite (st.global.u64)"},
      {"mov.u64 %rd1, s;\nadd.s64 %rd2, %rd1, %rd3;\nmov.b64 {%r1, %r2}, %rd2;\nld.param.u32 %r3, [%rd2];",
       "(in %rd2) in a way libsk cannot rewrite (mov.b64)"},
  };
  for (const auto &r : refusals) {
    EXPECT_EQ(refused(load_text(".param .align 8 .b8 s[64]", r.body), "k"), SK_ERR_UNSUPPORTED) << r.body;
    EXPECT_TRUE(contains(sk::last_error(), r.why)) << r.why << " in " << sk::last_error();
  }
}

// Triton choosing between two pointer parameters by a condition (an engine's fused q/k norm,
// qk_norm in decode_step.py): LLVM selects between the parameters' 32-bit parameter-space
// addresses and loads the pointer through the one chosen (`mov.b32 %r43, P3; mov.b32 %r44, P2;
// selp.b32 %r45, %r44, %r43, %p2; ld.param.b64 %rd12, [%r45]`). Fused, those registers are
// widened to 64-bit twins holding generic addresses, and the load reads through the one chosen.
TEST(CudaPtx, ASelectBetweenParameterAddressesIsWidenedToGenericAddresses) {
  auto triton = load_triton("qk_norm");
  ASSERT_TRUE(triton);
  auto k = take(triton, "qk_norm_kernel");
  ASSERT_TRUE(k) << sk::last_error();
  EXPECT_EQ(k->ptx->by_address, (std::vector<uint32_t>{2, 3}));
  const std::string text = text_of(triton->bytes);
  for (const char *line : {".reg .b64 %sk_wr43; ld.param.b64 %sk_wr43, [qk_norm_kernel_param_3];",
                           ".reg .b64 %sk_wr44; ld.param.b64 %sk_wr44, [qk_norm_kernel_param_2];",
                           ".reg .b64 %sk_wr45; selp.b64 %sk_wr45, %sk_wr44, %sk_wr43, %p2;",
                           "ld.b64 %rd12, [%sk_wr45];", ".param .b64 qk_norm_kernel_param_2,"})
    EXPECT_TRUE(contains(text, line)) << line << " in:\n" << text;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text, triton->ptx->link_arch, &log), 0) << log;

  // A known address moved or offset into a widened register gives its twin the generic address
  // (the move of the parameter's own goes), a cvt to 64 bits moves the twin; a guard stays.
  auto shapes = load_text(
      ".param .align 8 .b8 a[16], .param .align 8 .b8 b[16], .param .u32 c, .param .u64 out",
      ".reg .pred %p1;\nld.param.u32 %r0, [c];\nsetp.eq.u32 %p1, %r0, 0;\nmov.u32 %r1, a;\nmov.u32 %r2, b;\n"
      "add.s32 %r3, %r2, 8;\n@%p1 mov.b32 %r4, %r1;\nselp.b32 %r5, %r4, %r3, %p1;\n"
      "cvt.u64.u32 %rd1, %r5;\nld.param.u32 %r6, [%rd1+4];\nld.param.u32 %r7, [%r5];\n"
      "ld.param.u64 %rd2, [out];\nst.global.v2.u32 [%rd2], {%r6, %r7};");
  auto widened = take(shapes, "k");
  ASSERT_TRUE(widened) << sk::last_error();
  EXPECT_EQ(widened->ptx->by_address, (std::vector<uint32_t>{0, 1}));
  const std::string t = text_of(shapes->bytes);
  for (const char *line : {".reg .b64 %sk_wr3; ld.param.b64 %sk_wr3, [b]; add.s64 %sk_wr3, %sk_wr3, 8;",
                           ".reg .b64 %sk_wr4; @%p1 ld.param.b64 %sk_wr4, [a];",
                           ".reg .b64 %sk_wr5; selp.b64 %sk_wr5, %sk_wr4, %sk_wr3, %p1;", "mov.b64 %rd1, %sk_wr5;",
                           "ld.u32 %r6, [%rd1+4];", "ld.u32 %r7, [%sk_wr5];"})
    EXPECT_TRUE(contains(t, line)) << line << " in:\n" << t;
  EXPECT_EQ(sk::cuda_test::ptxas(t, "sm_90", &log), 0) << log << t;

  // Fused beside another kernel, linked by nvJitLink.
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  Scope s;
  s.add(take(load_triton("rope"), "rope_kernel"), 2);  // 32 threads, as qk_norm
  s.add(k, 2);
  ASSERT_EQ(s.make_plan(2), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
}

// A struct aligned beyond 8 bytes passed by value (a float4, an int4: `.align 16`) has a
// signature, `{u64[2]}@16`, and is passed as nvcc passes it to a callee.
TEST(CudaPtx, AnAggregateAlignedBeyondEightBytesIsPassedByValue) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load_text(".param .align 16 .b8 v[16], .param .u64 out",
                     ".reg .f32 %f<5>;\nld.param.v4.f32 {%f1, %f2, %f3, %f4}, [v];\nadd.f32 %f1, %f1, %f4;\n"
                     "ld.param.u64 %rd1, [out];\nst.global.f32 [%rd1], %f1;");
  auto k = take(m, "k");
  ASSERT_TRUE(k);
  EXPECT_EQ(sk::signature_to_string(k->signature), "{u64[2]}@16,ptr");
  EXPECT_TRUE(k->ptx->by_address.empty());
  Scope s;
  s.add(take(load_triton("rope"), "rope_kernel"), 2);  // 32 threads, as k
  s.add(k, 2);
  ASSERT_EQ(s.make_plan(2), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_TRUE(contains(img.ptx, ".extern .func k(.param .align 16 .b8 p0[16], .param .b64 p1);")) << img.ptx;
}

// Fused, each such parameter's bytes lie among the super kernel's argument slots on the alignment
// their type asks (a tensor map's 64 or 128 bytes: the step's slots and the slot within them are
// aligned, the array declared so), and the call passes their generic address: of the entry's
// parameters, of the argument buffer when the arguments do not fit them, or the address a slot
// holds when read by reference. From global memory a tensor map is acquired for the tensor-map
// proxy first. The linked SASS reads the tensor maps with TMA (UTMALDG, UTMASTG) in each case.
TEST(CudaPtx, TensorMapsAreReadWhereTheSuperKernelHoldsThem) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto nvcc = load("grid_constant.ptx");
  auto triton = load_triton("tma_scale");
  Scope s;
  s.add(take(load_triton("silu_mul"), "silu_mul_kernel"), 4);  // 6 slots: the next step is padded
  s.add(take(triton, "tma_scale_kernel", 0, 4104), 4);
  s.add(take(nvcc, "tma_copy_global", 128), 4);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  sk::cuda::EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK) << sk::last_error();
  EXPECT_EQ(spec.steps[1].arg_base, 8u) << "a 64-byte boundary";
  EXPECT_EQ(spec.steps[2].arg_base, 64u) << "a 128-byte boundary: tma_scale takes 43 slots";
  EXPECT_EQ(spec.steps[1].by_address, (std::vector<uint32_t>{0, 5}));
  const char *fence = "fence.proxy.tensormap::generic.acquire.sys";
  auto reads_maps_with_tma = [](const BuiltImage &img, const char *how) {
    if (sk::cuda_test::nvdisasm_path().empty()) return;
    int rc = 0;
    const std::string sass = sk::cuda_test::disassemble(img, &rc);
    ASSERT_EQ(rc, 0) << sass;
    for (const char *k : {"tma_scale_kernel", "tma_copy_global"}) {
      const std::string f = sk::cuda_test::sass_function(sass, k);
      EXPECT_TRUE(contains(f, "UTMALDG")) << how << ": " << k << ":\n" << f;
    }
    EXPECT_TRUE(contains(sk::cuda_test::sass_function(sass, "tma_scale_kernel"), "UTMASTG")) << how;
  };
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_TRUE(contains(img.ptx, ".param .align 128 .b8 sk_args[")) << img.ptx;
  EXPECT_TRUE(contains(img.ptx, ".extern .func tma_scale_kernel(.param .b64 p0, .param .b32 p1")) << img.ptx;
  // Parameter 5 of tma_scale: its slots 0..15 hold parameter 0, 16..19 the tensor's shape and
  // strides, 20..23 nothing: parameter 5 starts at slot 24.
  EXPECT_TRUE(contains(img.ptx, "cvta.param.u64 %x5, %t5;\n    add.u64 %x5, %x5, 192;\n    st.param.b64 [c5], %x5;"))
      << img.ptx;
  EXPECT_FALSE(contains(img.ptx, fence)) << "a map among the parameters needs no fence";
  reads_maps_with_tma(img, "in the parameters");

  BuildRequest buffered = s.request();
  buffered.force_buffer = true;
  ASSERT_EQ(build_superkernel(buffered, &img), SK_OK) << sk::last_error();
  EXPECT_TRUE(contains(
      img.ptx, "add.u64 %x5, %t5, 192;\n    " + std::string(fence) + " [%x5], 128;\n    st.param.b64 [c5], %x5;"))
      << img.ptx;
  reads_maps_with_tma(img, "in the argument buffer");

  Scope by_ref;
  by_ref.add(take(nvcc, "tma_copy_global", 128), 4, 0, {}, 1u);
  ASSERT_EQ(by_ref.make_plan(8), SK_OK) << sk::last_error();
  ASSERT_EQ(build_superkernel(by_ref.request(), &img), SK_OK) << sk::last_error();
  EXPECT_TRUE(contains(img.ptx, "ld.param.u64 %x0, [%t5+0];\n    " + std::string(fence) +
                                    " [%x0], 128;\n    st.param.b64 [c0], %x0;"))
      << img.ptx;
}

// Triton's device-side tensor descriptors (tl.make_tensor_descriptor) are built in the kernel,
// in its part of the global scratch buffer the caller passes (global_scratch_size bytes a
// program, at the program's linear index): nothing of a plain launch to rewrite but the block
// index. The cluster-scoped shared address of a TMA load is the block's own.
TEST(CudaPtx, DeviceSideTensorDescriptorsFuse) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto copy = take(load_triton("tma_copy"), "tma_copy_kernel", 0, 4104);
  ASSERT_TRUE(copy);
  EXPECT_TRUE(copy->ptx->by_address.empty());
  Scope s;
  s.add(copy, 4);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  // A plain kernel with `.shared::cluster` TMA loads (libcu++'s form) is not a cluster kernel.
  auto nvcc = load("grid_constant.ptx");
  EXPECT_TRUE(contains(text_of(nvcc->bytes), "cp.async.bulk.tensor.2d.shared::cluster.global"));
  EXPECT_TRUE(take(nvcc, "tma_copy_global", 128));
}

// Triton's program_id(1): the kernel reads its grid registers from __sk_grid, which libsk's
// entry defines (the step's shape: sk_kernel_options.grid); the rewrite compiles.
TEST(CudaPtx, ATwoDimensionalGridIsReadFromTheStep) {
  auto m = load_triton("grid2d");
  ASSERT_TRUE(m);
  auto k = take(m, "grid2d_kernel");
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->ptx->multi_dimensional_grid);
  EXPECT_TRUE(has_rewrite(k->ptx->rewrites, "%ctaid.y read from the step's grid shape (__sk_grid)"));
  EXPECT_TRUE(has_rewrite(k->ptx->rewrites, "%ctaid.x read from the step's grid shape (__sk_grid)"));
  const std::string text = text_of(m->bytes);
  EXPECT_FALSE(contains(text, "%ctaid")) << "the grid is libsk's";
  EXPECT_TRUE(contains(text, ".extern .func (.param .b32 sk_r) __sk_grid\n(.param .b32 sk_a)\n;")) << text;
  EXPECT_TRUE(contains(text, "st.param.b32 [sk_a], 0; call (sk_r), __sk_grid, (sk_a);")) << text;
  EXPECT_TRUE(contains(text, "st.param.b32 [sk_a], 1; call (sk_r), __sk_grid, (sk_a);")) << text;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text, m->ptx->link_arch, &log), 0) << log;
  // A one-dimensional Triton kernel keeps its plain block index.
  EXPECT_FALSE(take(load_triton("rmsnorm"), "rmsnorm_kernel", 0, 16)->ptx->multi_dimensional_grid);
}

// Which functions read the grid from __sk_grid: those a kernel that reads a grid register beyond
// x reaches, x included (the x index is the block's modulo the x extent), a helper it shares
// with a one-dimensional kernel too; that kernel's own reads stay the device API's.
TEST(CudaPtx, EveryFunctionAMultiDimensionalKernelReachesReadsTheGridFromTheStep) {
  // An entry that reads two grid registers and calls the helper `column`, which reads %ctaid.x.
  auto entry = [](const std::string &name, const std::string &a, const std::string &b) {
    return ".visible .entry " + name +
           "(.param .u64 out)\n{\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<3>;\n  mov.u32 %r1, " + a +
           ";\n  mov.u32 %r2, " + b +
           ";\n  { .param .b32 c; call (c), column, (); ld.param.b32 %r3, [c]; }\n  add.u32 %r4, %r1, %r2;\n"
           "  add.u32 %r4, %r4, %r3;\n  ld.param.u64 %rd1, [out];\n  st.global.u32 [%rd1], %r4;\n  ret;\n}\n";
  };
  const std::string text = std::string(R"(.version 8.0
.target sm_90
.address_size 64
.func (.param .b32 r) column()
{
  .reg .b32 %r<2>;
  mov.u32 %r1, %ctaid.x;
  st.param.b32 [r], %r1;
  ret;
}
)") + entry("plane", "%ctaid.y", "%nctaid.z") +
                           entry("line", "%ctaid.x", "%nctaid.x");
  const std::shared_ptr<const CudaModule> m = load_ptx(text, "planes.ptx");
  ASSERT_TRUE(m);
  EXPECT_TRUE(take(m, "plane", 32)->ptx->multi_dimensional_grid);
  EXPECT_FALSE(take(m, "line", 32)->ptx->multi_dimensional_grid);
  const std::string out = text_of(m->bytes);
  auto body = [&](const std::string &name) {
    const size_t at = out.find(" " + name + "(");
    return out.substr(at, out.find("\tret;", at) - at);
  };
  EXPECT_TRUE(contains(body("column"), "[sk_a], 0; call (sk_r), __sk_grid")) << body("column");
  EXPECT_TRUE(contains(body("plane"), "[sk_a], 1; call (sk_r), __sk_grid")) << body("plane");
  EXPECT_TRUE(contains(body("plane"), "[sk_a], 5; call (sk_r), __sk_grid")) << body("plane");
  EXPECT_TRUE(contains(body("line"), "call (sk_r), sk_block_idx, ();")) << body("line");
  EXPECT_TRUE(contains(body("line"), "call (sk_r), sk_block_num, ();")) << body("line");
  EXPECT_FALSE(contains(body("line"), "__sk_grid")) << body("line");
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(out, m->ptx->link_arch, &log), 0) << log;
}

// The step table gives each step its grid's x and y extents (z is what is left), a step without
// a shape its block_dim and 1; the entry links with __sk_grid and calls it from the kernel.
TEST(CudaPtx, TheStepTableCarriesEachStepsGrid) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto grid2d = load_triton("grid2d");
  Scope s;
  s.add(take(grid2d, "grid2d_kernel"), 16);
  s.add(take(load_triton("silu_mul"), "silu_mul_kernel"), 8);
  s.add(take(grid2d, "grid2d_kernel"), 24);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  s.plan.steps[0].kernel.grid = {4, 4, 1};
  s.plan.steps[2].kernel.grid = {2, 3, 4};
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  auto word = [&](size_t step, uint32_t w) {
    return img.table.at(sk::cuda::kTableHeaderWords + sk::cuda::kStepWords * step + w);
  };
  EXPECT_EQ(word(0, sk::cuda::kStepGridX), 4u);
  EXPECT_EQ(word(0, sk::cuda::kStepGridY), 4u);
  EXPECT_EQ(word(1, sk::cuda::kStepGridX), 8u);
  EXPECT_EQ(word(1, sk::cuda::kStepGridY), 1u);
  EXPECT_EQ(word(2, sk::cuda::kStepGridX), 2u);
  EXPECT_EQ(word(2, sk::cuda::kStepGridY), 3u);
  if (sk::cuda_test::nvdisasm_path().empty()) GTEST_SKIP() << sk::cuda_test::kNoNvdisasm;
  int rc = 0;
  const std::string sass = sk::cuda_test::disassemble(img, &rc);
  ASSERT_EQ(rc, 0) << sass;
  EXPECT_TRUE(contains(sk::cuda_test::sass_function(sass, "grid2d_kernel"), "__sk_grid"))
      << sk::cuda_test::sass_function(sass, "grid2d_kernel");
  EXPECT_FALSE(sk::cuda_test::sass_function(sass, "__sk_grid").empty()) << "the entry's library defines it";
}

// PTX for another GPU, and text that is not PTX as far as the rewrite reads it (two headers).
TEST(CudaPtx, PtxForAnotherGpuOrMalformedIsRefusedNamingTheFile) {
  const std::string rms = text_of(read_file(triton_path("rmsnorm.ptx")));
  auto load_text = [](const std::string &t, const char *label, const std::string &arch = "sm_90") {
    std::shared_ptr<const CudaModule> m;
    return sk::cuda::load_cuda_module(t.data(), t.size(), label, &m, arch);
  };
  EXPECT_EQ(load_text(rms, "rms.ptx", "sm_80"), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "rms.ptx")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "sm_90a")) << sk::last_error();
  EXPECT_EQ(load_text(rms, "rms.ptx", "sm_100"), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "architecture-specific")) << sk::last_error();
  std::string newer = rms;
  newer.replace(newer.find("sm_90a"), 6, "sm_100");
  EXPECT_EQ(load_text(newer, "new.ptx"), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "sm_100")) << sk::last_error();
  std::string open = rms.substr(0, rms.rfind("\tret;"));
  EXPECT_EQ(load_text(open, "cut.ptx"), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "cut.ptx: line ")) << sk::last_error();
  EXPECT_EQ(load_text(".version 9.0\n.address_size 64\n", "notarget.ptx"), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "no .target")) << sk::last_error();
  // Two modules' texts one after the other (a fuzzer's find: the second header moved where a
  // link declares past the first, and the cut of a kernel read as garbage).
  const std::string rope = text_of(read_file(triton_path("rope.ptx")));
  EXPECT_EQ(load_text(rope + rms, "two.ptx"), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "two.ptx: line ") &&
              contains(sk::last_error(),
                       "'.version' after a declaration: a module's .version, .target and "
                       ".address_size head it, once each"))
      << sk::last_error();
  EXPECT_EQ(load_text(".version 9.0\n.version 9.0\n.target sm_90\n.address_size 64\n", "twice.ptx"),
            SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "twice.ptx: line 2: '.version' a second time")) << sk::last_error();
  // A body cut short whose brackets are not balanced (a fuzzer's find: the `]` closed the
  // function's `{`, and the body read as ended there).
  const std::string unbalanced = rms.substr(0, rms.find("\tret;")) + "\tmov.u32 %r1, %r2];\n";
  EXPECT_EQ(load_text(unbalanced, "unbalanced.ptx"), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk::last_error(), "unbalanced.ptx: line ") && contains(sk::last_error(), "is never closed"))
      << sk::last_error();
  // A function whose name is not a word (a fuzzer's find: a byte of no word, which a name made
  // from it would not continue).
  const std::string head = ".version 8.0\n.target sm_90\n.address_size 64\n";
  for (const char *name : {"\xa9", "+"}) {
    EXPECT_EQ(load_text(head + ".visible .func " + name + "()\n{\nret;\n}\n", "nameless.ptx"), SK_ERR_BAD_BINARY)
        << name;
    EXPECT_TRUE(contains(sk::last_error(), "nameless.ptx: line 4: a function without a name")) << sk::last_error();
  }
  // A `.loc` line is skipped whole by every reader, a bracket on it too (a fuzzer's find: the
  // parser matched brackets across it, the one-program join dropped it).
  std::string loc = rms;
  loc.insert(loc.find("\tret;"), "\t.loc 1 2 3 rmsnorm_kernel(\n");
  EXPECT_EQ(load_text(loc, "loc.ptx"), SK_OK) << sk::last_error();
  // Any prefix of the text: a clear refusal or a module, never a crash.
  for (size_t n = 1; n < rms.size(); n += 97) {
    const std::string cut = rms.substr(0, n);
    std::shared_ptr<const CudaModule> m;
    const sk_status st = sk::cuda::load_cuda_module(cut.data(), cut.size(), "prefix.ptx", &m, "sm_90");
    EXPECT_TRUE(st == SK_OK || st == SK_ERR_BAD_BINARY) << n << ": " << sk::last_error();
  }
}

// nvcc -fatbin with PTX only (code=compute_90) and for an older architecture (compute_80): the
// PTX the device runs is taken, as the driver's JIT would take it. A plain nvcc -c object (what
// a build without -rdc compiles) holds a linked cubin, which cannot be called, and its PTX; an
// nvcc -dc object (CMake's CUDA_SEPARABLE_COMPILATION) and its -fatbin a relocatable cubin
// whose __global__ kernels cannot be called either, and its PTX.
TEST(CudaPtx, AFatbinaryWithoutTheDevicesSassGivesItsPtx) {
  for (const char *file : {"decode_global_ptx.fatbin", "decode_global_sm80.fatbin", "decode_global.o",
                           "decode_global_rdc.o", "decode_global_rdc.fatbin"}) {
    SCOPED_TRACE(file);
    auto m = load(file);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, sk::cuda::InputKind::Ptx);
    EXPECT_TRUE(contains(m->label, std::string(file) + " (compute_")) << m->label;
    EXPECT_TRUE(contains(m->label, " PTX)")) << m->label;
    EXPECT_TRUE(take(m, "residual_add_global"));
  }
}

// A shared library as nvcc -shared links it (libdecode_two.so: decode_global.cu and
// early_return_global.cu, each unit's fatbinary in .nv_fatbin, their kernels linked SASS): each
// unit's PTX is a part of its own, the library lists every kernel, each is taken from its unit
// with its launch facts, and kernels of both units fuse into one program ptxas compiles. A name
// it lacks lists its kernels; a library of SASS alone says what to build.
TEST(CudaPtx, ASharedLibrarysKernelsFuseFromEachTranslationUnitsPtx) {
  auto m = load("libdecode_two.so");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->library);
  ASSERT_EQ(m->ptx_units.size(), 2u) << m->global_kernels_note;
  // Loading read each unit's kernel names, not its PTX; taking a kernel reads its unit alone,
  // once, whichever threads take kernels of it at once.
  EXPECT_FALSE(m->ptx_unit_if_read(0) || m->ptx_unit_if_read(1));
  EXPECT_EQ(m->ptx_units[1].entries.size(), 7u);
  // Listing its kernels reads no unit either: the names scanned at load.
  EXPECT_EQ(m->declared_kernels().size(), m->ptx_units[0].entries.size() + m->ptx_units[1].entries.size());
  EXPECT_FALSE(m->ptx_unit_if_read(0) || m->ptx_unit_if_read(1));
  std::vector<std::shared_ptr<CudaKernel>> taken(8);
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < taken.size(); ++i)
      threads.emplace_back([&, i] { taken[i] = take(m, i % 2 ? "er_guard" : "er_strided", 128); });
    for (std::thread &t : threads) t.join();
  }
  for (const auto &k : taken) EXPECT_TRUE(k && k->module == m->ptx_unit_if_read(1));
  EXPECT_FALSE(m->ptx_unit_if_read(0)) << "decode_global.cu's unit is not read for early_return_global.cu's kernels";
  EXPECT_TRUE(contains(m->label, "libdecode_two.so (the PTX of 2 of its ")) << m->label;
  EXPECT_TRUE(contains(m->ptx_unit(0)->label, "libdecode_two.so (compute_90 PTX, translation unit "))
      << m->ptx_unit(0)->label;
  auto rms = take(m, "rmsnorm_global");
  auto guard = take(m, "er_guard", 128);
  ASSERT_TRUE(rms && guard);
  EXPECT_EQ(rms->module, m->ptx_unit(0));
  EXPECT_EQ(guard->module, m->ptx_unit(1));
  EXPECT_EQ(rms->threads, 256u);
  EXPECT_EQ(rms->static_shared, 132u);
  EXPECT_EQ(m->declared_kernels().size(), m->ptx_unit(0)->metadata.size() + m->ptx_unit(1)->metadata.size());
  EXPECT_EQ(refused(m, "no_such_kernel"), SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(
      sk::last_error(),
      "no __global__ kernel 'no_such_kernel' in libdecode_two.so (the PTX of 2 of its 3 translation units)"))
      << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "rmsnorm_global, rope_global")) << sk::last_error();

  Scope s;
  s.add(rms, 4);
  s.add(take(m, "residual_add_global", 128), 8);
  s.add(guard, 8);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  ASSERT_FALSE(img.program_ptx.empty()) << img.why_linked;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(img.program_ptx, "sm_90", &log, true), 0) << log;

  // SASS alone: each unit's linked cubin, its kernels launched as compiled, read when one is
  // taken; for another architecture, what to build.
  const std::vector<uint8_t> sass = kernel_bytes("libdecode_sass.so");
  std::shared_ptr<const CudaModule> linked;
  ASSERT_EQ(sk::cuda::load_cuda_module(sass.data(), sass.size(), "libdecode_sass.so", &linked, "sm_90"), SK_OK)
      << sk::last_error();
  EXPECT_TRUE(linked->ptx_units.empty());
  ASSERT_FALSE(linked->sass_units.empty());
  EXPECT_TRUE(contains(linked->label, "the SASS of ")) << linked->label;
  EXPECT_EQ(linked->declared_kernels().size(), 6u);
  const std::shared_ptr<CudaKernel> plain = take(linked, "residual_add_global");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->plain);
  EXPECT_EQ(sk::signature_to_string(plain->signature), "ptr,ptr,ptr,u32");
  EXPECT_EQ(plain->block[0], 256u);
  EXPECT_TRUE(contains(plain->module->label, "libdecode_sass.so (sm_90 cubin, translation unit "))
      << plain->module->label;
  std::shared_ptr<const CudaModule> none;
  EXPECT_EQ(sk::cuda::load_cuda_module(sass.data(), sass.size(), "libdecode_sass.so", &none, "sm_80"),
            SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "libdecode_sass.so: the fatbinaries of its ")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "hold SASS for sm_90")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "no PTX or SASS the device (sm_80) runs")) << sk::last_error();
}

// PTX beside a relocatable cubin with __global__ kernels that the reader refuses (here a target
// past every GPU): the cubin is read, as before there was PTX to read, and its __global__
// kernels' refusal says why their PTX could not be taken.
TEST(CudaPtx, UnreadablePtxBesideACubinOfGlobalKernelsIsNamedInTheirRefusal) {
  std::vector<uint8_t> bytes = kernel_bytes("decode_global_rdc.fatbin");
  const std::string target = ".target sm_90";
  const auto at = std::search(bytes.begin(), bytes.end(), target.begin(), target.end());
  ASSERT_NE(at, bytes.end()) << "the PTX is stored plain (--compress-mode=none)";
  std::copy_n(".target sm_99", target.size(), at);
  std::shared_ptr<const CudaModule> m;
  ASSERT_EQ(sk::cuda::load_cuda_module(bytes.data(), bytes.size(), "patched.fatbin", &m, "sm_90"), SK_OK)
      << sk::last_error();
  EXPECT_EQ(m->kind, sk::cuda::InputKind::Cubin);
  EXPECT_EQ(m->label, "patched.fatbin (sm_90 cubin)");
  EXPECT_EQ(refused(m, "rmsnorm_global"), SK_ERR_UNSUPPORTED);
  const std::string msg = sk::last_error();
  EXPECT_TRUE(contains(msg, "compiled to SASS")) << msg;
  EXPECT_TRUE(contains(msg, "the PTX beside it cannot be read: ")) << msg;
  EXPECT_TRUE(contains(msg, "sm_99")) << msg;
}

namespace {

// The step's SASS of a linked super kernel: its entry calls each sub-kernel from one site, and
// no sub-kernel's code ends its thread (EXIT belongs to the entry alone).
void expect_called_once_and_returning(const std::string &sass, const std::vector<std::string> &subkernels) {
  const std::string entry = sk::cuda_test::sass_function(sass, "sk_superkernel_entry");
  ASSERT_FALSE(entry.empty()) << sass;
  const std::regex call("\\bCALL\\.[A-Z.]*\\s+`?\\(?([A-Za-z0-9_$.]+)\\)?");
  std::map<std::string, size_t> calls;
  for (auto it = std::sregex_iterator(entry.begin(), entry.end(), call); it != std::sregex_iterator(); ++it)
    ++calls[(*it)[1].str()];
  for (const std::string &k : subkernels) {
    EXPECT_EQ(calls[k], 1u) << k << " in:\n" << entry;
    const std::string body = sk::cuda_test::sass_function(sass, k);
    ASSERT_FALSE(body.empty()) << k;
    EXPECT_EQ(count(body, "EXIT"), 0u) << k << ":\n" << body;
    EXPECT_GT(count(body, "RET"), 0u) << k << ":\n" << body;
  }
}

}  // namespace

// The decode step as one super kernel: Triton's five 128-thread kernels, nvcc's six __global__
// kernels at 128 threads, and a libsk `__device__` sub-kernel, linked by nvJitLink for sm_90a
// (Triton's target), which the sm_90 cubin links into.
TEST(CudaPtx, TritonGlobalAndDeviceSubKernelsFuseInOneLink) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  Scope s;
  s.name = "decode_step";
  std::vector<std::string> names;
  for (const TritonFixture &f : kTriton) {
    if (f.threads != 128) continue;
    s.add(take(load_triton(f.file), f.kernel, 0, f.shared), 4);
    names.push_back(f.kernel);
  }
  auto global = load("decode_global.ptx");
  for (const char *g : kGlobal) {
    s.add(take(global, g, 128, std::string(g) == "decode_attention_global" ? 1024 : 0), 4);
    names.push_back(g);
  }
  s.add(sk::cuda_test::kernel(load("chain.cubin"), "chain_step"), 4);
  names.push_back("chain_step");
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_TRUE(contains(img.ptx, ".target sm_90a")) << "the entry is linked for Triton's sm_90a";
  EXPECT_EQ(img.dynamic_shared >= 2048u, true) << "the largest extern shared need: " << img.dynamic_shared;
  if (sk::cuda_test::nvdisasm_path().empty()) GTEST_SKIP() << sk::cuda_test::kNoNvdisasm;
  int rc = 0;
  const std::string sass = sk::cuda_test::disassemble(img, &rc);
  ASSERT_EQ(rc, 0) << sass;
  expect_called_once_and_returning(sass, names);
}

// The same __global__ kernels compiled to LTO-IR (nvcc -dc -dlto -ltoir): read from the PTX
// the IR links to alone, they are PTX kernels with their launch facts and device API as
// nvcc -ptx's are (not an LTO-IR sub-kernel's assumed sk_sync_all), and fuse as those do, with
// narrower ones calling their copies, beside a libsk LTO-IR sub-kernel of another module (the
// link then -lto) and a cubin's.
TEST(CudaPtx, LtoIrGlobalKernelsFuseFromThePtxTheirIrLinksTo) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load("decode_global.ltoir");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, sk::cuda::InputKind::LtoIr);
  ASSERT_EQ(m->ptx_units.size(), 1u) << m->global_kernels_note;
  EXPECT_TRUE(contains(m->ptx_unit(0)->label, "decode_global.ltoir (the PTX of its LTO-IR)"))
      << m->ptx_unit(0)->label;
  auto ptx = load("decode_global.ptx");
  for (const char *g : kGlobal) {
    SCOPED_TRACE(g);
    const sk::cuda::PtxKernel *from_ir = m->ptx_unit(0)->ptx->find(g), *from_nvcc = ptx->ptx->find(g);
    ASSERT_TRUE(from_ir && from_nvcc);
    EXPECT_TRUE(from_ir->entry);
    EXPECT_EQ(from_ir->signature, from_nvcc->signature);
    bool listed = false;  // the module's kernels, as sk_module_inspect lists them
    for (const sk::KernelMetadata &k : m->metadata) listed |= k.name == g;
    EXPECT_TRUE(listed);
  }
  auto rms = take(m, "rmsnorm_global");
  ASSERT_TRUE(rms);
  EXPECT_EQ(rms->module, m->ptx_unit(0));
  EXPECT_EQ(rms->threads, 256u);
  EXPECT_EQ(rms->threads_from, ".maxntid");
  EXPECT_EQ(rms->static_shared, 132u);
  EXPECT_EQ(rms->usage, sk::kUsesBlockIdx);
  EXPECT_EQ(sk::signature_to_string(rms->signature), "ptr,ptr,ptr,u32,f32");
  EXPECT_EQ(refused(m, "silu_mul_global"), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "sk_kernel_desc.threads")) << sk::last_error();

  Scope s;
  s.name = "decode_step";
  std::vector<std::string> names;
  for (const char *g : kGlobal) {
    s.add(take(m, g, 128, std::string(g) == "decode_attention_global" ? 1024 : 0), 4);
    names.push_back(g);
  }
  s.add(sk::cuda_test::kernel(load("lto.ltoir"), "lto_scale"), 4);
  s.add(sk::cuda_test::kernel(load("chain.cubin"), "chain_step"), 4);
  names.push_back("chain_step");
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_TRUE(img.program_ptx.empty()) << "with LTO-IR and a cubin, a link";
  if (!sk::cuda_test::nvdisasm_path().empty()) {
    int rc = 0;
    const std::string sass = sk::cuda_test::disassemble(img, &rc);
    ASSERT_EQ(rc, 0) << sass;
    expect_called_once_and_returning(sass, names);
  }

  // At 256 and 128 threads in one super kernel: the narrower calls its copy; alone (PTX
  // sub-kernels only) they are one program for the driver's JIT, which ptxas compiles.
  Scope widths;
  widths.add(take(m, "rmsnorm_global", 256), 4);
  widths.add(take(m, "rmsnorm_global", 128), 4);
  widths.add(take(m, "residual_add_global", 128), 4);
  ASSERT_EQ(widths.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage narrow;
  ASSERT_EQ(build_superkernel(widths.request(), &narrow), SK_OK) << sk::last_error();
  EXPECT_EQ(narrow.threads, 256u);
  EXPECT_TRUE(contains(narrow.ptx, "rmsnorm_global$w128")) << narrow.ptx;
  ASSERT_FALSE(narrow.program_ptx.empty()) << narrow.why_linked;
  EXPECT_TRUE(contains(narrow.program_ptx, " rmsnorm_global$w128(")) << narrow.program_ptx;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(narrow.program_ptx, "sm_90", &log, true), 0) << log;
}

// What -gencode arch=compute_90,code=lto_90 writes (CMake's CUDA IPO builds) holds LTO-IR in a
// form nvJitLink reads only as a whole link: refused, saying what to build instead.
TEST(CudaPtx, AFatbinaryOfLtoIrAloneSaysWhatToBuild) {
  const std::vector<uint8_t> bytes = kernel_bytes("decode_global_lto.o");
  std::shared_ptr<const CudaModule> m;
  EXPECT_EQ(sk::cuda::load_cuda_module(bytes.data(), bytes.size(), "decode_global_lto.o", &m, "sm_90"),
            SK_ERR_INCOMPATIBLE);
  const std::string msg = sk::last_error();
  EXPECT_TRUE(contains(msg, "decode_global_lto.o")) << msg;
  EXPECT_TRUE(contains(msg, "holds LTO-IR for lto_90")) << msg;
  EXPECT_TRUE(contains(msg, "-dlto -arch=sm_90")) << msg;
  EXPECT_TRUE(contains(msg, "nvcc -dc -dlto -ltoir")) << msg;
}

// Triton's wgmma tiles are swizzled on absolute shared addresses, laid out for the 1 KiB boundary
// where a plain launch starts its dynamic shared memory; the linker starts it right after the
// entry's static variables (nvcc's rmsnorm_global has 132 bytes), whatever the extern array's
// .align. The entry pads its static memory to the boundary, and only where a sub-kernel has
// dynamic shared memory; the linked SASS addresses the Triton kernel's global_smem there.
TEST(CudaPtx, DynamicSharedMemoryStartsOnTheBoundaryOfAPlainLaunch) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  constexpr uint32_t kBoundary = 1024, kReserved = 1024;  // sm_90 reserves 1 KiB of every block
  auto global = load("decode_global.ptx");
  Scope plain;
  plain.add(take(global, "rmsnorm_global", 128), 4);
  plain.add(take(load_triton("silu_mul"), "silu_mul_kernel"), 4);
  ASSERT_EQ(plain.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage unpadded;
  ASSERT_EQ(build_superkernel(plain.request(), &unpadded), SK_OK) << sk::last_error();
  EXPECT_EQ(unpadded.shared_pad, 0u) << "no sub-kernel has dynamic shared memory";
  EXPECT_NE(unpadded.static_shared % kBoundary, 0u) << unpadded.static_shared;
  EXPECT_FALSE(contains(unpadded.ptx, "__sk_shared_pad"));

  Scope s;
  s.add(take(global, "rmsnorm_global", 128), 4);
  s.add(take(load_triton("project"), "project_kernel", 0, 49152), 16);
  ASSERT_EQ(s.make_plan(16), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_EQ(img.static_shared % kBoundary, 0u) << img.static_shared;
  EXPECT_EQ(img.static_shared, unpadded.static_shared + img.shared_pad) << "the pad, and nothing else, added";
  EXPECT_GT(img.shared_pad, 0u);
  EXPECT_LT(img.shared_pad, kBoundary);
  EXPECT_TRUE(contains(img.ptx, "__sk_shared_pad[" + std::to_string(img.shared_pad) + "]")) << img.ptx;
  // The same plan on other cores shares the padded entry.
  std::vector<uint32_t> table;
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  EXPECT_EQ(sk::cuda::replanned_table(s.request(), img, &table), SK_OK) << sk::last_error();
  if (sk::cuda_test::nvdisasm_path().empty()) GTEST_SKIP() << sk::cuda_test::kNoNvdisasm;
  int rc = 0;
  const std::string sass = sk::cuda_test::disassemble(img, &rc);
  ASSERT_EQ(rc, 0) << sass;
  const std::string project = sk::cuda_test::sass_function(sass, "project_kernel");
  ASSERT_FALSE(project.empty()) << sass;
  // global_smem: the shared window's first byte past the reservation, plus this immediate.
  char immediate[48];
  std::snprintf(immediate, sizeof immediate, "UMOV UR[0-9]+, 0x%x ;", img.static_shared - kReserved);
  EXPECT_TRUE(std::regex_search(project, std::regex(immediate))) << immediate << " in:\n" << project;
}

// Triton's rope runs 32 threads: it fuses with kernels of its own width (here nvcc's, told 32)
// in a block of 32, and with wider ones in theirs.
TEST(CudaPtx, PtxKernelsOfOneOrSeveralWidthsShareABlock) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto rope = take(load_triton("rope"), "rope_kernel");
  auto global = load("decode_global.ptx");
  Scope narrow;
  narrow.add(rope, 8);
  narrow.add(take(global, "residual_add_global", 32), 8);
  ASSERT_EQ(narrow.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  EXPECT_EQ(build_superkernel(narrow.request(), &img), SK_OK) << sk::last_error();
  EXPECT_EQ(img.threads, 32u);
  // Triton's rope (num_warps=1) beside a kernel of four warps: the block's first warp runs it.
  Scope mixed;
  mixed.add(rope, 8);
  mixed.add(take(load_triton("silu_mul"), "silu_mul_kernel"), 8);
  ASSERT_EQ(mixed.make_plan(8), SK_OK) << sk::last_error();
  ASSERT_EQ(build_superkernel(mixed.request(), &img), SK_OK) << sk::last_error();
  EXPECT_EQ(img.threads, 128u);
  EXPECT_TRUE(contains(img.ptx, "setp.ge.u32 %nt, %tt, 32;")) << img.ptx;
}

// A __global__ kernel in SASS cannot be called: the refusal says to load its PTX.
TEST(CudaPtx, AGlobalKernelInSassPointsAtItsPtx) {
  auto m = load("misc.cubin");
  ASSERT_TRUE(m);
  std::shared_ptr<CudaKernel> k;
  ASSERT_EQ(sk::cuda::make_cuda_kernel(m, "a_global_kernel", nullptr, "sk_module_get_kernel", &k),
            SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "load its PTX")) << sk::last_error();
}

// Mutated PTX (bytes flipped, lines dropped or repeated, cuts): a refusal or a module whose
// rewritten text reads again, never a crash (the CI's sanitizer builds run this too; the
// parsers fuzzer explores further).
TEST(CudaPtx, MutatedTextIsRefusedOrReadsAgain) {
  std::vector<std::string> texts;
  for (const TritonFixture &f : kTriton)
    texts.push_back(text_of(read_file(triton_path(std::string(f.file) + ".ptx"))));
  texts.push_back(sk::cuda_test::kernel_text("decode_global.ptx"));
  texts.push_back(sk::cuda_test::kernel_text("refuse_global.ptx"));
  uint32_t seed = 7;
  auto next = [&seed] { return seed = seed * 1664525u + 1013904223u; };
  size_t read = 0;
  for (int round = 0; round < 1000; ++round) {
    std::string t = texts[next() % texts.size()];
    for (int edits = 1 + next() % 4; edits > 0; --edits) {
      const size_t at = next() % t.size();
      switch (next() % 4) {
        case 0: t[at] = "{}();,.%@\n\"x0"[next() % 13]; break;
        case 1: t.erase(at, std::min<size_t>(t.size() - at - 1, next() % 200)); break;
        case 2: t.insert(at, t.substr(next() % t.size(), next() % 120)); break;
        case 3: t.resize(std::max<size_t>(at, 1)); break;
      }
    }
    PtxModule m;
    if (sk::cuda::read_ptx_module(t, "mutated.ptx", "sm_90", "9.0", &m) != SK_OK) {
      EXPECT_TRUE(contains(sk::last_error(), "mutated.ptx")) << sk::last_error();
      continue;
    }
    ++read;
    PtxModule again;
    EXPECT_EQ(sk::cuda::read_ptx_module(m.text, "rewritten.ptx", "sm_90", "9.0", &again), SK_OK)
        << "round " << round << ": " << sk::last_error();
  }
  EXPECT_GT(read, 0u);
}

// A super kernel linked for Blackwell (sm_100, sm_120): nvJitLink's executable cubin there
// keeps empty relocation sections, which the cubin reader takes as empty rather than unreadable.
// On sm_100 nvcc's sm_100 cubin of static-shared kernels joins the PTX kernels.
TEST(CudaPtx, AnEntryLinkedForBlackwellIsRead) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  const std::vector<uint8_t> bytes = kernel_bytes("decode_global.ptx");
  for (const char *arch : {"sm_100", "sm_120"}) {
    SCOPED_TRACE(arch);
    std::shared_ptr<const CudaModule> m;
    ASSERT_EQ(sk::cuda::load_cuda_module(bytes.data(), bytes.size(), "decode_global.ptx", &m, arch), SK_OK)
        << sk::last_error();
    Scope s;
    s.add(take(m, "rmsnorm_global", 128), 4);
    s.add(take(m, "residual_add_global", 128), 4);
    std::shared_ptr<const CudaModule> tiles;
    if (std::string(arch) == "sm_100") {
      tiles = load("shared_sm100.cubin");
      ASSERT_TRUE(tiles);
      s.add(sk::cuda_test::kernel(tiles, "tile_a"), 4);
      s.add(sk::cuda_test::kernel(tiles, "tile_in_helper"), 4);
    }
    ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
    BuiltImage img;
    ASSERT_EQ(build_superkernel(s.request(arch), &img), SK_OK) << sk::last_error();
    EXPECT_EQ("sm_" + std::to_string(img.info.sm), arch);
    if (tiles) EXPECT_GE(img.static_shared, 24u * 1024) << "tile_a's tile, in the shared overlay";
    const sk::elf::CubinFunction *entry = img.info.find(img.entry);
    ASSERT_NE(entry, nullptr) << img.entry;
    EXPECT_GT(entry->registers, 0u);
    // The premise: an empty SHT_RELA section in the linked cubin.
    const std::vector<uint8_t> &c = *img.cubin;
    ASSERT_GE(c.size(), sizeof(Elf64_Ehdr));
    Elf64_Ehdr eh;
    std::memcpy(&eh, c.data(), sizeof eh);
    size_t empty_rela = 0;
    for (size_t i = 0; i < eh.e_shnum && eh.e_shoff + (i + 1) * sizeof(Elf64_Shdr) <= c.size(); ++i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, c.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
      empty_rela += sh.sh_type == SHT_RELA && sh.sh_size == 0;
    }
    EXPECT_GT(empty_rela, 0u);
  }
}

namespace {

// Whether `text` defines function `name` (its `.entry` or `.func`, not a declaration).
bool defines(const std::string &text, const std::string &name) {
  return std::regex_search(text, std::regex("\\.(entry|func)[^;{]*\\b" + name + "\\s*\\([^;{]*\\{"));
}

// Whether the code of `text`, its comments aside (nvcc's `// .globl name`), says `name`.
bool says(const std::string &text, const std::string &name) {
  return contains(std::regex_replace(text, std::regex("//[^\\n]*"), ""), name);
}

}  // namespace

// A link compiles only the functions its kernels reach: of prune.cu's two kernels, one taken
// leaves out the other and its own helper, and keeps the helper both call and the function a
// module-scope variable points at (its declaration too); what is left compiles, and links into
// a super kernel whose cubin has none of the functions left out. -lineinfo's debug strings
// change nothing; -G's debug sections address every function by label, so nothing goes.
TEST(CudaPtx, ALinkCompilesOnlyWhatItsKernelsReach) {
  for (const char *file : {"prune.ptx", "prune_lineinfo.ptx"}) {
    SCOPED_TRACE(file);
    auto m = load(file);
    ASSERT_TRUE(m && m->ptx);
    EXPECT_FALSE(m->ptx->whole);
    const std::string taken = sk::cuda::ptx_text_for(*m->ptx, {"prune_taken"});
    for (const char *kept : {"prune_taken", "_Z12prune_sharedf", "_Z13prune_pointedf"})
      EXPECT_TRUE(defines(taken, kept)) << kept << " in:\n" << taken;
    EXPECT_TRUE(contains(taken, "prune_table = _Z13prune_pointedf;"));
    EXPECT_TRUE(std::regex_search(taken, std::regex("\\)\\s*_Z13prune_pointedf\\s*\\([^)]*\\)\\s*;")))
        << "the declaration the variable's initializer follows, kept:\n"
        << taken;
    for (const char *gone : {"prune_other", "_Z16prune_only_otherf", "_Z10prune_latef"})
      EXPECT_FALSE(says(taken, gone)) << gone << " in:\n" << taken;
    const std::string other = sk::cuda::ptx_text_for(*m->ptx, {"prune_other"});
    for (const char *kept :
         {"prune_other", "_Z12prune_sharedf", "_Z16prune_only_otherf", "_Z10prune_latef", "_Z13prune_pointedf"})
      EXPECT_TRUE(defines(other, kept)) << kept;
    EXPECT_FALSE(says(other, "prune_taken"));
    EXPECT_EQ(sk::cuda::ptx_text_for(*m->ptx, {"prune_taken", "prune_other"}), text_of(m->bytes));
    EXPECT_LT(taken.size(), other.size());
    for (const std::string *text : {&taken, &other}) {
      std::string log;
      EXPECT_EQ(sk::cuda_test::ptxas(*text, m->ptx->link_arch, &log), 0) << log << "\n" << *text;
    }
  }
  auto debug = load("prune_debug.ptx");
  ASSERT_TRUE(debug && debug->ptx);
  EXPECT_TRUE(debug->ptx->whole);
  EXPECT_EQ(sk::cuda::ptx_text_for(*debug->ptx, {"prune_taken"}), text_of(debug->bytes));
  // A kernel that runs fewer threads than its block, and reads %ntid.x: its copy counting them
  // is appended and calls the helpers as they are; the original goes unless the text stays
  // whole. With line information and -G debug sections (which address the original's labels),
  // the copy compiles too.
  for (const char *file : {"prune.ptx", "prune_lineinfo.ptx", "prune_debug.ptx"}) {
    SCOPED_TRACE(file);
    auto m = load(file);
    ASSERT_TRUE(m && m->ptx);
    EXPECT_EQ(sk::cuda::narrow_call_name(*m->ptx, "prune_other", 64, 128), "prune_other$w64");
    EXPECT_EQ(sk::cuda::narrow_call_name(*m->ptx, "prune_other", 128, 128), "prune_other");
    const std::string narrow = sk::cuda::ptx_text_for(*m->ptx, {}, nullptr, {{"prune_other", 64}});
    EXPECT_TRUE(defines(narrow, "prune_other\\$w64")) << narrow;  // a regex
    EXPECT_EQ(defines(narrow, "prune_other"), m->ptx->whole);
    for (const char *kept : {"_Z12prune_sharedf", "_Z16prune_only_otherf", "_Z10prune_latef"})
      EXPECT_TRUE(defines(narrow, kept)) << kept;
    const size_t at = narrow.rfind("prune_other$w64(");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(count(narrow.substr(at), "%ntid.x"), 0u) << narrow.substr(at);
    std::string log;
    EXPECT_EQ(sk::cuda_test::ptxas(narrow, m->ptx->link_arch, &log), 0) << log << "\n" << narrow;
  }

  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load("prune.ptx");
  Scope s;
  s.add(take(m, "prune_taken", 128), 4);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  for (const char *kept : {"prune_taken", "_Z12prune_sharedf", "_Z13prune_pointedf"})
    EXPECT_NE(img.info.find(kept), nullptr) << kept;
  for (const char *gone : {"prune_other", "_Z16prune_only_otherf", "_Z10prune_latef"})
    EXPECT_EQ(img.info.find(gone), nullptr) << gone;
}

// A kernel whose threads return before a __syncthreads() the others reach: its returns wait in
// __sk_leave and each barrier 0 it and its helper reach runs in two phases, __syncthreads_and/or
// counting too; a return the whole block takes alike, or none, or one before a barrier of a
// thread count only (a warpgroup's own) leaves the kernel as it was; such a barrier beside a
// __syncthreads() after the return is refused, named. The rewrite compiles, and links.
TEST(CudaPtx, AThreadThatReturnsBeforeABarrierKeepsItsBlockInStep) {
  auto m = load("early_return_global.ptx");
  ASSERT_TRUE(m && m->ptx);
  const std::string text = text_of(m->bytes);
  auto function = [&](const std::string &name) { return function_text(text, name); };
  for (const char *name : {"er_guard", "er_rounds"}) {
    SCOPED_TRACE(name);
    ASSERT_NE(m->ptx->find(name), nullptr);
    EXPECT_TRUE(has_rewrite(m->ptx->find(name)->rewrites, "__sk_leave"));
    const std::string f = function(name);
    EXPECT_FALSE(contains(f, "bar.sync") || contains(f, "bar.red")) << f;
    EXPECT_FALSE(std::regex_search(f, std::regex("\\bret;[^]*\\$__sk_left:"))) << "a return left:\n" << f;
    EXPECT_TRUE(contains(
        f, "$__sk_left:\n\t{ .reg .b32 %sk_nt; mov.u32 %sk_nt, %ntid.x; call __sk_leave, (%sk_nt); }\n\tret;"))
        << f;
    EXPECT_NE(take(m, name), nullptr);
  }
  const std::string guard = function("er_guard");
  EXPECT_EQ(count(guard, "barrier.sync 0, %sk_nt;"), 4u) << guard;
  EXPECT_EQ(count(guard, "barrier.red.popc.u32"), 4u) << guard;
  EXPECT_EQ(count(guard, ", 0, %sk_nt, "), 4u) << "each count: the kernel's threads";
  EXPECT_EQ(count(guard, "setp.ne.u32 %p"), 1u) << "the or: one true";
  EXPECT_EQ(count(guard, "setp.eq.u32 %p"), 1u) << "the and: none false";
  EXPECT_EQ(count(function("_Z9er_rotatePffi"), "barrier.sync 0, %sk_nt;"), 2u) << "the helper's barriers too";
  for (const char *name : {"er_block_uniform", "er_strided", "er_group"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(has_rewrite(m->ptx->find(name)->rewrites, "__sk_leave"));
    EXPECT_EQ(count(function(name), "bar.sync"), 1u) << function(name);
  }
  EXPECT_EQ(count(text, ".extern .func __sk_leave"), 1u);
  EXPECT_NE(refused(m, "er_counted"), SK_OK);
  EXPECT_TRUE(contains(sk::last_error(), "'er_counted'")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "'bar.sync 0, 64' may share barrier 0 with the returned threads' wait"))
      << sk::last_error();
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text, m->ptx->link_arch, &log), 0) << log << "\n" << text;

  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  Scope s;
  s.add(take(m, "er_guard"), 4);
  s.add(take(m, "er_rounds"), 4);
  s.add(take(m, "er_block_uniform"), 4);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  for (const char *linked : {"er_guard", "er_rounds", "_Z9er_rotatePffi", "__sk_leave"})
    EXPECT_NE(img.info.find(linked), nullptr) << linked;
}

// Which returns the load finds may leave a block's threads apart, read from the PTX's data and
// control flow: a value set on one side of a thread-dependent branch differs past it, a weak
// load at an address alike in every thread reads alike, a register written again with a
// constant no longer differs, __syncthreads_or's inner-scope predicates are not their namesakes
// outside, and a guarded `ret` on the thread index is itself a return the others may not take.
TEST(CudaPtx, AReturnIsFoundToLeaveThreadsApartFromTheDataItsBranchReads) {
  struct Case {
    const char *what, *body;
    bool rewritten;
  };
  const Case cases[] = {
      {"a value set on one side of a branch on the thread",
       "mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 5;\n@%p1 bra L1;\nmov.u32 %r2, 0;\nbra.uni L2;\n"
       "L1:\nmov.u32 %r2, 1;\nL2:\nsetp.ne.u32 %p2, %r2, 0;\n@%p2 bra L3;\nbar.sync 0;\nL3:",
       true},
      {"a weak load at the block's own address",
       "ld.param.u64 %rd1, [p];\nmov.u32 %r1, %ctaid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\n"
       "ld.global.u32 %r2, [%rd3];\nsetp.eq.u32 %p1, %r2, 0;\n@%p1 bra L3;\nbar.sync 0;\nL3:",
       false},
      {"a volatile load at the block's own address",
       "ld.param.u64 %rd1, [p];\nld.volatile.global.u32 %r2, [%rd1];\nsetp.eq.u32 %p1, %r2, 0;\n@%p1 bra L3;\n"
       "bar.sync 0;\nL3:",
       true},
      {"a register written again with a constant",
       "mov.u32 %r3, %tid.x;\nst.shared.u32 [s], %r3;\nmov.u32 %r3, 7;\nsetp.eq.u32 %p1, %r3, 0;\n@%p1 bra L3;\n"
       "bar.sync 0;\nL3:",
       false},
      {"the block's or, in its own scope",
       "mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 5;\n{\n.reg .pred %p1;\n.reg .pred %p2;\n"
       "setp.ne.u32 %p1, %r1, 0;\nbar.red.or.pred %p2, 0, %p1;\nselp.u32 %r2, 1, 0, %p2;\n}\n"
       "setp.eq.u32 %p3, %r2, 0;\n@%p3 bra L3;\nbar.sync 0;\nL3:",
       false},
      {"the outer predicate of the same name",
       "mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 5;\n{\n.reg .pred %p1;\n.reg .pred %p2;\n"
       "setp.ne.u32 %p1, %r1, 0;\nbar.red.or.pred %p2, 0, %p1;\n}\n@%p1 bra L3;\nbar.sync 0;\nL3:",
       true},
      {"a guarded ret on the thread", "mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 5;\n@%p1 ret;\nbar.sync 0;",
       true},
      {"a guarded ret on the block", "mov.u32 %r1, %ctaid.x;\nsetp.lt.u32 %p1, %r1, 5;\n@%p1 ret;\nbar.sync 0;",
       false},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    const std::shared_ptr<const CudaModule> m =
        load_ptx(std::string(".version 8.0\n.target sm_90\n.address_size 64\n.shared .align 4 .b8 s[4];\n"
                             ".visible .entry k(.param .u64 p)\n.reqntid 32\n{\n.reg .pred %p<4>;\n"
                             ".reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n") +
                     c.body + "\nret;\n}\n",
                 "apart.ptx");
    ASSERT_TRUE(m && m->ptx);
    EXPECT_EQ(has_rewrite(m->ptx->find("k")->rewrites, "__sk_leave"), c.rewritten);
    const std::string text = text_of(m->bytes);
    EXPECT_EQ(contains(text, "barrier.sync 0, %sk_nt;"), c.rewritten) << text;
    std::string log;
    EXPECT_EQ(sk::cuda_test::ptxas(text, m->ptx->link_arch, &log), 0) << log << "\n" << text;
  }
}

// Two nvcc kernels whose static tiles (28000 and 24000 bytes) add up past a block's 48 KiB: the
// link moves both into the shared overlay, where they share the bytes, and the entry's static
// shared memory is the larger tile's.
TEST(CudaPtx, KernelsWhoseTilesAddUpPastABlockShareTheOverlay) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load("shared_global.ptx");
  ASSERT_TRUE(m && m->ptx);
  EXPECT_EQ(m->ptx->find("sg_reverse")->static_shared, 28000u);
  EXPECT_EQ(m->ptx->find("sg_rotate")->static_shared, 24000u);
  Scope s;
  s.add(take(m, "sg_reverse"), 4);
  s.add(take(m, "sg_rotate"), 4);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_GE(img.static_shared, 28000u);
  EXPECT_LT(img.static_shared, 28000u + 2048u) << "one tile's bytes and the entry's reservation";
}

// cg::this_grid().sync(): the grid workspace its code reads from %envreg1/%envreg2 becomes the
// step's word in the sync buffer (__sk_grid_workspace), and the kernel synchronises its cores as
// sk_sync_all's do (the planner gives each of its blocks a block of the super kernel). Another
// launch environment register is refused, named.
TEST(CudaPtx, AGridSyncOfCooperativeGroupsSyncsTheStepsBlocks) {
  auto m = load("grid_sync.ptx");
  ASSERT_TRUE(m && m->ptx);
  sk::backend::KernelRequest flat{nullptr, 128, 0, {128, 1, 1}};  // cg reads %tid.y/z: a 1-D block
  for (const char *name : {"gs_normalize", "gs_neighbour"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<CudaKernel> k;
    ASSERT_EQ(sk::cuda::make_cuda_kernel(m, name, flat, "test", &k), SK_OK) << sk::last_error();
    EXPECT_EQ(k->usage & (sk::kUsesGridSync | sk::kUsesSyncAll), sk::kUsesGridSync);
    EXPECT_EQ(sk::sync_reason(k->usage, k->usage_paths), "cg::this_grid().sync()");
    EXPECT_TRUE(has_rewrite(m->ptx->find(name)->rewrites, "%envreg1 read as the address of the step's grid word"));
    EXPECT_TRUE(has_rewrite(m->ptx->find(name)->rewrites, "%envreg2 read as the address of the step's grid word"));
  }
  const std::string text = text_of(m->bytes);
  EXPECT_FALSE(contains(text, "%envreg")) << text;
  EXPECT_EQ(count(text, ".extern .func (.param .b32 sk_r) __sk_grid_workspace"), 1u);
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text, m->ptx->link_arch, &log), 0) << log;
  EXPECT_EQ(refused(load_text(".param .u64 out", "mov.u32 %r1, %envreg3;"), "k"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk::last_error(), "a launch environment register (reads %envreg3)")) << sk::last_error();

  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  Scope s;
  std::shared_ptr<CudaKernel> k;
  ASSERT_EQ(sk::cuda::make_cuda_kernel(m, "gs_neighbour", flat, "test", &k), SK_OK) << sk::last_error();
  s.add(k, 4);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_NE(img.info.find("__sk_grid_workspace"), nullptr);
  // More blocks than the super kernel's: refused, naming the grid sync.
  Scope big;
  big.add(k, 8);
  EXPECT_EQ(big.make_plan(4), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(
      contains(sk::last_error(), "'gs_neighbour' synchronises its cores (cg::this_grid().sync()) on block_dim 8"))
      << sk::last_error();
}

// Of a link's modules, each keeps the visible functions the others' kept functions call or
// their variables name, and those they call in turn in a third module; a visible function no
// kernel of the link reaches goes, with its call of a function nothing defines (which a whole
// program could not compile). Without the link's modules, every visible function stays.
TEST(CudaPtx, ALinkKeepsTheVisibleFunctionsItsOtherModulesCall) {
  const std::string head = ".version 8.0\n.target sm_90\n.address_size 64\n";
  auto func = [](const std::string &name, const std::string &calls) {
    return ".visible .func " + name + "()\n{\n" + (calls.empty() ? "" : "call " + calls + ";\n") + "ret;\n}\n";
  };
  const std::shared_ptr<const CudaModule> a =
      load_ptx(head + ".extern .func b_mid();\n.extern .func nobody_defines_this();\n.extern .func c_pointed();\n" +
                   ".visible .global .align 8 .u64 a_table[1] = {c_pointed};\n" +
                   ".visible .entry a_kernel()\n.reqntid 32\n{\ncall b_mid;\nret;\n}\n" +
                   func("a_unused", "nobody_defines_this"),
               "a.ptx");
  const std::shared_ptr<const CudaModule> b =
      load_ptx(head + ".extern .func c_leaf();\n" + func("b_mid", "c_leaf") + func("b_unused", ""), "b.ptx");
  const std::shared_ptr<const CudaModule> c =
      load_ptx(head + func("c_leaf", "") + func("c_pointed", "") + func("c_unused", ""), "c.ptx");
  ASSERT_TRUE(a && b && c);
  const std::vector<std::set<std::string>> called =
      sk::cuda::called_across({a->ptx.get(), b->ptx.get(), c->ptx.get()}, {{"a_kernel"}, {}, {}});
  EXPECT_EQ(called, (std::vector<std::set<std::string>>{{}, {"b_mid"}, {"c_leaf", "c_pointed"}}));
  const std::string a_text = sk::cuda::ptx_text_for(*a->ptx, {"a_kernel"}, nullptr, {}, &called[0]),
                    b_text = sk::cuda::ptx_text_for(*b->ptx, {}, nullptr, {}, &called[1]),
                    c_text = sk::cuda::ptx_text_for(*c->ptx, {}, nullptr, {}, &called[2]);
  EXPECT_TRUE(defines(a_text, "a_kernel")) << a_text;
  EXPECT_FALSE(contains(a_text, "a_unused") || contains(a_text, "call nobody_defines_this")) << a_text;
  EXPECT_TRUE(defines(b_text, "b_mid") && !contains(b_text, "b_unused")) << b_text;
  EXPECT_TRUE(defines(c_text, "c_leaf") && defines(c_text, "c_pointed") && !contains(c_text, "c_unused")) << c_text;
  const std::vector<std::pair<const CudaModule *, std::vector<const char *>>> exported = {
      {a.get(), {"a_unused"}}, {b.get(), {"b_mid", "b_unused"}}, {c.get(), {"c_leaf", "c_pointed", "c_unused"}}};
  for (const auto &[m, names] : exported)
    for (const char *name : names) EXPECT_TRUE(defines(sk::cuda::ptx_text_for(*m->ptx, {}), name)) << name;
}

// A function declared before it is defined, and called only by a kernel left out: its
// declaration goes with its definition, and the rest compiles; kept, it stays with both.
TEST(CudaPtx, ADeclarationGoesWithItsFunction) {
  const std::string text =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".func (.param .b32 r) late(.param .b32 a);\n"
      ".visible .entry keep(.param .u64 p)\n.reqntid 32\n{\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [p];\nret;\n}\n"
      ".entry drop(.param .u64 p)\n.reqntid 32\n{\n.reg .b32 %r<3>;\n"
      "{ .param .b32 a; .param .b32 r; st.param.b32 [a], 1; call (r), late, (a); ld.param.b32 %r1, [r]; }\n"
      "ret;\n}\n"
      ".func (.param .b32 r) late(.param .b32 a)\n{\n.reg .b32 %r<2>;\nld.param.b32 %r1, [a];\n"
      "st.param.b32 [r], %r1;\nret;\n}\n";
  const std::shared_ptr<const CudaModule> m = load_ptx(text, "decl.ptx");
  ASSERT_TRUE(m);
  const std::string kept = sk::cuda::ptx_text_for(*m->ptx, {"keep"});
  EXPECT_FALSE(contains(kept, "late")) << kept;
  EXPECT_FALSE(contains(kept, "drop")) << kept;
  EXPECT_TRUE(defines(kept, "keep")) << kept;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(kept, m->ptx->link_arch, &log), 0) << log << "\n" << kept;
  // An entry that is not .visible is made a `.visible .func` by an edit at its first token.
  const std::string dropped = sk::cuda::ptx_text_for(*m->ptx, {"drop"});
  EXPECT_EQ(count(dropped, "late"), 3u) << "declared, called, defined";
  EXPECT_TRUE(contains(dropped, "\n.visible .func drop(")) << dropped;
  EXPECT_FALSE(says(dropped, "keep")) << dropped;
  EXPECT_EQ(sk::cuda_test::ptxas(dropped, m->ptx->link_arch, &log), 0) << log << "\n" << dropped;
}

// A PTX kernel's static shared memory: the `.shared` variables of the module, or of a function,
// that it or a function it reaches names, once each, on its alignment. Fused, they move into the
// shared overlay the sub-kernels of a block share, apart only within one call tree (a helper's
// apart from both its callers'); a link past a block's 48 KiB names the kernels that fill it.
TEST(CudaPtx, StaticSharedMemoryIsWhatAKernelAndItsHelpersName) {
  const std::string text =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".shared .align 4 .b8 a[100];\n.shared .align 16 .v4 .f32 b[2];\n.shared .align 8 .u64 c;\n"
      ".func h()\n{\n.reg .b32 %r<2>;\nmov.u32 %r1, b;\nst.shared.u32 [%r1], 0;\nret;\n}\n"
      ".visible .entry k1()\n.reqntid 32\n{\nst.shared.u32 [a+4], 1;\ncall h, ();\nret;\n}\n"
      ".visible .entry k2()\n.reqntid 32\n{\n.shared .align 4 .b32 d[3];\nst.shared.u64 [c], 2;\n"
      "st.shared.u32 [d+8], 3;\ncall h, ();\nret;\n}\n";
  const std::shared_ptr<const CudaModule> m = load_ptx(text, "shared.ptx");
  ASSERT_TRUE(m);
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(text_of(m->bytes), "sm_90", &log), 0) << log;
  EXPECT_EQ(m->ptx->find("k1")->static_shared, 144u) << "a (100), b on 16 (32)";
  EXPECT_EQ(m->ptx->find("k2")->static_shared, 52u) << "b (32), c on 8 (8), its own d (12)";
  EXPECT_EQ(take(m, "k2")->static_shared, 52u);

  // Largest first, each at the lowest offset clear of its call trees' others: a at 0, b (both
  // trees) past it at 112, d and c (k2's) under a.
  const sk::elf::SharedOverlayLayout layout =
      sk::elf::layout_shared_overlay({&m->ptx->graph}, {{0, "k1"}, {0, "k2"}}, false);
  EXPECT_EQ(layout.bytes, 144u) << "k1's tree, not the 196 bytes of both";
  std::map<std::string, uint64_t> at;
  for (size_t v = 0; v < m->ptx->graph.shared_vars.size(); ++v)
    at[m->ptx->graph.shared_vars[v].name] = layout.offsets[0][v];
  EXPECT_EQ(at, (std::map<std::string, uint64_t>{{"a", 0}, {"b", 112}, {"c", 16}, {"d", 0}}));
  const sk::cuda::PtxOverlay place{"__sk_shared_overlay", layout.bytes, layout.align, &layout.offsets[0]};
  const std::string moved = sk::cuda::ptx_text_for(*m->ptx, {"k1", "k2"}, &place);
  EXPECT_FALSE(std::regex_search(moved, std::regex("\\.shared \\.align [0-9]+ \\.[a-z0-9. ]+ [abcd]\\b"))) << moved;
  for (const char *use :
       {".extern .shared .align 16 .b8 __sk_shared_overlay[144];", "[__sk_shared_overlay+0+4]",
        "mov.u32 %r1, __sk_shared_overlay+112;", "[__sk_shared_overlay+16]", "[__sk_shared_overlay+0+8]"})
    EXPECT_TRUE(contains(moved, use)) << use << " in:\n" << moved;
  EXPECT_EQ(sk::cuda_test::ptxas(moved, "sm_90", &log), 0) << log << moved;
  EXPECT_TRUE(contains(sk::cuda::ptx_text_for(*m->ptx, {"k1", "k2"}), ".shared .align 4 .b8 a[100];"))
      << "without an overlay, in place";

  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  const std::string big =
      ".version 8.0\n.target sm_90\n.address_size 64\n.shared .align 4 .b8 s1[30000];\n"
      ".shared .align 4 .b8 s2[20000];\n"
      ".visible .entry big1(.param .u32 i)\n.reqntid 32\n{\n.reg .b32 %r<3>;\nld.param.u32 %r1, [i];\n"
      "mov.u32 %r2, s1;\nadd.u32 %r2, %r2, %r1;\nst.shared.u8 [%r2], 1;\nret;\n}\n"
      ".visible .entry big2(.param .u32 i)\n.reqntid 32\n{\n.reg .b32 %r<3>;\nld.param.u32 %r1, [i];\n"
      "mov.u32 %r2, s2;\nadd.u32 %r2, %r2, %r1;\nst.shared.u8 [%r2], 2;\nret;\n}\n"
      ".visible .entry big3(.param .u32 i)\n.reqntid 32\n{\n.reg .b32 %r<3>;\nld.param.u32 %r1, [i];\n"
      "mov.u32 %r2, s1;\nst.shared.u8 [%r2], 3;\nmov.u32 %r2, s2;\nst.shared.u8 [%r2], 3;\nret;\n}\n";
  const std::shared_ptr<const CudaModule> both = load_ptx(big, "big.ptx");
  ASSERT_TRUE(both);
  {
    Scope s;
    s.add(take(both, "big1"), 2);
    s.add(take(both, "big2"), 2);
    ASSERT_EQ(s.make_plan(2), SK_OK) << sk::last_error();
    BuiltImage img;
    ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
    EXPECT_GE(img.static_shared, 30000u);
    EXPECT_LT(img.static_shared, 50000u) << "big1's and big2's variables share the overlay";
  }
  Scope s;
  s.add(take(both, "big1"), 2);
  s.add(take(both, "big3"), 2);
  ASSERT_EQ(s.make_plan(2), SK_OK) << sk::last_error();
  BuiltImage img;
  EXPECT_NE(build_superkernel(s.request(), &img), SK_OK);
  EXPECT_TRUE(contains(sk::last_error(), "too much shared data")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "'big3' 50000 bytes, 'big1' 30000 bytes")) << sk::last_error();
}

namespace {

// The registers ptxas -v gives the entry of a whole program (0 if it says none).
uint32_t entry_registers(const std::string &ptxas_output) {
  const size_t entry = ptxas_output.find("Compiling entry function 'sk_superkernel_entry'");
  const size_t used = ptxas_output.find("Used ", entry == std::string::npos ? 0 : entry);
  return used == std::string::npos ? 0 : (uint32_t)std::atoi(ptxas_output.c_str() + used + 5);
}

// Builds into `img` the super kernel of `kernels` (each with its blocks), planned for `cores`,
// which must be one program (else why it is linked).
void one_program(const std::vector<std::pair<std::shared_ptr<CudaKernel>, uint32_t>> &kernels, uint32_t cores,
                 BuiltImage *img) {
  Scope s;
  for (const auto &[k, blocks] : kernels) s.add(k, blocks);
  ASSERT_EQ(s.make_plan(cores), SK_OK) << sk::last_error();
  ASSERT_EQ(build_superkernel(s.request(), img), SK_OK) << sk::last_error();
  ASSERT_FALSE(img->program_ptx.empty()) << img->why_linked;
}

// A module of one `.entry` `name` that stores what its internal helper returns and the first
// byte of its own string, both named as nvcc names them in every module.
std::string helper_module(const char *name, int value, char letter) {
  const std::string v = std::to_string(value), l = std::to_string((int)letter);
  return ".version 8.0\n.target sm_90\n.address_size 64\n"
         ".global .align 1 .b8 $str[2] = {" +
         l +
         ", 0};\n"
         ".extern .shared .align 16 .b8 smem[];\n"
         ".func (.param .b32 r) helper()\n{\n.reg .b32 %v;\nmov.b32 %v, " +
         v +
         ";\nst.param.b32 [r], %v;\nret;\n}\n"
         ".visible .entry " +
         std::string(name) +
         "(.param .u64 p)\n.reqntid 32\n{\n"
         ".reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n"
         "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd1, %rd1;\n"
         "{\n.param .b32 ret0;\ncall (ret0), helper, ();\nld.param.b32 %r1, [ret0];\n}\n"
         "mov.u64 %rd2, $str;\ncvta.global.u64 %rd2, %rd2;\nld.u8 %r2, [%rd2];\nadd.s32 %r1, %r1, %r2;\n"
         "mov.u32 %r3, smem;\nst.shared.u32 [%r3], %r1;\nld.shared.u32 %r1, [%r3];\n"
         "st.global.u32 [%rd1], %r1;\nret;\n}\n";
}

}  // namespace

// A super kernel of PTX sub-kernels alone is also one program: the entry and the modules as
// linked, joined into one PTX text that the driver's JIT compiles whole (cuda/ptx_join.hpp).
// Compiled so by ptxas, Triton's decode-step kernels take the registers they take alone,
// where the link (each module compiled on its own, the kernels called functions) gives them
// the call ABI's: the joined text has one header, and the modules' line information in the
// program's file numbers (one `.file` per path; Triton's debug strings, which its `.loc`s name
// as inlined functions, kept, the other debug sections not), so the compiled program has
// line tables naming the Triton source, as each module compiled alone has.
TEST(CudaWholeProgram, PtxSubKernelsJoinIntoOneProgramThatTakesFewerRegisters) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  struct Case {
    std::vector<const char *> fixtures;
  };
  for (const Case &c : {Case{{"residual_add"}}, Case{{"rmsnorm", "gemv"}},
                        Case{{"residual_add", "rmsnorm", "silu_mul", "gemv", "decode_attention", "project"}}}) {
    std::vector<std::pair<std::shared_ptr<CudaKernel>, uint32_t>> kernels;
    std::string what;
    for (const char *f : c.fixtures) {
      const TritonFixture *fx = nullptr;
      for (const TritonFixture &t : kTriton)
        if (std::string(t.file) == f) fx = &t;
      ASSERT_TRUE(fx) << f;
      auto m = load_triton(f);
      ASSERT_TRUE(m);
      auto k = take(m, fx->kernel, fx->threads, fx->shared);
      ASSERT_TRUE(k);
      kernels.push_back({k, 4});
      what += std::string(what.empty() ? "" : ",") + f;
    }
    BuiltImage img;
    ASSERT_NO_FATAL_FAILURE(one_program(kernels, 8, &img)) << what;
    EXPECT_EQ(img.program_register_cap, 0u);
    const std::string &p = img.program_ptx;
    EXPECT_EQ(count(p, ".version "), 1u) << what;
    EXPECT_TRUE(p.starts_with(".version ") && contains(p, "\n.target sm_90a\n")) << what;
    for (const char *gone : {".debug_info", ".debug_abbrev", ".debug_macinfo"})
      EXPECT_EQ(count(p, gone), 0u) << what << ": " << gone;
    // Every fixture is decode_step.py, some inlining Triton's standard.py: one `.file` per path,
    // each module's debug strings, and every label a `.loc` names defined once.
    std::set<std::string> paths;
    size_t strings = 0;
    for (const char *f : c.fixtures) {
      const std::string text = text_of(load_triton(f)->bytes);
      strings += count(text, "\t.section\t.debug_str");
      const std::regex file("\\.file\\s+\\d+\\s+(\"[^\"]*\")");
      for (auto m = std::sregex_iterator(text.begin(), text.end(), file); m != std::sregex_iterator(); ++m)
        paths.insert((*m)[1]);
    }
    EXPECT_EQ(count(p, "\t.section\t.debug_str"), strings) << what;
    EXPECT_EQ(count(p, ".file 1 \"tests/kernels/triton/decode_step.py\""), 1u) << what;
    EXPECT_EQ(count(p, ".file "), paths.size()) << what;
    EXPECT_GT(count(p, "\n\t.loc 1 "), 10u) << what;
    EXPECT_EQ(count(p, "\n\t.loc\t"), 0u) << what;  // each module's line, renumbered
    const std::regex named(", function_name (\\$\\w+), inlined_at ");
    size_t inlined = 0;
    for (auto m = std::sregex_iterator(p.begin(), p.end(), named); m != std::sregex_iterator(); ++m, ++inlined)
      EXPECT_EQ(count(p, "\n" + (*m)[1].str() + ":"), 1u) << what << ": " << (*m)[1];
    EXPECT_EQ(inlined > 0, strings > 0) << what;
    EXPECT_EQ(count(p, ".extern .shared .align 16 .b8 global_smem[];"),
              c.fixtures.size() > 1 ? 1u : count(p, "global_smem[]"))
        << what;
    std::string log;
    std::vector<uint8_t> cubin;
    ASSERT_EQ(sk::cuda_test::ptxas(p, "sm_90a", &log, true, &cubin), 0) << what << ": " << log;
    const std::string compiled(cubin.begin(), cubin.end());
    EXPECT_TRUE(contains(compiled, ".debug_line") && contains(compiled, "decode_step.py")) << what;
    const sk::elf::CubinFunction *linked = img.info.find("sk_superkernel_entry");
    ASSERT_TRUE(linked);
    const uint32_t whole = entry_registers(log);
    EXPECT_GT(whole, 0u) << log;
    EXPECT_LT(whole, linked->registers) << what;
  }
}

// Names a module keeps to itself (nvcc's `$str`, an internal helper) are kept apart where two
// modules use the same: each module's become its own, in its declarations and every
// statement that names them (the entry's stay as they are); one `.extern .shared` array of a name is declared once; the
// entry's declarations of the kernels become forward declarations. The program compiles.
TEST(CudaWholeProgram, NamesEachModuleKeepsToItselfStayApart) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto a = load_ptx(helper_module("ka", 1, 'A'), "a.ptx"), b = load_ptx(helper_module("kb", 2, 'B'), "b.ptx");
  ASSERT_TRUE(a && b);
  auto ka = take(a, "ka", 32, 16), kb = take(b, "kb", 32, 16);
  ASSERT_TRUE(ka && kb);
  BuiltImage img;
  ASSERT_NO_FATAL_FAILURE(one_program({{ka, 2}, {kb, 2}}, 4, &img));
  const std::string &p = img.program_ptx;
  const size_t b_at = p.find("\n// b.ptx\n");
  ASSERT_NE(b_at, std::string::npos) << p;
  const std::string first = p.substr(0, b_at), second = p.substr(b_at);
  EXPECT_TRUE(contains(first, ".b8 $str_sk1[2] = {65, 0};") && contains(first, "mov.u64 %rd2, $str_sk1;") &&
              contains(first, ") helper_sk1()") && contains(first, "call (ret0), helper_sk1, ();"))
      << first;
  EXPECT_TRUE(contains(second, ".b8 $str_sk2[2] = {66, 0};") && contains(second, "mov.u64 %rd2, $str_sk2;") &&
              contains(second, ") helper_sk2()") && contains(second, "call (ret0), helper_sk2, ();"))
      << second;
  EXPECT_FALSE(contains(p, "helper,") || contains(p, "$str;")) << p;
  EXPECT_EQ(count(p, ".extern .shared .align 16 .b8 smem[];"), 1u) << p;
  EXPECT_EQ(count(p, ".extern .func"), 0u) << p;  // the entry's declarations of ka and kb: forward ones now
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(p, "sm_90", &log, true), 0) << log << "\n" << p;
}

// Two files compiled with -rdc=true (rdc_sum.cu, rdc_scale.cu) each define the template
// function and the inline variable of a header they share, weak: a link keeps one of each, and
// so does the program (the first part's), the other part's definitions left out. It compiles.
// Line information as the program numbers it: each module's `.file` numbers become the
// program's (one `.file` per path), in its `.loc`s and their inlined_at too; a label of the debug
// strings a `.loc` names as its inlined function keeps apart from another module's of the same
// name. A `.loc` that does not read as line information, or names a file its module does not
// declare, is left out; the other debug sections too. The program compiles, with line tables.
TEST(CudaWholeProgram, LineInformationKeepsEachModulesFilesApart) {
  const std::string head = ".version 8.0\n.target sm_90\n.address_size 64\n";
  auto module = [&](const char *kernel, const char *files) {
    return head + ".visible .func " + kernel +
           "()\n{\n\t.loc 2 11 7\n\t.loc 1 5 3, function_name $L__info_string0, inlined_at 2 11 7 // x.py:5:3\n"
           "\t.loc 7 1 1\n\t.loc 2 x(\n\tret;\n}\n" +
           files +
           "\t.section\t.debug_str\n\t{\n$L__info_string0:\n.b8 102\n.b8 0\n\t}\n"
           "\t.section\t.debug_abbrev\n\t{\n.b8 1\n\t}\n";
  };
  const std::string a = module("ka", "\t.file\t1 \"lib.py\"\n\t.file\t2 \"a.py\"\n"),
                    b = module("kb", "\t.file\t1 \"b.py\", 1700000000, 42\n\t.file\t2 \"lib.py\"\n");
  std::string out, why;
  ASSERT_TRUE(sk::cuda::join_ptx({{head, "entry"}, {a, "a.ptx"}, {b, "b.ptx"}}, "sm_90", &out, &why)) << why;
  // a.ptx: lib.py 1, a.py 2; b.ptx: b.py 3, lib.py 1 (declared by a.ptx already).
  EXPECT_EQ(count(out, ".file "), 3u) << out;
  for (const char *file : {".file 1 \"lib.py\"\n", ".file 2 \"a.py\"\n", ".file 3 \"b.py\"\n"})
    EXPECT_EQ(count(out, file), 1u) << file << " in\n" << out;
  EXPECT_EQ(count(out, "\t.loc 2 11 7\n"), 1u) << out;
  EXPECT_EQ(count(out, "\t.loc 1 11 7\n"), 1u) << out;
  EXPECT_EQ(count(out, "\t.loc 1 5 3, function_name $L__info_string0, inlined_at 2 11 7\n"), 1u) << out;
  EXPECT_EQ(count(out, "\t.loc 3 5 3, function_name $L__info_string0_sk2, inlined_at 1 11 7\n"), 1u) << out;
  EXPECT_EQ(count(out, "\n$L__info_string0:"), 1u) << out;
  EXPECT_EQ(count(out, "\n$L__info_string0_sk2:"), 1u) << out;
  EXPECT_EQ(count(out, ".loc 7") + count(out, "x(") + count(out, ".debug_abbrev"), 0u) << out;
  std::string log;
  std::vector<uint8_t> cubin;
  EXPECT_EQ(sk::cuda_test::ptxas(out, "sm_90", &log, false, &cubin), 0) << log << "\n" << out;
  const std::string compiled(cubin.begin(), cubin.end());
  for (const char *name : {".debug_line", "lib.py", "a.py", "b.py"}) EXPECT_TRUE(contains(compiled, name)) << name;
}

TEST(CudaWholeProgram, WeakDefinitionsOfSeveralModulesAreKeptOnceAsALinkKeepsThem) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto a = load("rdc_sum.ptx"), b = load("rdc_scale.ptx");
  ASSERT_TRUE(a && b);
  auto sum = take(a, "rdc_sum", 32), scale = take(b, "rdc_scale", 32);
  ASSERT_TRUE(sum && scale);
  BuiltImage img;
  ASSERT_NO_FATAL_FAILURE(one_program({{sum, 4}, {scale, 4}}, 4, &img));
  const std::string &p = img.program_ptx;
  const size_t second = p.find("rdc_scale.ptx\n");
  ASSERT_NE(second, std::string::npos) << p;
  const std::string weights = ".weak .global .align 4 .b8 kRdcWeights[16] = {";
  EXPECT_EQ(count(p, weights), 1u) << p;
  EXPECT_LT(p.find(weights), second) << p;
  const std::string template_fn = ".weak .func  (.param .b32 func_retval0) _Z12rdc_warp_sumIfET_S0_(";
  ASSERT_EQ(count(p, template_fn), 1u) << p;
  EXPECT_LT(p.find(template_fn), second) << p;
  EXPECT_EQ(count(p, "_Z12rdc_warp_sumIfET_S0__sk"), 0u) << p;  // one function, not renamed
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(p, "sm_90", &log, true), 0) << log << "\n" << p;

  // Hand-written: the visible definition is kept wherever it is, an earlier weak one becoming
  // its declaration (a function), or refused (a variable, declared before it is defined).
  using sk::cuda::PtxPart;
  const std::string head = ".version 8.0\n.target sm_90\n.address_size 64\n";
  const std::string weak_f = head +
                             ".weak .func (.param .b32 r) f()\n{\n.reg .b32 %v;\nmov.b32 %v, 1;\n"
                             "st.param.b32 [r], %v;\nret;\n}\n";
  const std::string strong_f = head +
                               ".visible .func (.param .b32 r) f()\n{\n.reg .b32 %v;\nmov.b32 %v, 2;\n"
                               "st.param.b32 [r], %v;\nret;\n}\n";
  const std::string user =
      head +
      ".extern .func (.param .b32 r) f();\n"
      ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r;\n.reg .b64 %rd;\n"
      "ld.param.u64 %rd, [p];\n{\n.param .b32 r0;\ncall (r0), f, ();\nld.param.b32 %r, [r0];\n}\n"
      "st.global.u32 [%rd], %r;\nret;\n}\n";
  std::string out, why;
  ASSERT_TRUE(sk::cuda::join_ptx({{user, "user.ptx"}, {weak_f, "w1.ptx"}, {strong_f, "s.ptx"}, {weak_f, "w2.ptx"}},
                                 "sm_90", &out, &why))
      << why;
  EXPECT_EQ(count(out, "mov.b32 %v, 1;"), 0u) << out;
  EXPECT_EQ(count(out, "mov.b32 %v, 2;"), 1u) << out;
  EXPECT_TRUE(contains(out, "// w1.ptx\n\n\n\n.visible .func (.param .b32 r) f();\n")) << out;
  EXPECT_TRUE(contains(out, "// user.ptx\n\n\n\n.visible .func (.param .b32 r) f();\n")) << out;
  EXPECT_EQ(sk::cuda_test::ptxas(out, "sm_90", &log, true), 0) << log << "\n" << out;
  // Weak alone: the first definition, a later declaration of it kept weak.
  ASSERT_TRUE(sk::cuda::join_ptx({{user, "user.ptx"}, {weak_f, "w1.ptx"}, {weak_f, "w2.ptx"}}, "sm_90", &out, &why))
      << why;
  EXPECT_EQ(count(out, "mov.b32 %v, 1;"), 1u) << out;
  EXPECT_TRUE(contains(out, "// user.ptx\n\n\n\n.weak .func (.param .b32 r) f();\n")) << out;
  EXPECT_EQ(sk::cuda_test::ptxas(out, "sm_90", &log, true), 0) << log << "\n" << out;
  EXPECT_FALSE(sk::cuda::join_ptx({{head + ".weak .global .align 4 .b32 v = 1;\n", "x.ptx"},
                                   {head + ".visible .global .align 4 .b32 v = 2;\n", "y.ptx"}},
                                  "sm_90", &out, &why));
  EXPECT_EQ(why, "x.ptx defines 'v' weak, and y.ptx after it (a variable)");
}

// A super kernel runs its widest sub-kernel's threads; one of fewer threads (nvcc's rmsnorm at
// 128 beside silu_mul at 256, as a decode step launches them) runs on the block's first ones:
// its call site skips the others, which go on to the step's end barrier, and it calls its copy
// for that many threads ("k$w128"), in which the barriers of the whole block and each %ntid.x
// count its own, as in the copies of the functions it reaches that count threads or call one
// that does. The originals stay as written for the kernels of the block's width and other
// modules, so one kernel or helper runs at several widths; the program compiles whole.
TEST(CudaPtx, ASubKernelOfFewerThreadsRunsOnTheBlocksFirstThreadsAndCountsItsOwn) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load("decode_global.ptx");
  ASSERT_TRUE(m);
  auto rms = take(m, "rmsnorm_global", 128), silu = take(m, "silu_mul_global", 256);
  ASSERT_TRUE(rms && silu);
  EXPECT_EQ(rms->ptx->narrow_refusal, "");
  BuiltImage img;
  ASSERT_NO_FATAL_FAILURE(one_program({{rms, 4}, {silu, 16}}, 16, &img));
  EXPECT_EQ(img.threads, 256u);
  EXPECT_EQ(count(img.ptx, "setp.ge.u32 %nt, %tt, 128;\n    @%nt bra.uni $called;"), 1u) << img.ptx;
  EXPECT_EQ(count(img.ptx, "%nt, %tt, 256"), 0u);
  EXPECT_EQ(count(img.ptx, "call rmsnorm_global$w128, ("), 1u) << img.ptx;
  EXPECT_EQ(count(img.program_ptx, " rmsnorm_global("), 0u);  // the original: no kernel of 256 calls it
  const std::string narrow = function_text(img.program_ptx, "rmsnorm_global$w128"),
                    wide = function_text(img.program_ptx, "silu_mul_global");
  ASSERT_FALSE(narrow.empty() || wide.empty()) << img.program_ptx;
  EXPECT_EQ(count(narrow, "bar.sync \t0, 128;"), 3u) << narrow;
  EXPECT_EQ(count(narrow, "bar.sync \t0;"), 0u) << narrow;
  EXPECT_EQ(count(narrow, "%ntid.x"), 0u) << narrow;
  EXPECT_EQ(count(narrow, "\tmov.u32 \t%r2, 128;"), 1u) << narrow;
  EXPECT_EQ(count(wide, "%ntid.x"), 1u) << wide;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(img.program_ptx, "sm_90", &log, true), 0) << log;
  // The decode step at three widths, as CudaGpu.PtxKernelsFusedEqualTheirPtxLaunchedByTheDriver
  // runs it: every kernel counts its own.
  std::vector<std::pair<std::shared_ptr<CudaKernel>, uint32_t>> step;
  const struct {
    const char *name;
    uint32_t threads, shared;
  } widths[] = {{"rmsnorm_global", 256, 0},
                {"gemv_global", 128, 0},
                {"silu_mul_global", 64, 0},
                {"residual_add_global", 256, 0},
                {"decode_attention_global", 128, 800},
                {"rope_global", 128, 0}};
  for (const auto &w : widths) step.push_back({take(m, w.name, w.threads, w.shared), 8});
  BuiltImage step_img;
  ASSERT_NO_FATAL_FAILURE(one_program(step, 16, &step_img));
  EXPECT_EQ(step_img.threads, 256u);
  for (const char *name :
       {"gemv_global$w128", "silu_mul_global$w64", "decode_attention_global$w128", "rope_global$w128"}) {
    const std::string f = function_text(step_img.program_ptx, name);
    EXPECT_FALSE(f.empty()) << name;
    EXPECT_EQ(count(f, "%ntid.x"), 0u) << name;
  }
  EXPECT_EQ(count(function_text(step_img.program_ptx, "decode_attention_global$w128"), "bar.sync \t0;"), 0u);
  EXPECT_EQ(sk::cuda_test::ptxas(step_img.program_ptx, "sm_90", &log, true), 0) << log;

  // Threads that return before a barrier, in kernels of 128 beside one of 256: the returned
  // threads' wait and each two-phase barrier, in the kernel and its helper, count 128.
  auto early = load("early_return_global.ptx");
  ASSERT_TRUE(early);
  BuiltImage early_img;
  ASSERT_NO_FATAL_FAILURE(one_program(
      {{take(early, "er_guard", 128), 4}, {take(early, "er_rounds", 128), 4}, {silu, 16}}, 16, &early_img));
  EXPECT_EQ(early_img.threads, 256u);
  for (const char *name : {"er_guard$w128", "er_rounds$w128", "_Z9er_rotatePffi$w128"}) {
    const std::string f = function_text(early_img.program_ptx, name);
    EXPECT_EQ(count(f, "mov.u32 %sk_nt, 128;"), count(f, "barrier.sync 0, %sk_nt;") + count(f, "call __sk_leave"))
        << f;
    EXPECT_GE(count(f, "barrier.sync 0, %sk_nt;"), name == std::string("er_guard$w128") ? 4u : 1u) << name << "\n"
                                                                                                   << f;
    EXPECT_EQ(count(f, "%ntid.x"), 0u) << f;
    EXPECT_EQ(count(f, "barrier.sync 0;") + count(f, "bar.sync"), 0u) << f;
  }
  EXPECT_EQ(count(early_img.program_ptx, "call __sk_leave, (%sk_nt);"), 2u);
  // The kernel's copy calls the helper's.
  const std::string rounds = function_text(early_img.program_ptx, "er_rounds$w128");
  EXPECT_GE(count(rounds, "_Z9er_rotatePffi$w128"), 1u) << rounds;
  EXPECT_EQ(count(rounds, "_Z9er_rotatePffi,"), 0u) << rounds;
  EXPECT_EQ(sk::cuda_test::ptxas(early_img.program_ptx, "sm_90", &log, true), 0) << log;

  // What cannot run on fewer threads says which kernel and why.
  auto refused = [&](std::vector<std::pair<std::shared_ptr<CudaKernel>, uint32_t>> ks, const char *why) {
    Scope r;
    for (auto &[k, blocks] : ks) r.add(k, blocks);
    ASSERT_EQ(r.make_plan(16), SK_OK) << sk::last_error();
    BuiltImage no;
    EXPECT_EQ(build_superkernel(r.request(), &no), SK_ERR_INCOMPATIBLE) << why;
    EXPECT_TRUE(contains(sk::last_error(), why)) << sk::last_error();
  };
  refused({{take(m, "residual_add_global", 100), 4}, {silu, 16}},
          "'residual_add_global' (step 0) runs 100 threads per block, fewer than the 256 of 'silu_mul_global' (step "
          "1), and cannot run on the first 100 threads of a block of 256: a part of a warp cannot be left out");
  refused({{sk::cuda_test::kernel(load("chain.cubin"), "chain_step"), 4}, {silu, 16}},
          "its barriers (a cubin's or LTO-IR's code) wait for every thread of the block; load its PTX");
  // libsk's device API that waits at the block's barrier: every thread must call it.
  auto syncing = load_ptx(
      ".version 8.0\n.target sm_90\n.address_size 64\n.extern .func sk_sync_all();\n"
      ".visible .func k()\n{\ncall sk_sync_all, ();\nret;\n}\n",
      "syncing.ptx");
  ASSERT_TRUE(syncing && syncing->ptx->find("k"));
  EXPECT_EQ(syncing->ptx->find("k")->narrow_refusal,
            "it calls 'sk_sync_all', which waits at a barrier of every thread of the block");
  // A visible function that counts the block's threads (nvcc -rdc writes every __device__
  // function visible, every template one weak), reached through one that does not: the narrow
  // kernel calls its copies of both, while another module's kernel of the block's width calls
  // the original, as written.
  auto helper = load_ptx(
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .func sync_helper()\n{\nbar.sync 0;\nret;\n}\n"
      ".func middle()\n{\ncall sync_helper, ();\nret;\n}\n"
      ".visible .entry calls_helper(.param .u64 p)\n{\ncall middle, ();\nret;\n}\n",
      "helper.ptx");
  auto caller = load_ptx(
      ".version 8.0\n.target sm_90\n.address_size 64\n.extern .func sync_helper();\n"
      ".visible .entry also_calls(.param .u64 p)\n{\ncall sync_helper, ();\nret;\n}\n",
      "caller.ptx");
  ASSERT_TRUE(helper && caller);
  BuiltImage shared;
  ASSERT_NO_FATAL_FAILURE(one_program(
      {{take(helper, "calls_helper", 64), 4}, {take(caller, "also_calls", 256), 4}, {silu, 16}}, 16, &shared));
  EXPECT_EQ(count(shared.ptx, "call calls_helper$w64, ("), 1u) << shared.ptx;
  EXPECT_EQ(count(function_text(shared.program_ptx, "sync_helper$w64"), "bar.sync 0, 64;"), 1u)
      << shared.program_ptx;
  EXPECT_EQ(count(function_text(shared.program_ptx, "sync_helper"), "bar.sync 0;"), 1u) << shared.program_ptx;
  EXPECT_EQ(count(function_text(shared.program_ptx, "middle$w64"), "call sync_helper$w64, ();"), 1u);
  EXPECT_EQ(count(function_text(shared.program_ptx, "calls_helper$w64"), "call middle$w64, ();"), 1u);
  EXPECT_EQ(count(shared.program_ptx, " calls_helper("), 0u);
  EXPECT_EQ(count(shared.program_ptx, " middle("), 0u);
  EXPECT_EQ(sk::cuda_test::ptxas(shared.program_ptx, "sm_90", &log, true), 0) << log;
  // One kernel at three widths in one super kernel: the original at the block's, a copy per
  // narrower count, each called from its own site.
  BuiltImage widths3;
  ASSERT_NO_FATAL_FAILURE(
      one_program({{rms, 4}, {take(m, "rmsnorm_global", 64), 4}, {take(m, "rmsnorm_global", 256), 4}, {silu, 16}},
                  16, &widths3));
  for (const char *site : {"call rmsnorm_global$w128, (", "call rmsnorm_global$w64, (", "call rmsnorm_global, ("})
    EXPECT_EQ(count(widths3.ptx, site), 1u) << site << "\n" << widths3.ptx;
  for (const char *linked : {"rmsnorm_global$w128", "rmsnorm_global$w64", "rmsnorm_global"})
    EXPECT_TRUE(widths3.info.find(linked)) << linked << ": not in the linked cubin";
  const size_t reads = count(function_text(m->ptx->text, "rmsnorm_global"), "%ntid.x");
  EXPECT_GE(reads, 1u);
  EXPECT_EQ(count(function_text(widths3.program_ptx, "rmsnorm_global"), "%ntid.x"), reads);
  for (const char *copy : {"rmsnorm_global$w128", "rmsnorm_global$w64"})
    EXPECT_EQ(count(function_text(widths3.program_ptx, copy), "%ntid.x"), 0u) << copy;
  EXPECT_EQ(count(function_text(widths3.program_ptx, "rmsnorm_global$w128"), "bar.sync \t0, 128;"), 3u);
  EXPECT_EQ(count(function_text(widths3.program_ptx, "rmsnorm_global$w64"), "bar.sync \t0, 64;"), 3u);
  EXPECT_EQ(sk::cuda_test::ptxas(widths3.program_ptx, "sm_90", &log, true), 0) << log;
}

// What cannot be one program is linked, and says why: the scope option, a warp-specialized
// kernel (setmaxnreg would hold for the steps after it), a name two modules define for others to use, a declaration of a variable another part defines after it, a
// target with more than an architecture. A super kernel with a cubin sub-kernel is linked
// without a reason (it has no PTX to join), and max-registers caps the one program too.
TEST(CudaWholeProgram, WhatCannotBeOneProgramIsLinkedAndSaysWhy) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  auto m = load_triton("residual_add");
  ASSERT_TRUE(m);
  auto add = take(m, "residual_add_kernel", 128);
  auto build = [&](const char *options, std::vector<std::shared_ptr<CudaKernel>> ks, BuiltImage *img) {
    Scope s;
    s.options = options;
    for (auto &k : ks) s.add(k, 4);
    ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
    ASSERT_EQ(build_superkernel(s.request(), img), SK_OK) << sk::last_error();
  };
  BuiltImage off, capped, mixed, specialized;
  build("whole-program=0", {add}, &off);
  EXPECT_TRUE(off.program_ptx.empty());
  EXPECT_EQ(off.why_linked, "the scope option whole-program=0");
  auto ws = load_triton("matmul_ws");
  ASSERT_TRUE(ws);
  auto matmul = take(ws, "matmul_ws_kernel", 0, 115168);
  ASSERT_TRUE(matmul);
  build("", {matmul}, &specialized);
  EXPECT_TRUE(specialized.program_ptx.empty());
  EXPECT_EQ(specialized.why_linked,
            "'matmul_ws_kernel' reallocates registers between warps (setmaxnreg), which compiled as one program "
            "would hold for the steps after it");
  build("max-registers=24", {add}, &capped);
  EXPECT_FALSE(capped.program_ptx.empty()) << capped.why_linked;
  EXPECT_EQ(capped.program_register_cap, 24u);
  EXPECT_TRUE(contains(capped.program_ptx, "  .reqntid 128, 1, 1\n  .maxnreg 24\n")) << capped.program_ptx;
  auto chain = load("chain.cubin");
  ASSERT_TRUE(chain);
  auto step = sk::cuda_test::kernel(chain, "chain_step");
  ASSERT_TRUE(step);
  ASSERT_EQ(step->threads, add->threads);
  build("", {add, step}, &mixed);
  EXPECT_TRUE(mixed.program_ptx.empty() && mixed.why_linked.empty()) << mixed.why_linked;

  using sk::cuda::PtxPart;
  const std::string head = ".version 8.0\n.target sm_90\n.address_size 64\n";
  std::string out, why;
  const std::string twice = head + ".visible .func f()\n{\nret;\n}\n";
  EXPECT_FALSE(sk::cuda::join_ptx({{twice, "x.ptx"}, {twice, "y.ptx"}}, "sm_90", &out, &why));
  EXPECT_EQ(why, "'f' is defined by x.ptx and by y.ptx");
  EXPECT_FALSE(sk::cuda::join_ptx({{head + ".extern .global .align 4 .b32 v;\n", "x.ptx"},
                                   {head + ".visible .global .align 4 .b32 v;\n", "y.ptx"}},
                                  "sm_90", &out, &why));
  EXPECT_EQ(why, "x.ptx declares 'v', which y.ptx defines after it (a variable)");
  EXPECT_FALSE(sk::cuda::join_ptx({{".version 8.0\n.target sm_90, debug\n.address_size 64\n", "g.ptx"}}, "sm_90",
                                  &out, &why));
  EXPECT_EQ(why, "g.ptx targets 'sm_90, debug' (a whole program has one target, an architecture)");
  EXPECT_FALSE(sk::cuda::join_ptx({{head + ".visible .func f()\n{\nret;\n", "open.ptx"}}, "sm_90", &out, &why));
  EXPECT_TRUE(contains(why, "open.ptx: line 4")) << why;
  // Joined: the newest version, the target given, each part under its label.
  EXPECT_TRUE(sk::cuda::join_ptx({{head + ".visible .func f()\n{\nret;\n}\n", "x.ptx"},
                                  {".version 9.0\n.target sm_90a\n.address_size 64\n.extern .func f();\n", "y.ptx"}},
                                 "sm_90a", &out, &why))
      << why;
  EXPECT_EQ(out,
            ".version 9.0\n.target sm_90a\n.address_size 64\n\n// x.ptx\n\n\n\n.visible .func f()\n{\nret;\n}\n"
            "\n// y.ptx\n\n\n\n\n");
}

// Two LTO-IR files of nvcc -dc -dlto (rdc_sum.cu, rdc_scale.cu), each instantiating one template
// function and one inline __device__ variable: linked alone, each IR keeps its own internal
// copy of the function and the variable weak, so their one program holds one variable (read
// by both) and the two copies under names of their own, and ptxas compiles it.
TEST(CudaPtx, LtoIrsOfOneProgramKeepOneWeakVariableAndTheirOwnFunctions) {
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  if (sk::cuda::NvJitLink::get(&linker) != SK_OK) GTEST_SKIP() << sk::last_error();
  Scope s;
  s.add(take(load("rdc_sum.ltoir"), "rdc_sum", 32), 8);
  s.add(take(load("rdc_scale.ltoir"), "rdc_scale", 32), 8);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  ASSERT_FALSE(img.program_ptx.empty()) << img.why_linked;
  const std::string &p = img.program_ptx;
  EXPECT_EQ(count(p, ".global .align 4 .b8 kRdcWeights[16] ="), 1u) << p;
  EXPECT_EQ(count(p, ", kRdcWeights;"), 2u) << "each kernel reads the one variable: " << p;
  const std::regex helper("\\.func\\s+\\(\\.param \\.b32 func_retval0\\) (_Z12rdc_warp_sumIfET_S0_\\w*)\\(");
  std::set<std::string> copies;
  for (auto it = std::sregex_iterator(p.begin(), p.end(), helper); it != std::sregex_iterator(); ++it)
    copies.insert((*it)[1].str());
  EXPECT_EQ(copies.size(), 2u) << p;
  std::string log;
  EXPECT_EQ(sk::cuda_test::ptxas(p, "sm_90", &log, true), 0) << log;
}
