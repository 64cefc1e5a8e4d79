// sk_launch, sk_launch_repeat, sk_launch_kernel, sk_superkernel_set_arg / explain / destroy.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "api/capture.hpp"
#include "api/handles.hpp"

using sk::fail;

extern "C" {

SK_API sk_status sk_launch(sk_superkernel *sk, sk_stream *stream) {
  // The handle checks add two relaxed loads to the hot path (handle_tag.hpp): no lock, no allocation.
  if (sk_status st = sk::api::check(sk, "sk_launch")) return st;
  if (stream && !stream->live()) return sk::api::check(stream, "sk_launch");
  if (stream && stream->capture.load(std::memory_order_relaxed)) [[unlikely]] {
    if (sk_status st = sk::api::check(stream, "sk_launch")) return st;
    return sk::api::guarded("sk_launch", [&] { return sk::api::capture_superkernel(stream, sk); });
  }
  if (stream && stream->backend->device() != sk->backend->device())
    return stream->owner.closed() ? sk::api::check(stream, "sk_launch")
                                  : sk::api::different_devices(
                                        "sk_launch", "super kernel '" + sk->backend->plan.name + "'", "the stream");
  return sk::api::guarded("sk_launch",
                          [&] { return sk->backend->launch(stream ? stream->backend.get() : nullptr); });
}

SK_API sk_status sk_launch_repeat(sk_superkernel *sk, uint32_t n, const uint32_t *stop_flag, sk_stream *stream) {
  if (sk_status st = sk::api::check(sk, "sk_launch_repeat")) return st;
  if (stream && !stream->live()) return sk::api::check(stream, "sk_launch_repeat");
  const std::string &name = sk->backend->plan.name;
  if (stream && stream->backend->device() != sk->backend->device())
    return stream->owner.closed()
               ? sk::api::check(stream, "sk_launch_repeat")
               : sk::api::different_devices("sk_launch_repeat", "super kernel '" + name + "'", "the stream");
  if (n == 0 || n > SK_LAUNCH_REPEAT_MAX)
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_launch_repeat: super kernel '%s': n is %u; it must be in [1, %u]",
                name.c_str(), n, SK_LAUNCH_REPEAT_MAX);
  if (reinterpret_cast<uintptr_t>(stop_flag) % alignof(uint32_t) != 0)
    return fail(SK_ERR_INVALID_ARGUMENT,
                "sk_launch_repeat: super kernel '%s': stop_flag %p is not aligned to 4 bytes (a uint32_t)",
                name.c_str(), static_cast<const void *>(stop_flag));
  // How many runs a stop flag allows is known only on the device: a capture cannot record it.
  if (stream && stream->capture.load(std::memory_order_relaxed)) [[unlikely]]
    if (sk_status st = sk::api::refuse_on_stream(stream, "sk_launch_repeat")) return st;
  return sk::api::guarded("sk_launch_repeat", [&] {
    return sk->backend->launch_repeat(n, stop_flag, stream ? stream->backend.get() : nullptr);
  });
}

namespace {

// sk_launch_kernel and sk_launch_kernel_grid: `block_dim` blocks shaped `grid` (zeros: one dimension).
sk_status launch_kernel(const char *call, sk_kernel *kernel, uint32_t block_dim, const sk::GridShape &grid,
                        void *const *args, sk_stream *stream) {
  if (sk_status st = sk::api::check(kernel, call)) return st;
  if (stream && !stream->live()) return sk::api::check(stream, call);
  if (stream && stream->capture.load(std::memory_order_relaxed)) [[unlikely]] {
    if (sk_status st = sk::api::check(stream, call)) return st;
    return sk::api::guarded(call,
                            [&] { return sk::api::capture_kernel(call, stream, kernel, block_dim, grid, args); });
  }
  sk::backend::Kernel &k = *kernel->backend;
  if (stream && stream->backend->device() != k.device())
    return stream->owner.closed() ? sk::api::check(stream, call)
                                  : sk::api::different_devices(call, "kernel '" + k.symbol + "'", "the stream");
  if (sk_status st = sk::api::check_kernel_launch(call, k, block_dim, grid); st != SK_OK) return st;
  return sk::api::guarded(call,
                          [&] { return k.launch(block_dim, grid, args, stream ? stream->backend.get() : nullptr); });
}

}  // namespace

