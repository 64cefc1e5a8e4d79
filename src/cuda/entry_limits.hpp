// What a linked entry needs that the GPU must grant it, decided before it is loaded: its call
// stack per thread (the context's CU_LIMIT_STACK_SIZE, which libsk raises to it) and its shared
// memory per block (at most the device's opt-in). Both fail with SK_ERR_INCOMPATIBLE naming the
// sub-kernels and what to change.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>

#include "cuda/superkernel_build.hpp"

namespace sk::cuda {

// EIATTR_MIN_STACK_SIZE of an entry whose call stack ptxas cannot bound (a function that
// recurses, or calls through a pointer the link cannot follow): nvJitLink's info log then says
// "Stack size for entry function ... cannot be statically determined".
constexpr uint32_t kStackUnknown = 0xffffffff;

// The call stack per thread launches of `image` need: the linked entry's, or `stack_key` (the
// device's stack_bytes, 0 when not given) where ptxas could not bound it; without the key that
// is SK_ERR_INCOMPATIBLE naming the sub-kernels whose calls recurse.
sk_status entry_stack_bytes(const BuildRequest &req, const BuiltImage &image, uint32_t stack_key, uint32_t *out);

// SK_OK when the entry's static and dynamic shared memory fit a block of a GPU that allows
// `optin` bytes a block with the opt-in and reserves `reserved` bytes of every block (both
// 0 when the driver does not say: nothing is checked); else SK_ERR_INCOMPATIBLE naming the
// sub-kernels with the most static and the most dynamic shared memory, and the reservation.
sk_status check_entry_shared(const BuildRequest &req, const BuiltImage &image, uint32_t optin, uint32_t reserved,
                             const std::string &gpu);

}  // namespace sk::cuda
