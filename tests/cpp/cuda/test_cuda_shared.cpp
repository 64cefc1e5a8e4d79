// Shared memory of CUDA super kernels, without a GPU: static __shared__ variables read per
// kernel from its cubin and through its calls, laid out in the shared overlay (only the
// variables one call tree reaches stay apart), the cubins rewritten to address them there
// (checked in their relocations), the linked entry's static shared memory (its
// `.nv.shared.<entry>` section, what `cuobjdump -res-usage` prints as SHARED), the largest
// `extern __shared__` size, and malformed shared variables.
#include <elf.h>
#include <gtest/gtest.h>
#include <sk.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "cuda/cuda_kernel.hpp"
#include "cuda/entry_ptx.hpp"
#include "cuda/superkernel_build.hpp"
#include "cuda_link_support.hpp"
#include "cuda_test_support.hpp"
#include "elf/cubin.hpp"
#include "elf/cubin_shared_overlay.hpp"
#include "elf/elf_object.hpp"
#include "elf/shared_overlay_layout.hpp"

using namespace sk::cuda;
using sk::cuda_test::contains;
using sk::cuda_test::disassemble;
using sk::cuda_test::kernel;
using sk::cuda_test::kNoNvdisasm;
using sk::cuda_test::load;
using sk::cuda_test::nvdisasm_path;
using sk::cuda_test::sass_function;
using sk::cuda_test::Scope;
using sk::elf::SharedOverlayLayout;

namespace {

[[maybe_unused]] const bool g_private_cache = *sk::cuda_test::private_cache_home() != 0;

constexpr uint64_t kTile = 24576;  // the test kernels' 24 KiB tiles
// What the linked entry holds besides the overlay: sm_90 reserves 1 KiB of every block's
// shared memory, and `.nv.shared.<entry>` counts it.
constexpr uint64_t kReserved = 1024;

// The index in m's shared_vars of the variable whose (mangled) name contains `part`.
size_t var_index(const CudaModule &m, std::string_view part) {
  for (size_t v = 0; v < m.cubin.shared_vars.size(); ++v)
    if (m.cubin.shared_vars[v].name.find(part) != std::string::npos) return v;
  ADD_FAILURE() << "no shared variable '" << part << "' in " << m.label;
  return 0;
}

// The entry spec and shared overlay layout of `s`, planned on `cores` blocks.
struct Laid {
  EntrySpec spec;
  SharedOverlayLayout layout;
};
Laid lay_out(Scope &s, uint32_t cores) {
  Laid l;
  EXPECT_EQ(s.make_plan(cores), SK_OK) << sk::last_error();
  EXPECT_EQ(make_entry_spec(s.request(), 128, &l.spec, &l.layout), SK_OK) << sk::last_error();
  return l;
}

// [begin, end) of variable `part` of cubin `cubin` (its index among the link's cubins).
struct Extent {
  uint64_t begin = 0, end = 0;
  bool overlaps(const Extent &o) const { return begin < o.end && o.begin < end; }
};
Extent extent(const Laid &l, size_t cubin, const CudaModule &m, std::string_view part) {
  const size_t v = var_index(m, part);
  const uint64_t at = l.layout.offsets.at(cubin).at(v);
  EXPECT_NE(at, SharedOverlayLayout::kInPlace) << part;
  return {at, at + m.cubin.shared_vars[v].size};
}

BuiltImage build(Scope &s, uint32_t cores) {
  BuiltImage img;
  EXPECT_EQ(s.make_plan(cores), SK_OK) << sk::last_error();
  EXPECT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  return img;
}

std::string overlay_definition(uint64_t bytes, uint32_t align = 4) {
  return ".shared .align " + std::to_string(align) + " .b8 " + kSharedOverlaySymbol + "[" + std::to_string(bytes) +
         "];";
}

// m's cubin rewritten for the layout l (its module `cubin` among the link's cubins), read back
// into *o; *overlay: the index of the overlay's symbol in it.
void rewritten_object(const Laid &l, size_t cubin, const CudaModule &m, sk::elf::Object *o, uint32_t *overlay) {
  std::vector<uint8_t> rewritten;
  ASSERT_EQ(sk::elf::rewrite_shared_overlay(m.bytes, m.cubin, m.label, kSharedOverlaySymbol, l.layout.offsets[cubin],
                                            &rewritten),
            SK_OK)
      << sk::last_error();
  ASSERT_FALSE(rewritten.empty());
  ASSERT_EQ(sk::elf::parse_object(rewritten.data(), rewritten.size(), "rewritten", o, sk::elf::kCubinParseOptions),
            SK_OK)
      << sk::last_error();
  *overlay = 0;
  for (uint32_t k = 1; k < o->symbols.size(); ++k)
    if (o->symbols[k].name == kSharedOverlaySymbol) *overlay = k;
  ASSERT_NE(*overlay, 0u);
}

}  // namespace

