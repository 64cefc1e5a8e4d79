// sk_tensor_map_encode on a CUDA device: a tiled TMA tensor map, checked field by field before
// the driver encodes it (the driver's CUDA_ERROR_INVALID_VALUE names no field).
#pragma once
#include <sk.h>

#include "cuda/cuda_device.hpp"

namespace sk::cuda {

// SK_ERR_INVALID_ARGUMENT naming `call` and the first field of `desc` (struct_size checked)
// outside what cuTensorMapEncodeTiled accepts, as sk.h lists it; else SK_OK.
sk_status check_tensor_map(const sk_tensor_map_desc &desc, const char *call);

// Checks `desc` and encodes it through `gpu`'s driver into SK_TENSOR_MAP_BYTES bytes at `out`,
// written only on success.
sk_status encode_tensor_map(const CudaDevice &gpu, const sk_tensor_map_desc &desc, void *out);

}  // namespace sk::cuda