SK_API sk_status sk_launch_kernel(sk_kernel *kernel, uint32_t block_dim, void *const *args, sk_stream *stream) {
  return launch_kernel("sk_launch_kernel", kernel, block_dim, {0, 0, 0}, args, stream);
}

SK_API sk_status sk_launch_kernel_grid(sk_kernel *kernel, const uint32_t *grid, void *const *args,
                                       sk_stream *stream) {
  if (sk_status st = sk::api::check(kernel, "sk_launch_kernel_grid")) return st;
  if (!grid)
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_launch_kernel_grid: kernel '%s': grid is NULL",
                kernel->backend->symbol.c_str());
  // check_kernel_launch refuses a product past the most a launch has.
  const uint32_t block_dim = (uint32_t)std::min<uint64_t>(sk::api::grid_blocks(grid), UINT32_MAX);
  return launch_kernel("sk_launch_kernel_grid", kernel, block_dim, {grid[0], grid[1], grid[2]}, args, stream);
}

SK_API sk_status sk_superkernel_set_arg(sk_superkernel *sk, uint32_t step, uint32_t index, const void *value) {
  if (sk_status st = sk::api::check(sk, "sk_superkernel_set_arg")) return st;
  if (!value) return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_set_arg: value is NULL");
  sk::backend::SuperKernel &b = *sk->backend;
  if (step >= b.kernels.size())
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_set_arg: '%s' has %zu steps; step %u does not exist",
                b.plan.name.c_str(), b.kernels.size(), step);
  const sk::backend::Kernel &k = *b.kernels[step];
  if (index >= k.signature.size())
    return fail(SK_ERR_INVALID_ARGUMENT,
                "sk_superkernel_set_arg: step %u '%s' takes %zu parameters (%s); index %u does not exist", step,
                b.plan.steps[step].kernel.name.c_str(), k.signature.size(), k.signature_text.c_str(), index);
  return sk::api::guarded("sk_superkernel_set_arg", [&] {
    if (sk_status st = sk::api::refuse_set_arg(sk)) return st;
    // On the stack: a decode loop's rebind allocates nothing (tests/cpp/launch_path). Not
    // zeroed: to_slots writes each slot of the parameter, and 32 KiB of zeros cost a scalar's
    // rebind some 300 ns.
    uint64_t slots[sk::kMaxAggregateBytes / 8];
    const uint64_t refs = b.plan.steps[step].kernel.arg_refs;
    if (index < 64 && (refs >> index & 1))
      slots[0] = reinterpret_cast<uintptr_t>(value);  // read by reference: the address is the value
    else
      sk::to_slots(k.signature[index], value, slots);
    return b.set_arg(step, index, slots);
  });
}

SK_API sk_status sk_superkernel_explain(sk_superkernel *sk, char *buf, size_t cap, size_t *needed) {
  if (sk_status st = sk::api::check(sk, "sk_superkernel_explain")) return st;
  if (!buf && cap > 0)
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_explain: buf is NULL but cap is %zu", cap);
  sk_status st = sk::api::guarded("sk_superkernel_explain", [sk] {
    std::call_once(sk->explain_once, [sk] { sk->explain = sk->backend->explain(); });
    return SK_OK;
  });
  if (st != SK_OK) return st;
  const size_t size = sk->explain.size() + 1;
  if (needed) *needed = size;
  if (cap < size) {
    // Only buf NULL, cap 0, needed set is a size query; a buffer of cap 0 is one too small.
    if (buf || !needed)
      return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_explain: '%s' needs %zu bytes, cap is %zu",
                  sk->backend->plan.name.c_str(), size, cap);
    return SK_OK;
  }
  std::memcpy(buf, sk->explain.c_str(), size);
  return SK_OK;
}

SK_API void sk_superkernel_destroy(sk_superkernel *sk) {
  if (!sk) return;
  if (sk::api::check_destroy(sk, "sk_superkernel_destroy") != SK_OK) return;  // destroyed twice: ignored
  sk::api::forget_superkernel(sk);
  delete sk;  // the backend's super kernel waits for its launches
}

}  // extern "C"