TEST(CudaShared, StaticSharedIsReadPerKernelAndThroughItsCalls) {
  // CUDA 13 keeps static __shared__ in a .nv_debug.shared section of type SHT_CUDA_NOBITS,
  // which has no bytes in the file; a variable's st_value there is its alignment.
  auto m = load("shared.cubin");
  ASSERT_NE(m, nullptr);
  const sk::elf::CubinFunction *tile = m->cubin.find("tile_a");
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->shared_bytes, kTile);
  const sk::elf::CubinSharedVar &var = m->cubin.shared_vars[var_index(*m, "ZZ6tile_aE4tile")];
  EXPECT_EQ(var.size, kTile);
  EXPECT_EQ(var.align, 4u);  // a float array's
  EXPECT_TRUE(var.overlay);
  EXPECT_EQ(kernel(m, "tile_a")->static_shared, kTile);
  EXPECT_EQ(kernel(m, "tile_b")->static_shared, kTile);
  // The 4 KiB line belongs to the __noinline__ helper: found through .nv.callgraph.
  EXPECT_EQ(m->cubin.find("tile_in_helper")->shared_bytes, 0u);
  EXPECT_EQ(kernel(m, "tile_in_helper")->static_shared, 4096u);
  auto big = kernel(m, "dyn_big");
  EXPECT_EQ(big->static_shared, 0u);
  EXPECT_EQ(big->dynamic_shared, 65536u);
  EXPECT_EQ(kernel(m, "dyn_small")->dynamic_shared, 4096u);
  EXPECT_EQ(kernel(m, "tile_a")->dynamic_shared, 0u);

  auto o = load("overlay.cubin");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(kernel(o, "two_arrays")->static_shared, 16384u + 8192);
  EXPECT_EQ(kernel(o, "ring_a")->static_shared, 8192u + 2048);
  EXPECT_EQ(kernel(o, "ring_b")->static_shared, 12288u + 2048);
  // Its own module's part: the helper it calls lies in shared.cu, not known before a link.
  EXPECT_EQ(kernel(o, "tile_then_reverse")->static_shared, kTile);
}

// A call through a pointer may reach every function whose address the cubin takes: their
// variables count in the caller's static shared memory and never overlap its own.
TEST(CudaShared, VariablesOfWhatAPointerMayCallKeepTheirOwnPlace) {
  auto m = load("reach.cubin");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(kernel(m, "reach_hook_call")->static_shared, 2048u + 1024u);
  EXPECT_EQ(kernel(m, "reach_plain")->static_shared, 1024u);  // a direct call of the helper
  Scope s;
  s.add(kernel(m, "reach_hook_call"), 4);
  const Laid l = lay_out(s, 8);
  EXPECT_FALSE(
      extent(l, 0, *m, "reach_hook_callE6before").overlaps(extent(l, 0, *m, "reach_hook_plainPjjE6staged")));
  EXPECT_EQ(l.spec.shared_overlay_bytes, 2048u + 1024u);
}

TEST(CudaShared, AnUndeclaredExternSharedArrayIsRefused) {
  auto m = load("shared.cubin");
  std::shared_ptr<CudaKernel> k;
  EXPECT_EQ(make_cuda_kernel(m, "dyn_undeclared", nullptr, "test", &k), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "dyn_undeclared")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "SK_KERNEL_CUDA_SHARED")) << sk::last_error();
}

