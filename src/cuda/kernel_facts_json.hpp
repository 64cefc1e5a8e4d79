// A CUDA kernel's launch facts as JSON, where they came from, and for a kernel of PTX what its
// directives said and what loading rewrote: explain's `cuda_entry.sub_kernels` and
// sk_cuda_module_inspect write the same object.
#pragma once
#include "common/json_writer.hpp"
#include "cuda/cuda_kernel.hpp"

namespace sk::cuda {

// `key`: [x, y, z] of `d`, left out where d[0] is 0 (not given).
void write_dims(JsonWriter &j, const char *key, const uint32_t d[3]);

// Writes the members of a kernel's object (the caller opens and closes it).
void write_kernel_facts(JsonWriter &j, const CudaKernel &k);

// A PTX module's own facts: version, target, link architecture, module rewrites.
void write_ptx_module_facts(JsonWriter &j, const PtxModule &m);

}  // namespace sk::cuda
