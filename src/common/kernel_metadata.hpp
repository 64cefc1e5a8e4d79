// Records of the .sk.kernels section written by sk_kernel.h's SK_KERNEL macros:
// "sk1;kernel=NAME;sig=SIGNATURE;type=CORE_TYPE".
#pragma once
#include <sk.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/signature.hpp"

namespace sk {

struct KernelMetadata {
  std::string name;
  std::string signature;  // as written; parsed by parse_signature when the kernel is taken
  std::string core_type;  // "vector", "cube", "mix_1_1", "mix_1_2"
};

// Parses every record; `label` names the object in errors (SK_ERR_BAD_BINARY).
sk_status parse_kernel_metadata(const std::vector<std::string> &records, std::string_view label,
                                std::vector<KernelMetadata> *out);

// How messages name kernel `name` of module `label`: "kernel 'k' of m.o".
std::string kernel_of(std::string_view name, std::string_view label);

// The signature of kernel `what` (kernel_of), taken by `call`: `given` (the
// host's, from sk_module_get_kernel_with_signature) checked against the metadata when there is
// some, else the metadata's. `no_metadata` says what is missing when neither is there (the
// backends record metadata differently).
sk_status kernel_signature(const char *given, const KernelMetadata *meta, const std::string &what, const char *call,
                           const std::string &no_metadata, Signature *out);

}  // namespace sk