// Three 24 KiB tiles of two modules: the entry's static shared memory is one tile, not three
// (72 KiB, past the 48 KiB a block's static shared memory may hold, would not link).
TEST(CudaShared, ThreeTwentyFourKiBTilesFromTwoModulesNeedOneTile) {
  auto shared = load("shared.cubin");
  auto overlay = load("overlay.cubin");
  Scope s;
  s.add(kernel(shared, "tile_a"), 4);
  s.add(kernel(shared, "tile_b"), 4);
  s.add(kernel(overlay, "tile_c"), 4);
  const Laid l = lay_out(s, 8);
  EXPECT_EQ(l.spec.shared_overlay_bytes, kTile);
  EXPECT_EQ(l.spec.shared_overlay_align, 4u);
  EXPECT_EQ(extent(l, 0, *shared, "ZZ6tile_aE4tile").begin, 0u);
  EXPECT_EQ(extent(l, 0, *shared, "ZZ6tile_bE4tile").begin, 0u);
  EXPECT_EQ(extent(l, 1, *overlay, "ZZ6tile_cE4tile").begin, 0u);
  const BuiltImage img = build(s, 8);
  EXPECT_TRUE(contains(img.ptx, overlay_definition(kTile))) << img.ptx;
  // Read back from the linked cubin: .nv.shared.<entry>'s size.
  EXPECT_GE(img.static_shared, kTile);
  EXPECT_LE(img.static_shared, kTile + kReserved);
  EXPECT_GT(img.dynamic_shared, 0u);
  EXPECT_LT(img.dynamic_shared, 1024u);  // libsk's block state only
}

TEST(CudaShared, DynamicSharedIsTheLargestBesideTheOverlay) {
  auto m = load("shared.cubin");
  Scope d;
  d.add(kernel(m, "dyn_small"), 4);
  d.add(kernel(m, "dyn_big"), 4);
  d.add(kernel(m, "tile_a"), 4);
  const BuiltImage dyn = build(d, 8);
  EXPECT_GE(dyn.dynamic_shared, 65536u);
  EXPECT_LT(dyn.dynamic_shared, 65536u + 1024);  // the largest, not the 69632-byte sum
  EXPECT_GE(dyn.static_shared, kTile);
  EXPECT_LE(dyn.static_shared, kTile + kReserved);
}

// Two arrays of one kernel never overlap, while a third kernel's tile lies over both; the
// rewritten cubin addresses them through the overlay symbol at their offsets.
TEST(CudaShared, AKernelsTwoArraysStayApart) {
  auto m = load("overlay.cubin");
  Scope s;
  s.add(kernel(m, "two_arrays"), 4);
  s.add(kernel(m, "tile_c"), 4);
  const Laid l = lay_out(s, 8);
  const Extent p = extent(l, 0, *m, "ZZ10two_arraysE1p"), q = extent(l, 0, *m, "ZZ10two_arraysE1q"),
               tile = extent(l, 0, *m, "ZZ6tile_cE4tile");
  EXPECT_FALSE(p.overlaps(q)) << p.begin << " " << q.begin;
  EXPECT_TRUE(tile.overlaps(p) && tile.overlaps(q));
  EXPECT_EQ(l.layout.bytes, kTile);

  sk::elf::Object o;
  uint32_t overlay = 0;
  ASSERT_NO_FATAL_FAILURE(rewritten_object(l, 0, *m, &o, &overlay));
  const sk::elf::Symbol &sym = o.symbols[overlay];
  EXPECT_EQ(sym.shndx, (uint32_t)SHN_UNDEF);
  EXPECT_EQ(sym.bind, STB_GLOBAL);
  EXPECT_EQ(sym.type, sk::elf::kSttCudaObject);
  EXPECT_EQ(sym.other, sk::elf::kStoCudaShared);
  // The variables keep their symbols (and indices) but take no memory.
  for (const sk::elf::CubinSharedVar &v : m->cubin.shared_vars)
    if (v.overlay) EXPECT_EQ(o.symbols[v.symbol].size, 0u) << v.name;
  std::set<int64_t> addends;
  size_t to_variables = 0;
  for (const sk::elf::RelocationSection &rs : o.relocation_sections) {
    for (const sk::elf::Relocation &r : rs.relocations) {
      for (const sk::elf::CubinSharedVar &v : m->cubin.shared_vars)
        to_variables += v.overlay && r.symbol == v.symbol;
      if (r.symbol == overlay && o.sections[rs.target].name == ".text.two_arrays") addends.insert(r.addend);
    }
  }
  EXPECT_EQ(to_variables, 0u);  // every reference moved to the overlay
  EXPECT_EQ(addends, (std::set<int64_t>{(int64_t)p.begin, (int64_t)q.begin}));
  // Everything else is as it was: the same sections, and the same code bytes.
  sk::elf::Object before;
  ASSERT_EQ(sk::elf::parse_object(m->bytes.data(), m->bytes.size(), "before", &before, sk::elf::kCubinParseOptions),
            SK_OK);
  ASSERT_EQ(before.sections.size(), o.sections.size());
  for (size_t i = 1; i < o.sections.size(); ++i) {
    EXPECT_EQ(before.sections[i].name, o.sections[i].name);
    if (o.sections[i].name.rfind(".text.", 0) == 0)
      EXPECT_EQ(std::memcmp(before.sections[i].data, o.sections[i].data, o.sections[i].size), 0) << i;
  }
  EXPECT_EQ(o.symbols.size(), before.symbols.size() + 1);

  const BuiltImage img = build(s, 8);
  EXPECT_GE(img.static_shared, kTile);
  EXPECT_LE(img.static_shared, kTile + kReserved);
}

