// What the public handles are. Children hold the device (shared_ptr), so closing a device
// while objects made from it live never leaves them dangling; they refuse every use but their
// destroy call after it (DeviceLife). Every handle starts with a tag
// (api/handle_tag.hpp) that destroy functions poison, so common stale uses fail cleanly.
#pragma once
#include <sk.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/handle_tag.hpp"
#include "common/backend.hpp"
#include "common/error.hpp"
#include "common/scope_options.hpp"

namespace sk::api {

// What the objects made from a device know of it (api/handle_pool.cpp): whether it was closed,
// its spec for their messages, and how many of each kind live, for sk_device_close to report.
enum class ChildKind : uint32_t { Module, Stream, Scope, SuperKernel, Event, Count };
struct Capture;
struct DeviceLife {
  std::string spec;
  std::atomic<bool> closed{false};
  std::atomic<uint32_t> live[static_cast<uint32_t>(ChildKind::Count)]{};
  // The device's open stream captures (api/capture.cpp). The mutex guards them, the streams'
  // and events' links to them, and what they record; open_captures is read without it first, so
  // calls on a device without captures take no lock.
  std::mutex capture_mutex;
  std::atomic<uint32_t> open_captures{0};
  std::vector<Capture *> captures;
};

// A child's link to its device's DeviceLife; a counted child adds itself to live[kind] while it
// exists (kernels are not counted: they go with their module).
class DeviceLink {
 public:
  DeviceLink() = default;
  DeviceLink(const DeviceLink &) = delete;
  DeviceLink &operator=(const DeviceLink &) = delete;
  ~DeviceLink() {
    if (life_ && counted_) life_->live[static_cast<uint32_t>(kind_)].fetch_sub(1, std::memory_order_relaxed);
  }
  void attach(std::shared_ptr<DeviceLife> life, ChildKind kind, bool counted = true) {
    life_ = std::move(life);
    kind_ = kind;
    counted_ = counted;
    if (counted_) life_->live[static_cast<uint32_t>(kind_)].fetch_add(1, std::memory_order_relaxed);
  }
  const std::shared_ptr<DeviceLife> &life() const { return life_; }
  bool closed() const { return life_ && life_->closed.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<DeviceLife> life_;
  ChildKind kind_ = ChildKind::Module;
  bool counted_ = false;
};

}  // namespace sk::api

// Each handle holds its device's backend object (common/backend.hpp) and nothing of a backend else.
struct sk_device : sk::api::Handle<sk::api::HandleType::Device> {
  std::shared_ptr<sk::backend::Device> backend;
  std::shared_ptr<sk::api::DeviceLife> life = std::make_shared<sk::api::DeviceLife>();
};

struct sk_kernel : sk::api::Handle<sk::api::HandleType::Kernel> {
  std::shared_ptr<sk::backend::Kernel> backend;  // shared with the scopes and super kernels using it
  sk::api::DeviceLink owner;                     // not counted
};

struct sk_module : sk::api::Handle<sk::api::HandleType::Module> {
  sk::api::DeviceLink owner;
  std::unique_ptr<sk::backend::Module> backend;
  std::map<std::string, std::unique_ptr<sk_kernel>> kernels;  // by "symbol|signature"
};

struct sk_stream : sk::api::Handle<sk::api::HandleType::Stream> {
  sk::api::DeviceLink owner;
  std::unique_ptr<sk::backend::Stream> backend;
  // The capture its launches are recorded in (api/capture.cpp), nullptr: they run. Loaded
  // relaxed on the launch path; set and cleared under DeviceLife::capture_mutex.
  std::atomic<sk::api::Capture *> capture{nullptr};
};

struct sk_event : sk::api::Handle<sk::api::HandleType::Event> {
  sk::api::DeviceLink owner;
  std::unique_ptr<sk::backend::Event> backend;
  // Its last record, when that was in a capture (guarded by DeviceLife::capture_mutex):
  // the capture's id (0: recorded outside one, or never), the scope event it became, the
  // capture stream it was recorded on and what that stream was ordered after (Capture::clock).
  uint64_t capture_id = 0;
  uint32_t scope_event = 0;
  uint32_t capture_stream = 0;
  std::vector<uint64_t> clock;
};

// A kernel launch recorded in a scope (sk_add_kernel): one step of the plan sk_finalize makes.
struct ScopeLaunch {
  std::shared_ptr<sk::backend::Kernel> kernel;
  std::string name;
  uint32_t block_dim = 1;
  uint32_t flags = 0;                            // sk_kernel_options.flags (SK_KERNEL_FLAG_*)
  sk::KernelKind kind = sk::KernelKind::Vector;  // the kernel's, or sk_kernel_options.core_type
  uint32_t stream = 0;                           // sk_kernel_options.stream
  uint32_t first_core = 0, core_count = 0;       // sk_kernel_options pin (0, 0: placed by the plan)
  std::vector<uint32_t> after;                   // launches it waits for (scope events)
  std::vector<uint64_t> args;                    // the kernel's slots() 8-byte argument slots
  uint64_t arg_refs = 0;                         // sk_kernel_options.arg_refs: their slots hold addresses
  sk::GridShape grid = {0, 0, 0};                // sk_kernel_options.grid (zeros: one dimension)
};

struct sk_scope : sk::api::Handle<sk::api::HandleType::Scope> {
  sk::api::DeviceLink owner;
  std::shared_ptr<sk::backend::Device> device;
  std::string name;
  sk::ScopeOptions options;
  std::vector<ScopeLaunch> launches;
  // Stream fusion (api/scope_streams.cpp): per stream, the last launch added to it (-1: none)
  // and the launches its next kernel must wait for; per recorded event, the launch it follows.
  std::vector<int32_t> stream_last;
  std::vector<std::vector<uint32_t>> stream_pending;
  std::map<uint32_t, int32_t> events;
};

struct sk_superkernel : sk::api::Handle<sk::api::HandleType::SuperKernel> {
  sk::api::DeviceLink owner;
  std::unique_ptr<sk::backend::SuperKernel> backend;
  // The plan as JSON, rendered on the first sk_superkernel_explain: building it costs more
  // than the rest of finalize together, and most super kernels are never explained.
  std::once_flag explain_once;
  std::string explain;
};

namespace sk::api {

// Runs a C API call's body, turning C++ exceptions (allocation failures) into statuses:
// nothing crosses the C ABI.
template <class F>
sk_status guarded(const char *call, F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(SK_ERR_OUT_OF_MEMORY, "%s: out of memory", call);
  } catch (const std::exception &e) {
    return fail(SK_ERR_DEVICE, "%s: internal error: %s", call, e.what());
  }
}

// Handle checks of the C API calls (api/handle_tag.hpp): NULL, foreign or stale handles fail
// naming the call and the argument; so does a child of a closed device (SK_ERR_STATE), except in
// its destroy call (check_destroy), which must still free it.
sk_status device_closed(const void *h, const char *call, const char *what, const DeviceLife &life);
// SK_ERR_INCOMPATIBLE: "CALL: FIRST and SECOND belong to different devices".
sk_status different_devices(const char *call, const std::string &first, const std::string &second);

template <class H>
inline sk_status check_child(const H *h, const char *call, const char *what, const char *gone) {
  if (h && h->live()) [[likely]] {
    if (!h->owner.closed()) [[likely]]
      return SK_OK;
    return device_closed(h, call, what, *h->owner.life());
  }
  return stale_or_foreign(h == nullptr, h && h->dead(), h, call, what, gone);
}

inline constexpr const char *kClosedDevice = "was closed";
inline constexpr const char *kUnloadedModule = "was unloaded";
inline constexpr const char *kUnloadedKernel = "belongs to a module that was unloaded";
inline constexpr const char *kDestroyed = "was destroyed";
inline constexpr const char *kConsumedScope = "was finalized or aborted";

inline sk_status check(const sk_device *h, const char *call, const char *what = "device") {
  return check_handle(h, call, what, kClosedDevice);
}
inline sk_status check(const sk_module *h, const char *call, const char *what = "module") {
  return check_child(h, call, what, kUnloadedModule);
}
inline sk_status check(const sk_kernel *h, const char *call, const char *what = "kernel") {
  return check_child(h, call, what, kUnloadedKernel);
}
inline sk_status check(const sk_stream *h, const char *call, const char *what = "stream") {
  return check_child(h, call, what, kDestroyed);
}
inline sk_status check(const sk_scope *h, const char *call, const char *what = "scope") {
  return check_child(h, call, what, kConsumedScope);
}
inline sk_status check(const sk_superkernel *h, const char *call, const char *what = "super kernel") {
  return check_child(h, call, what, kDestroyed);
}
inline sk_status check(const sk_event *h, const char *call, const char *what = "event") {
  return check_child(h, call, what, kDestroyed);
}
inline sk_status check_destroy(const sk_event *h, const char *call) {
  return check_handle(h, call, "event", kDestroyed);
}
inline sk_status check_destroy(const sk_module *h, const char *call) {
  return check_handle(h, call, "module", kUnloadedModule);
}
inline sk_status check_destroy(const sk_stream *h, const char *call) {
  return check_handle(h, call, "stream", kDestroyed);
}
inline sk_status check_destroy(const sk_scope *h, const char *call) {
  return check_handle(h, call, "scope", kConsumedScope);
}
inline sk_status check_destroy(const sk_superkernel *h, const char *call) {
  return check_handle(h, call, "super kernel", kDestroyed);
}

// Scope streams are small indices (like the few hardware queues a framework uses), so
// per-stream state is a vector; this bounds it.
constexpr uint32_t kMaxScopeStreams = 64;

// Stream fusion (api/scope_streams.cpp): checks launch l's stream against the scope's options and
// adds the waits pending on its stream to l->after (failing naming `call`); note_added then records it
// as the stream's last.
sk_status place_on_stream(sk_scope *scope, ScopeLaunch *l, const char *call);
void note_added(sk_scope *scope, const ScopeLaunch &l);
// Adds l to the scope (place_on_stream, note_added): what sk_add_kernel and a capture record.
sk_status add_launch(sk_scope *scope, ScopeLaunch &&l, const char *call);
// sk_finalize's work on a live scope of an open device: it empties the scope, which the caller deletes.
sk_status finalize_scope(sk_scope *scope, sk_superkernel **out);

// Blocks beyond the device's cores are multiplexed; this bounds a launch's length, not its cores.
constexpr uint32_t kMaxBlockDim = 1u << 24;
// SK_ERR_INVALID_ARGUMENT naming `call` and the kernel when block_dim is outside [1, kMaxBlockDim].
inline sk_status check_block_dim(const char *call, const sk::backend::Kernel &k, uint32_t block_dim) {
  if (block_dim >= 1 && block_dim <= kMaxBlockDim) return SK_OK;
  return fail(SK_ERR_INVALID_ARGUMENT, "%s: kernel '%s': block_dim %u is outside [1, %u]", call, k.symbol.c_str(),
              block_dim, kMaxBlockDim);
}

// The blocks of a grid's three extents, x * y * z (x * y fits 64 bits; past 2^32 the product
// is no launch's, and saturates).
inline uint64_t grid_blocks(const uint32_t *grid) {
  const uint64_t xy = (uint64_t)grid[0] * grid[1];
  return xy > UINT32_MAX ? UINT64_MAX : xy * grid[2];
}

// The grid's shape of a launch of `block_dim` blocks (`field` in messages; nullptr or zeros:
// none given): none, or every extent at least 1 and block_dim their product. A kernel that
// numbers its blocks in more than one dimension needs one: `remedy` says how to give it.
inline sk_status check_grid(const char *call, const sk::backend::Kernel &k, const std::string &name,
                            uint32_t block_dim, const uint32_t *grid, const char *field, const char *remedy) {
  if (!grid || !(grid[0] | grid[1] | grid[2])) {
    if (!k.multi_dimensional_grid) return SK_OK;
    return fail(SK_ERR_INVALID_ARGUMENT,
                "%s: kernel '%s' numbers its blocks in more than one dimension (reads %%ctaid.y/z or %%nctaid.y/z): "
                "%s",
                call, name.c_str(), remedy);
  }
  if (!grid[0] || !grid[1] || !grid[2])
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: kernel '%s': %s {%u, %u, %u} has an extent of 0 (each is at least 1)",
                call, name.c_str(), field, grid[0], grid[1], grid[2]);
  if (grid_blocks(grid) == block_dim) return SK_OK;
  return fail(SK_ERR_INVALID_ARGUMENT, "%s: kernel '%s': %s {%u, %u, %u} is not block_dim %u blocks", call,
              name.c_str(), field, grid[0], grid[1], grid[2], block_dim);
}

// The blocks of an unfused launch: `block_dim` (sk_launch_kernel), or the grid's shape
// (sk_launch_kernel_grid; block_dim their product, saturated to 32 bits).
inline sk_status check_kernel_launch(const char *call, const sk::backend::Kernel &k, uint32_t block_dim,
                                     const sk::GridShape &grid) {
  if (!(grid[0] | grid[1] | grid[2])) {
    if (sk_status st = check_block_dim(call, k, block_dim); st != SK_OK) return st;
    return check_grid(call, k, k.symbol, block_dim, nullptr, "grid",
                      "launch it with sk_launch_kernel_grid and its grid's shape");
  }
  if (grid_blocks(grid.data()) > kMaxBlockDim)
    return fail(SK_ERR_INVALID_ARGUMENT,
                "%s: kernel '%s': grid {%u, %u, %u} has more than the %u blocks of a launch", call, k.symbol.c_str(),
                grid[0], grid[1], grid[2], kMaxBlockDim);
  return check_grid(call, k, k.symbol, block_dim, grid.data(), "grid", "");
}

}  // namespace sk::api
