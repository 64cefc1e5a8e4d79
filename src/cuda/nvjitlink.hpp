// nvJitLink, resolved from libnvJitLink.so.13 at run time: links the generated PTX entry with
// the sub-kernels' relocatable cubins / LTO-IR into one cubin. Works without a GPU.
#pragma once
#include <sk.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/dynamic_library.hpp"

namespace sk::cuda {

enum class InputKind { Cubin = 1, Ptx = 2, LtoIr = 3 };  // nvJitLinkInputType values

struct LinkInput {
  InputKind kind;
  const void *data;
  size_t size;
  std::string label;  // file or kernel module name, for messages and nvJitLink's log
};

struct NvJitLinkApi;

class NvJitLink {
 public:
  // Loads `library` (default: $SK_CUDA_NVJITLINK_LIBRARY or libnvJitLink.so.13). The
  // process-wide instance is cached once it loads; a failure is not cached.
  static sk_status get(std::shared_ptr<const NvJitLink> *out);
  static sk_status load(const std::string &library, std::shared_ptr<const NvJitLink> *out);

  // Links `inputs` for `arch` ("sm_90"). `what` names the super kernel in messages. On
  // failure the message carries nvJitLink's error log; a missing symbol is SK_ERR_NOT_FOUND
  // naming it, an input nvJitLink rejects SK_ERR_BAD_BINARY, anything else SK_ERR_INCOMPATIBLE.
  // `max_registers` (0: none) caps the registers per thread of the code compiled in the link
  // (-maxrregcount): the generated entry, LTO-IR; a cubin's SASS keeps its own count.
  sk_status link(const std::vector<LinkInput> &inputs, const std::string &arch, const std::string &what,
                 std::vector<uint8_t> *cubin, uint32_t max_registers = 0) const;

  // The options link() passes for `inputs` (part of the link cache's key).
  static std::vector<std::string> link_options(const std::vector<LinkInput> &inputs, const std::string &arch,
                                               uint32_t max_registers = 0);

  // Links LTO-IR inputs alone, with -lto -ptx, into PTX text: what survives is what the IR
  // keeps without an entry (its `used` globals: sk_kernel.h's metadata strings).
  sk_status lto_to_ptx(const LinkInput &input, const std::string &arch, std::string *ptx) const;

  // The library's version, "13.0".
  std::string version() const;
  // The library file it was loaded from (DynamicLibrary::path).
  std::string library_path() const;

  ~NvJitLink();

 private:
  NvJitLink();
  std::unique_ptr<NvJitLinkApi> api_;
};

}  // namespace sk::cuda
