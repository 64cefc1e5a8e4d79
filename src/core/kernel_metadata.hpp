// Records of the .sk.kernels section written by sk_kernel.h's SK_KERNEL macros:
// "sk1;kernel=NAME;sig=SIGNATURE;type=CORE_TYPE".
#pragma once
#include <sk.h>

#include <string>
#include <string_view>
#include <vector>

namespace sk {

struct KernelMetadata {
  std::string name;
  std::string signature;  // as written; parsed by parse_signature when the kernel is taken
  std::string core_type;  // "vector", "cube", "mix_1_1", "mix_1_2"
};

// Parses every record; `label` names the object in errors (SK_ERR_BAD_BINARY).
sk_status parse_kernel_metadata(const std::vector<std::string> &records, std::string_view label,
                                std::vector<KernelMetadata> *out);

}  // namespace sk
