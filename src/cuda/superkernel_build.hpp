// From a plan to a linked cubin, without a GPU: the plan's steps become an EntrySpec, the
// generated PTX is linked with the sub-kernels' modules by nvJitLink for an `sm_XY`, and the
// result is cached by XXH3-128 of the PTX (which spells out the plan), the modules and the arch.
#pragma once
#include <sk.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "cuda/cuda_module.hpp"
#include "cuda/entry_ptx.hpp"
#include "elf/cubin.hpp"

namespace sk::cuda {

// Kernel parameter space a launch may fill with argument slots (4 KiB, the limit every
// driver and architecture accepts, less the entry's other parameters).
constexpr size_t kParamSlotBytes = 4096 - 64;

struct BuildRequest {
  std::string name;            // the super kernel's name, for messages
  std::string arch;            // "sm_90"
  uint64_t timeout_ns = 10'000'000'000ull;
  uint64_t id = 0;             // hang reports name it
  const Plan *plan = nullptr;
  std::vector<std::shared_ptr<CudaKernel>> kernels;  // per plan step
  size_t arg_slots = 0;        // total 8-byte argument slots
  bool force_buffer = false;   // arguments in a device buffer even if they fit the parameters
};

struct BuiltImage {
  std::string ptx;
  std::shared_ptr<const std::vector<uint8_t>> cubin;
  elf::Cubin info;            // the linked cubin, read back
  std::string entry;          // entry symbol
  uint32_t threads = 0;       // threads per block every sub-kernel agreed on
  ArgSource args = ArgSource::Params;
  bool cached = false;        // the cubin came from the cache
};

// The threads per block the kernels agree on, or SK_ERR_INCOMPATIBLE naming two that differ.
sk_status agree_on_threads(const std::string &name, const std::vector<std::shared_ptr<CudaKernel>> &kernels,
                           const std::vector<std::string> &step_names, uint32_t *threads);

// The entry description of a plan (exposed for tests).
sk_status make_entry_spec(const BuildRequest &req, uint32_t threads, EntrySpec *out);

// Generates, links (or finds in the cache) and reads back the super kernel's cubin.
sk_status build_superkernel(const BuildRequest &req, BuiltImage *out);

// Drops every cached cubin (tests).
void clear_link_cache();
size_t link_cache_size();

}  // namespace sk::cuda