// The same in the linked SASS: each shared address is the overlay's base plus the variable's
// offset, an immediate (UMOV) beside the base: two_arrays' q at p's end, the line of
// shared.cu's helper past tile_then_reverse's tile.
TEST(CudaShared, TheLinkedSassAddressesEachVariableAtItsOffset) {
  if (nvdisasm_path().empty()) GTEST_SKIP() << kNoNvdisasm;
  auto shared = load("shared.cubin");
  auto overlay = load("overlay.cubin");
  Scope s;
  s.add(kernel(shared, "tile_a"), 4);
  s.add(kernel(overlay, "tile_then_reverse"), 4);
  s.add(kernel(overlay, "two_arrays"), 4);
  const Laid l = lay_out(s, 8);
  const BuiltImage img = build(s, 8);
  int rc = 0;
  const std::string sass = disassemble(img, &rc);
  ASSERT_EQ(rc, 0) << sass;
  auto immediate = [](uint64_t offset) {
    char text[32];
    std::snprintf(text, sizeof text, ", 0x%llx ;", (unsigned long long)offset);
    return std::regex(std::string("UMOV UR[0-9]+") + text);
  };
  const Extent p = extent(l, 1, *overlay, "ZZ10two_arraysE1p"), q = extent(l, 1, *overlay, "ZZ10two_arraysE1q"),
               line = extent(l, 0, *shared, "ZZ17reverse_in_sharedfE4line");
  EXPECT_EQ(q.begin, p.end);
  EXPECT_EQ(line.begin, kTile);
  const std::string two = sass_function(sass, "two_arrays"), helper = sass_function(sass, "_Z17reverse_in_sharedf");
  ASSERT_FALSE(two.empty()) << sass;
  ASSERT_FALSE(helper.empty()) << sass;
  EXPECT_TRUE(std::regex_search(two, immediate(p.begin))) << two;
  EXPECT_TRUE(std::regex_search(two, immediate(q.begin))) << two;
  EXPECT_TRUE(std::regex_search(helper, immediate(line.begin))) << helper;
}

// ring_a and ring_b each reach the helper's ring: it lies apart from both kernels' own arrays,
// which may lie over each other (ring_a and ring_b never run at once in a block).
TEST(CudaShared, AHelpersVariableStaysApartFromEachKernelThatReachesIt) {
  auto m = load("overlay.cubin");
  Scope s;
  s.add(kernel(m, "ring_a"), 4);
  s.add(kernel(m, "ring_b"), 4);
  const Laid l = lay_out(s, 8);
  const Extent ring = extent(l, 0, *m, "ZZ16rotate_in_sharedfE4ring"), a = extent(l, 0, *m, "ZZ6ring_aE3own"),
               b = extent(l, 0, *m, "ZZ6ring_bE3own");
  EXPECT_FALSE(ring.overlaps(a));
  EXPECT_FALSE(ring.overlaps(b));
  EXPECT_TRUE(a.overlaps(b));
  EXPECT_EQ(l.layout.bytes, 12288u + 2048);  // ring_b's call tree; the sum would be 22 KiB
  const BuiltImage img = build(s, 8);
  EXPECT_GE(img.static_shared, 12288u + 2048);
  EXPECT_LE(img.static_shared, 12288u + 2048 + kReserved);
}

