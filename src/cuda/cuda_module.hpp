// A CUDA kernel module: a relocatable cubin (`nvcc -dc -cubin`), LTO-IR (`nvcc -dc -dlto
// -ltoir`) or PTX, or the code for the device's architecture in a fatbinary (`nvcc -dc -fatbin`)
// or in a host object of `nvcc -dc` (elf/fatbin.hpp), and the kernels taken from it. Loading
// needs no GPU: it reads the binary (symbols, `.nv.info*` attributes, sk_kernel.h's metadata);
// nvJitLink links it later, per super kernel. Its kernels are taken in cuda/cuda_kernel.hpp.
#pragma once
#include <sk.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/backend.hpp"
#include "common/content_cache.hpp"
#include "common/device_api_usage.hpp"
#include "common/kernel_metadata.hpp"
#include "common/signature.hpp"
#include "cuda/nvjitlink.hpp"
#include "cuda/ptx_module.hpp"
#include "elf/cubin.hpp"
#include "elf/fatbin.hpp"

namespace sk::cuda {

struct ModuleSet;

// 227 KiB: the most dynamic shared memory a block may opt in to on any architecture (metadata's
// "shared=", sk_kernel_desc.dynamic_shared).
constexpr uint32_t kMaxDynamicShared = 227 * 1024;

// One unit of a module's __global__ kernels' PTX (CudaModule::ptx_units): its label, the
// kernels its text declares, and the text, kept as given or as the fatbinary entry it is
// decompressed from (its payload within the module's `given` bytes).
struct PtxUnit {
  std::string label;
  std::vector<std::string> entries;  // its `.entry` names, as its text declares them
  std::vector<uint8_t> text;         // its PTX; empty: `stored`'s
  elf::FatbinEntry stored;
  std::string arch;  // the device's, which the PTX is read for
};

// A translation unit of a library whose code for the device is a linked cubin alone: its
// `__global__` kernels, launched as compiled (plain_launch.hpp), and where its cubin is stored.
struct SassUnit {
  std::string label;
  std::vector<std::string> entries;  // its __global__ kernels, as its symbols say
  elf::FatbinEntry stored;
  std::string arch;
};

struct CudaModule {
  std::string label;
  InputKind kind = InputKind::Cubin;
  std::vector<uint8_t> bytes;  // as linked: a link rewrites a cubin's copy (its shared overlay); PTX rewritten
  // A cubin's; for PTX, its functions and calls read from the text (PtxModule::graph).
  elf::Cubin cubin;
  std::shared_ptr<const PtxModule> ptx;  // PTX only: its kernels, launch facts and rewrites
  // The bytes given, where they were a fatbinary or a host object of nvcc and `bytes` the code
  // taken from it, or PTX before its rewrite (empty otherwise): what CudaModuleCache compares.
  std::vector<uint8_t> given;
  std::vector<KernelMetadata> metadata;
  std::map<std::string, uint32_t> threads;         // metadata "threads=" per kernel
  std::map<std::string, uint32_t> dynamic_shared;  // metadata "shared=" per kernel
  std::string metadata_note;                       // why an LTO-IR module has no metadata ("" if it has)
  // Its __global__ kernels' PTX, each unit a PTX module of its own, where the module's code is
  // not that PTX: LTO-IR's, the PTX the IR links to alone (one unit, read at load); a shared
  // library's or executable's (`library`), that of each translation unit with PTX the device
  // runs, read when a kernel of it is first taken (a library may hold thousands of kernels).
  std::vector<PtxUnit> ptx_units;
  // A library's units without PTX the device runs, in the order of its containers: their
  // cubins, each read as a module of its own when a kernel of it is first taken.
  std::vector<SassUnit> sass_units;
  bool library = false;  // a shared library or executable: its kernels are its units' alone
  // Why the PTX of its __global__ kernels could not be read: the IR's, or that beside a cubin in
  // a fatbinary ("" if it could, or there was none).
  std::string global_kernels_note;
  // A module of several objects: they and how their names resolve (cuda/module_set.hpp).
  std::shared_ptr<const ModuleSet> set;

