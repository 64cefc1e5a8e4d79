// The calls of capabilities a backend may lack (common/backend.hpp, StreamWrapping, ForkWatch,
// TensorMaps, Profiling): each dispatched to the backend that has it and refused (or answered)
// here for one that does not, so that no backend carries another's refusal.
#pragma once
#include <sk.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/backend.hpp"

namespace sk::api {

// sk_stream_create_cuda.
sk_status wrap_stream(backend::Device &device, void *handle, std::unique_ptr<backend::Stream> *out);
// sk_tensor_map_encode.
sk_status encode_tensor_map(backend::Device &device, const sk_tensor_map_desc &desc, void *out);
// False for a device without a ForkWatch: its work does not depend on the process's threads.
bool forked_away(const backend::Device &device);
// sk_superkernel_profile and sk_superkernel_write_trace (`call`).
sk_status last_profile(const backend::SuperKernel &sk, const char *call, std::vector<sk_profile_record> *out,
                       uint32_t *id);

}  // namespace sk::api