// tile_then_reverse calls shared.cu's helper: the helper's line, another module's variable,
// lies apart from the caller's tile (each module alone would put both at 0).
TEST(CudaShared, AHelperOfAnotherModuleStaysApartFromTheCallersTile) {
  auto shared = load("shared.cubin");
  auto overlay = load("overlay.cubin");
  Scope s;
  s.add(kernel(shared, "tile_a"), 4);  // links shared.cu, which defines the helper
  s.add(kernel(overlay, "tile_then_reverse"), 4);
  const Laid l = lay_out(s, 8);
  const Extent line = extent(l, 0, *shared, "ZZ17reverse_in_sharedfE4line"),
               tile = extent(l, 1, *overlay, "ZZ17tile_then_reverseE4tile"),
               tile_a = extent(l, 0, *shared, "ZZ6tile_aE4tile");
  EXPECT_FALSE(line.overlaps(tile));
  EXPECT_TRUE(tile_a.overlaps(tile));
  EXPECT_EQ(l.layout.bytes, kTile + 4096);
  const BuiltImage img = build(s, 8);
  EXPECT_GE(img.static_shared, kTile + 4096);
  EXPECT_LE(img.static_shared, kTile + 4096 + kReserved);
}

// sk_launch_kernel's entry (a one-step plan) holds its kernel's bytes; a kernel without static
// shared memory gets a one-byte overlay that nothing reaches, which the linker leaves out.
// A device debug build (nvcc -G) as it was compiled: its .nv.info records (EIFMT_NVAL ones
// among them) read, its kernels' tiles and the helper's line laid out in the overlay as in the
// optimized build, its debug sections' relocations of the variables rewritten too, and the
// whole linked beside an optimized cubin.
TEST(CudaShared, ADebugBuildCubinLoadsAndFusesInTheOverlay) {
  auto debug = load("shared_debug.cubin");
  auto chain = load("chain.cubin");
  ASSERT_TRUE(debug);
  const sk::elf::CubinFunction *a = debug->cubin.find("tile_a");
  ASSERT_NE(a, nullptr);
  EXPECT_GT(a->registers, 0u);
  EXPECT_EQ(kernel(debug, "tile_a")->static_shared, kTile);
  EXPECT_EQ(kernel(debug, "tile_in_helper")->static_shared, 4096u);
  Scope s;
  s.add(kernel(debug, "tile_a"), 4);
  s.add(kernel(debug, "tile_b"), 4);
  s.add(kernel(debug, "tile_in_helper"), 4);
  s.add(kernel(chain, "chain_step"), 4);
  const Laid l = lay_out(s, 8);
  EXPECT_EQ(l.spec.shared_overlay_bytes, kTile);
  EXPECT_EQ(extent(l, 0, *debug, "ZZ6tile_aE4tile").begin, 0u);
  EXPECT_EQ(extent(l, 0, *debug, "ZZ6tile_bE4tile").begin, 0u);
  // The debug info's references to the variables move with the code's.
  sk::elf::Object o;
  uint32_t overlay = 0;
  ASSERT_NO_FATAL_FAILURE(rewritten_object(l, 0, *debug, &o, &overlay));
  size_t to_variables = 0;
  std::set<std::string> moved_in;  // sections whose relocations now name the overlay
  for (const sk::elf::RelocationSection &rs : o.relocation_sections)
    for (const sk::elf::Relocation &r : rs.relocations) {
      for (const sk::elf::CubinSharedVar &v : debug->cubin.shared_vars)
        to_variables += v.overlay && r.symbol == v.symbol;
      if (r.symbol == overlay) moved_in.insert(o.sections[rs.target].name);
    }
  EXPECT_EQ(to_variables, 0u);
  EXPECT_TRUE(moved_in.count(".text.tile_a")) << moved_in.size();
  EXPECT_TRUE(moved_in.count(".debug_info")) << moved_in.size();
  const BuiltImage img = build(s, 8);
  EXPECT_GE(img.static_shared, kTile);
  EXPECT_LE(img.static_shared, kTile + kReserved);
  ASSERT_NE(img.info.find(img.entry), nullptr);
}

