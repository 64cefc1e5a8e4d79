// The C entry points' CUDA branch: each entry point that meets a CUDA handle (a device opened
// with "cuda[:N]" and everything made from it) calls the function here that does its work.
// Built as stubs when libsk is configured with SK_WITH_CUDA=OFF.
#pragma once
#include <sk.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.hpp"

struct KernelImpl;

namespace sk::api {

// True for "cuda" and "cuda:...".
bool is_cuda_spec(const char *spec);

sk_status cuda_device_open(const char *spec, sk_device **out);
void cuda_device_close(sk_device *dev);
uint32_t cuda_device_cores(sk_device *dev);  // its multiprocessors
sk_status cuda_mem_alloc(sk_device *dev, size_t size, void **out);
void cuda_mem_free(sk_device *dev, void *ptr);
sk_status cuda_memcpy(sk_device *dev, void *dst, const void *src, size_t size);
// Synchronises the device's default stream (sk_stream_synchronize(NULL)).
sk_status cuda_synchronize_default(sk_device *dev);

sk_status cuda_module_load(sk_device *dev, const void *image, size_t size, const std::string &label,
                           sk_module **out);
// A CUDA kernel's implementation (sk_module_get_kernel on a CUDA module; the caller keeps the
// module's one handle per name and signature).
sk_status cuda_kernel_impl(sk_module *mod, const char *name, const char *signature, const char *call,
                           std::shared_ptr<KernelImpl> *out);
std::string_view cuda_module_label(const KernelImpl &k);
// True if the kernel's device is the scope's.
bool cuda_same_device(const KernelImpl &k, const sk_scope &scope);

sk_status cuda_finalize(sk_scope &scope, std::vector<PlanInput> inputs,
                        std::vector<std::shared_ptr<KernelImpl>> kernels, std::vector<std::vector<uint64_t>> args,
                        sk_superkernel **out);
sk_status cuda_launch(sk_superkernel *sk, sk_stream *stream);
sk_status cuda_launch_kernel(sk_kernel *kernel, uint32_t block_dim, void *const *args, sk_stream *stream);
sk_status cuda_set_arg(sk_superkernel *sk, uint32_t step, uint32_t index, const void *value);
// sk_superkernel_explain's JSON: the plan and the linked entry's resources ("cuda_entry").
std::string cuda_explain(sk_superkernel *sk);
void cuda_superkernel_destroy(sk_superkernel *sk);

sk_status cuda_stream_create(sk_device *dev, sk_stream **out);
sk_status cuda_stream_synchronize(sk_stream *stream);
void cuda_stream_destroy(sk_stream *stream);

}  // namespace sk::api