  // Unit i as a PTX module, read on first use (under a lock: kernels are taken from any
  // thread); null, with the reader's message in last_error, where its PTX cannot be read.
  std::shared_ptr<const CudaModule> ptx_unit(size_t i) const;
  // SASS unit i as a module of its linked cubin, read on first use; null, with the reader's
  // message in last_error, where it cannot be read.
  std::shared_ptr<const CudaModule> sass_unit(size_t i) const;
  // Unit i if it has been read, else null: it is then in no link.
  std::shared_ptr<const CudaModule> ptx_unit_if_read(size_t i) const;
  // The kernels the module declares: `metadata`, and for a library the `.entry` names of every
  // unit, as scanned at load (no unit is read for them; their signatures are left empty).
  const std::vector<KernelMetadata> &declared_kernels() const;
  // A unit of `ptx_units` (sass false) or of `sass_units`.
  struct UnitRef {
    bool sass;
    uint32_t index;
  };
  // The units that declare kernel `name`, those of PTX first, each kind in order; none where no
  // unit does. Indexed on first use: a library declares tens of thousands.
  const std::vector<UnitRef> &units_declaring(std::string_view name) const;

 private:
  mutable std::mutex units_mutex_;
  // A unit as read: its module, or why it cannot be read; neither: not read yet.
  struct ReadUnit {
    std::shared_ptr<const CudaModule> module;
    std::string error;
  };
  template <class Read>
  std::shared_ptr<const CudaModule> read_once(std::vector<ReadUnit> &units, size_t count, size_t i, Read read) const;
  mutable std::vector<ReadUnit> read_ptx_;   // by PTX unit
  mutable std::vector<ReadUnit> read_sass_;  // by SASS unit
  mutable std::once_flag units_by_name_once_;
  mutable std::unordered_map<std::string_view, std::vector<UnitRef>> units_by_name_;  // names: the units'
  mutable std::once_flag declared_once_;
  mutable std::vector<KernelMetadata> declared_;  // a library's, on the first declared_kernels()
};

// Parses a cubin, LTO-IR or PTX image (copied), or a fatbinary or host object holding code for
// `arch` (the label then names it: "foo.o (sm_90 cubin)"; one without code `arch` runs is
// SK_ERR_INCOMPATIBLE). Anything else is SK_ERR_BAD_BINARY; an ELF for another machine without
// a fatbinary SK_ERR_UNSUPPORTED. LTO-IR metadata and __global__ kernels are read by linking
// the IR alone to PTX for `arch` (the device's); without nvJitLink, or when that fails, the
// module has neither.
sk_status load_cuda_module(const void *image, size_t size, const std::string &label,
                           std::shared_ptr<const CudaModule> *out, const std::string &arch = "sm_90");

// A device's modules by content (common/content_cache.hpp): bytes already loaded, whose module
// is still alive, give that module again, so that kernels of both loads link it once
// (nvJitLink refuses a second definition of each function), as the host device links the same
// bytes once.
class CudaModuleCache {
 public:
  // load_cuda_module, or the live module of the same bytes (then `label` is the first load's).
  sk_status load(const void *image, size_t size, const std::string &label, const std::string &arch,
                 std::shared_ptr<const CudaModule> *out);

 private:
  std::mutex mutex_;  // held over lookup and parse: the same bytes parse once
  ContentCache<const CudaModule> modules_;
};

// "a, b, c": the first eight of `names`, then how many in all; how a refusal lists the kernels
// a module has.
std::string some_names(const std::vector<std::string> &names);

// The sk_kernel_meta_* strings in PTX text (`.b8 sk_kernel_meta_f[N] = {115, 107, ...};`).
std::vector<std::string> ptx_metadata_records(const std::string &ptx);

}  // namespace sk::cuda