TEST(CudaShared, TheUnfusedEntryGetsItsKernelsBytes) {
  auto shared = load("shared.cubin");
  auto overlay = load("overlay.cubin");
  auto chain = load("chain.cubin");
  struct Case {
    std::shared_ptr<CudaKernel> k;
    uint64_t bytes;
  };
  for (const Case &c : {Case{kernel(overlay, "two_arrays"), 16384 + 8192}, Case{kernel(overlay, "ring_b"), 14336},
                        Case{kernel(shared, "tile_in_helper"), 4096}, Case{kernel(chain, "chain_step"), 0}}) {
    Scope s;
    s.add(c.k, 4);
    const Laid l = lay_out(s, 4);
    EXPECT_EQ(l.spec.shared_overlay_bytes, c.bytes) << c.k->symbol;
    const BuiltImage img = build(s, 4);
    EXPECT_TRUE(contains(img.ptx, overlay_definition(c.bytes ? c.bytes : 1, c.bytes ? 4 : 1))) << c.k->symbol;
    if (c.bytes) {
      EXPECT_GE(img.static_shared, c.bytes) << c.k->symbol;
      EXPECT_LE(img.static_shared, c.bytes + kReserved) << c.k->symbol;
    } else {
      EXPECT_LE(img.static_shared, kReserved);  // the reserved part at most: the overlay takes nothing
    }
  }
}

// A namespace-scope __shared__ variable is global (another object could reference it by name)
// and stays where the linker puts it, beside the overlay; so do the variables of an older
// layout's `.nv.shared.<function>` sections.
TEST(CudaShared, GlobalVariablesAndOlderLayoutsStayInPlace) {
  auto m = load("overlay.cubin");
  const size_t g = var_index(*m, "g_scratch");
  EXPECT_FALSE(m->cubin.shared_vars[g].overlay);
  EXPECT_EQ(kernel(m, "global_scratch")->static_shared, 1024u);
  Scope s;
  s.add(kernel(m, "global_scratch"), 4);
  s.add(kernel(m, "tile_c"), 4);
  const Laid l = lay_out(s, 8);
  EXPECT_EQ(l.layout.offsets[0][g], SharedOverlayLayout::kInPlace);
  EXPECT_EQ(l.layout.bytes, kTile);
  const BuiltImage img = build(s, 8);
  EXPECT_GE(img.static_shared, kTile + 1024);
  EXPECT_LE(img.static_shared, kTile + 1024 + kReserved);

  // shared.cubin as an older toolkit would lay it out: the same variables in a
  // `.nv.shared.<function>` section (the name is as long as `.nv_debug.shared`).
  std::vector<uint8_t> bytes = sk::cuda_test::kernel_bytes("shared.cubin");
  const std::string from(".nv_debug.shared\0", 17), to(".nv.shared.tile_\0", 17);
  size_t renamed = 0;
  for (auto at = std::search(bytes.begin(), bytes.end(), from.begin(), from.end()); at != bytes.end();
       at = std::search(at, bytes.end(), from.begin(), from.end()), ++renamed)
    at = std::copy(to.begin(), to.end(), at);
  ASSERT_GE(renamed, 1u);
  std::shared_ptr<const CudaModule> old;
  ASSERT_EQ(load_cuda_module(bytes.data(), bytes.size(), "old.cubin", &old), SK_OK) << sk::last_error();
  ASSERT_FALSE(old->cubin.shared_vars.empty());
  for (const sk::elf::CubinSharedVar &v : old->cubin.shared_vars) EXPECT_FALSE(v.overlay) << v.name;
  EXPECT_EQ(kernel(old, "tile_a")->static_shared, kTile);
  const SharedOverlayLayout alone = sk::elf::layout_shared_overlay({&old->cubin}, {{0, "tile_a"}}, false);
  EXPECT_EQ(alone.bytes, 0u);
  std::vector<uint8_t> rewritten{1};
  EXPECT_EQ(sk::elf::rewrite_shared_overlay(old->bytes, old->cubin, old->label, kSharedOverlaySymbol,
                                            alone.offsets[0], &rewritten),
            SK_OK);
  EXPECT_TRUE(rewritten.empty());  // linked as it is
}

