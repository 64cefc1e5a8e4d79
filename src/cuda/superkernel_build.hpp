// From a plan to a linked cubin, without a GPU: the plan's steps become an EntrySpec, the
// generated PTX is linked with the sub-kernels' modules by nvJitLink for an `sm_XY`, and the
// result is cached, in memory and on disk (disk_cache.hpp), by XXH3-128 of everything that
// decides the link: the PTX, the modules, the options and libsk's version. The plan's placement
// (cores, first blocks, flags, dependencies) is not in the PTX but in the step table, which the
// launch writes to the device: a re-plan for fewer co-resident blocks needs no second link.
#pragma once
#include <sk.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/plan.hpp"
#include "cuda/cuda_kernel.hpp"
#include "cuda/entry_ptx.hpp"
#include "elf/cubin.hpp"
#include "elf/shared_overlay_layout.hpp"

namespace sk::cuda {

// A kernel's parameter space: 4 KiB on every driver, 32764 bytes from CUDA 12.1 (driver
// version 12010) on Volta and later, which is every architecture libsk links for.
size_t param_space_bytes(int driver_version);
// Of it, what the entry's other parameters (sync, report, runs, stop) leave to argument slots.
constexpr size_t kParamReserved = 64;
static_assert(kParamReserved >= kEntryOwnParamBytes);

struct BuildRequest {
  std::string name;  // the super kernel's name, for messages
  std::string arch;  // "sm_90"
  uint64_t timeout_ns = 10'000'000'000ull;
  uint64_t id = 0;  // hang reports name it
  const Plan *plan = nullptr;
  std::vector<std::shared_ptr<CudaKernel>> kernels;  // per plan step
  size_t param_bytes = 4096;                         // the driver's parameter space (param_space_bytes)
  bool force_buffer = false;                         // arguments in a device buffer even if they fit the parameters
};

struct BuiltImage {
  std::string ptx;
  std::vector<uint32_t> table;  // the plan's step table (step_table)
  std::shared_ptr<const std::vector<uint8_t>> cubin;
  elf::Cubin info;       // the linked cubin, read back
  std::string entry;     // entry symbol
  uint32_t threads = 0;  // threads per block every sub-kernel agreed on
  ArgSource args = ArgSource::Params;
  bool cached = false;          // the cubin came from the cache
  uint32_t dynamic_shared = 0;  // each launch's dynamic shared bytes (entry_dynamic_shared)
  uint32_t static_shared = 0;   // the linked entry's static __shared__ (.nv.shared.<entry>)
  uint32_t shared_pad = 0;      // of which padding before the dynamic base (EntrySpec::shared_pad_bytes)
  uint32_t stack_bytes = 0;     // call stack per thread its launches need (entry_stack_bytes)
  uint32_t register_cap = 0;    // the link's -maxrregcount, else the entry's .maxnreg (0: none)
  // Where every sub-kernel is PTX: the entry and the modules as one program (ptx_join.hpp),
  // which loading compiles with the driver's JIT and runs in place of `cubin` where that
  // compiles (its entry's .maxnreg `program_register_cap`: the scope option max-registers, 0:
  // none); else "" and, for such a super kernel, `why_linked` says why not.
  std::string program_ptx;
  uint32_t program_register_cap = 0;
  std::string why_linked;
};

// Each step's first 8-byte argument slot in the entry's slots, then the slots in all: the
// steps' slots in order, each step's first on a slot of its signature's alignment
// (signature_slot_align), so that a parameter's bytes in the entry's parameter space are as
// aligned as its type asks.
std::vector<uint32_t> step_arg_bases(const std::vector<std::shared_ptr<CudaKernel>> &kernels);

// The super kernel's threads per block: its widest sub-kernel's. A sub-kernel of fewer threads
// runs on the block's first ones (its call site skips the others) where it can count its own
// (PtxKernel::narrow_refusal: PTX, whole warps); else SK_ERR_INCOMPATIBLE naming it and why.
sk_status block_threads(const std::string &name, const std::vector<std::shared_ptr<CudaKernel>> &kernels,
                        const std::vector<std::string> &step_names, uint32_t *threads);

// The entry description of a plan (exposed for tests), and where its shared overlay puts the
// static __shared__ variables of the cubins it links.
sk_status make_entry_spec(const BuildRequest &req, uint32_t threads, EntrySpec *out,
                          elf::SharedOverlayLayout *overlay = nullptr);

// Registers per thread libsk's own code (the entry, its waits and arrivals) may use at least:
// the entry's count covers every function it calls, and uncapped the nested wait calls need
// more than small sub-kernels do. A cubin sub-kernel's SASS keeps its count, so a cap below
// the largest sub-kernel's would only spill libsk's code.
constexpr uint32_t kEntryRegisterFloor = 32;
// The register caps of a link, from its sub-kernels' counts and the scope option
// max-registers (`option`, which wins: the whole link, 0 none).
struct RegisterCaps {
  // -maxrregcount: where every sub-kernel's count is known (cubins, PTX with .maxnreg), the
  // most any one (and its callees) needs, at least kEntryRegisterFloor; else 0.
  uint32_t link = 0;
  // Where PTX sub-kernels compile in the link instead, the first `.maxnreg` to give the entry:
  // it caps libsk's own code only (the entry and the functions of its module), each PTX module
  // compiling freely; the link then names any sub-kernel function that needs more, and is made
  // again at that count (link_entry). The largest known count, at least kEntryRegisterFloor;
  // 0 with an LTO-IR sub-kernel, whose functions the link's LTO compiles with the entry's.
  uint32_t entry_start = 0;
};
RegisterCaps register_caps(const std::vector<std::shared_ptr<CudaKernel>> &kernels,
                           std::optional<uint32_t> option = std::nullopt);
// The entry's text with `.maxnreg n` after its `.reqntid`.
std::string with_entry_maxnreg(const std::string &entry_ptx, uint32_t n);
// The most registers a link's error says a function the entry calls needs ("... calls function
// 'k' with regcount of 38"), 0 if it names none.
uint32_t registers_the_link_asks(const char *error);

// Generates, links (or finds in the cache) and reads back the super kernel's cubin.
sk_status build_superkernel(const BuildRequest &req, BuiltImage *out);

// The step table of `req`'s plan for the entry `linked` was linked for, which a plan of the
// same kernels placed on other cores shares (the PTX does not spell out the placement);
// SK_ERR_STATE if the plan's entry would differ.
sk_status replanned_table(const BuildRequest &req, const BuiltImage &linked, std::vector<uint32_t> *table);

// Drops every cubin cached in memory (tests); the disk cache (disk_cache.hpp) stays.
void clear_link_cache();
size_t link_cache_size();
// nvJitLink links done by this process (tests: a cache hit links nothing).
uint64_t link_count();

}  // namespace sk::cuda