// LTO-IR code may call any global function of the cubins, and its calls are not known before
// the link: with an LTO-IR module in the link, every variable stays in place, and the linker
// gives each one the linked call graph reaches its own place, as without the overlay.
TEST(CudaShared, WithLtoIrInTheLinkEveryVariableStaysInPlace) {
  auto shared = load("shared.cubin");
  auto lto = load("lto.ltoir");
  Scope s;
  s.add(kernel(shared, "tile_a"), 4);
  s.add(kernel(shared, "tile_b"), 4);
  s.add(kernel(lto, "lto_scale", "ptr,u32,u32"), 4);
  const Laid l = lay_out(s, 8);
  EXPECT_EQ(l.layout.bytes, 0u);
  for (uint64_t offset : l.layout.offsets.at(0)) EXPECT_EQ(offset, SharedOverlayLayout::kInPlace);
  const BuiltImage img = build(s, 8);
  EXPECT_GE(img.static_shared, 2 * kTile);  // the 48 KiB a block's static shared memory may hold
  EXPECT_LE(img.static_shared, 2 * kTile + kReserved);
}

// A shared variable whose alignment or size is not one is refused, naming the file, the
// variable and the field.
TEST(CudaShared, ACorruptSharedVariableIsRefusedByName) {
  const std::vector<uint8_t> good = sk::cuda_test::kernel_bytes("shared.cubin");
  sk::elf::Object o;
  ASSERT_EQ(sk::elf::parse_object(good.data(), good.size(), "shared.cubin", &o, sk::elf::kCubinParseOptions), SK_OK);
  int symtab = -1;
  uint32_t tile = 0;
  for (size_t i = 1; i < o.sections.size(); ++i)
    if (o.sections[i].type == SHT_SYMTAB) symtab = (int)i;
  for (uint32_t i = 1; i < o.symbols.size(); ++i)
    if (o.symbols[i].name.find("ZZ6tile_aE4tile") != std::string::npos) tile = i;
  ASSERT_GE(symtab, 0);
  ASSERT_NE(tile, 0u);
  const size_t at = (size_t)(o.sections[symtab].data - o.image.data()) + tile * sizeof(Elf64_Sym);
  struct Corruption {
    size_t field;
    uint64_t value;
    const char *named;
  };
  for (const Corruption &c : {Corruption{offsetof(Elf64_Sym, st_value), 3, "st_value"},
                              Corruption{offsetof(Elf64_Sym, st_value), 1ull << 30, "st_value"},
                              Corruption{offsetof(Elf64_Sym, st_size), 1ull << 30, "st_size"}}) {
    std::vector<uint8_t> bad = good;
    std::memcpy(bad.data() + at + c.field, &c.value, sizeof c.value);
    std::shared_ptr<const CudaModule> m;
    EXPECT_EQ(load_cuda_module(bad.data(), bad.size(), "bad_shared.cubin", &m), SK_ERR_BAD_BINARY) << c.named;
    const std::string error = sk::last_error();
    EXPECT_TRUE(contains(error, "bad_shared.cubin")) << error;
    EXPECT_TRUE(contains(error, "ZZ6tile_aE4tile")) << error;
    EXPECT_TRUE(contains(error, c.named)) << error;
  }
  // A section aligned to 1 GiB loads (a power of two), but the rewrite of a link would pad the
  // file to it: refused by name, before any allocation.
  std::vector<uint8_t> bad = good;
  const auto *eh = reinterpret_cast<const Elf64_Ehdr *>(good.data());
  const size_t shdr = eh->e_shoff + (size_t)symtab * sizeof(Elf64_Shdr);
  const uint64_t huge = 1ull << 30;
  std::memcpy(bad.data() + shdr + offsetof(Elf64_Shdr, sh_addralign), &huge, sizeof huge);
  std::shared_ptr<const CudaModule> m;
  ASSERT_EQ(load_cuda_module(bad.data(), bad.size(), "aligned.cubin", &m), SK_OK) << sk::last_error();
  Scope scope;
  scope.add(kernel(m, "tile_a"), 1);
  ASSERT_EQ(scope.make_plan(1), SK_OK) << sk::last_error();
  BuiltImage img;
  EXPECT_EQ(build_superkernel(scope.request(), &img), SK_ERR_BAD_BINARY);
  const std::string error = sk::last_error();
  EXPECT_TRUE(contains(error, "aligned.cubin") && contains(error, "sh_addralign") && contains(error, ".symtab"))
      << error;
}
