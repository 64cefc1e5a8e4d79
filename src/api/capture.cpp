// sk_stream_begin_capture / sk_stream_end_capture and what the other calls do on a capturing
// stream (api/capture.hpp). A capture is a scope attached to streams: a launch on one becomes an
// sk_add_kernel on the scope stream of its sk_stream, an event record and wait become scope
// events, and end-capture is sk_finalize. Nothing here depends on the backend.
#include "api/capture.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

using sk::fail;

namespace sk::api {
namespace {

constexpr uint32_t kNoScopeEvent = UINT32_MAX;  // sk_event::scope_event of a single-stream capture
std::atomic<uint64_t> next_capture_id{1};

const char *name_of(const Capture &c) { return c.scope->name.c_str(); }

void invalidate(Capture *c, const char *call) {
  if (c->invalidated_by.empty()) c->invalidated_by = call;
}

sk_status refuse_invalidated(const Capture &c, const char *call) {
  return fail(SK_ERR_STATE, "%s: capture '%s' was invalidated by %s (end it with sk_stream_end_capture)", call,
              name_of(c), c.invalidated_by.c_str());
}

uint32_t index_of(const Capture &c, const sk_stream *s) {
  return static_cast<uint32_t>(std::find(c.streams.begin(), c.streams.end(), s) - c.streams.begin());
}

// A new scope stream for `s` (nullptr: private to an inlined super kernel); the caller checked
// that it fits kMaxScopeStreams.
uint32_t add_stream(Capture *c, sk_stream *s) {
  const uint32_t idx = static_cast<uint32_t>(c->streams.size());
  c->streams.push_back(s);
  c->ops.push_back(s ? 1 : 0);  // the join (or the start) is its first operation
  for (auto &row : c->clock) row.resize(idx + 1, 0);
  c->clock.emplace_back(idx + 1, 0);
  return idx;
}

// Takes the capture out of the device and its streams (lock held); the caller owns it then.
std::unique_ptr<Capture> unlink(DeviceLife &life, Capture *c) {
  for (sk_stream *s : c->streams)
    if (s) s->capture.store(nullptr, std::memory_order_relaxed);
  life.captures.erase(std::find(life.captures.begin(), life.captures.end(), c));
  life.open_captures.fetch_sub(1, std::memory_order_relaxed);
  return std::unique_ptr<Capture>(c);
}

Capture *find_capture(DeviceLife &life, uint64_t id) {
  for (Capture *c : life.captures)
    if (c->id == id) return c;
  return nullptr;
}

sk_status refuse_other_device(Capture *c, const char *call, const char *what, const std::string &name) {
  invalidate(c, call);
  return fail(SK_ERR_STATE,
              "%s: %s '%s' belongs to another device than capture '%s': that launch cannot be captured, so the "
              "capture is invalidated",
              call, what, name.c_str(), name_of(*c));
}

}  // namespace

sk_status capture_kernel(const char *call, sk_stream *stream, sk_kernel *kernel, uint32_t block_dim,
                         const sk::GridShape &grid, void *const *args) {
  DeviceLife &life = *stream->owner.life();
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  sk::backend::Kernel &k = *kernel->backend;
  Capture *c = stream->capture.load(std::memory_order_relaxed);
  if (!c) {  // ended by another thread since the caller looked: an ordinary launch
    if (k.device() != stream->backend->device())
      return different_devices(call, "kernel '" + k.symbol + "'", "the stream");
    if (sk_status st = check_kernel_launch(call, k, block_dim, grid); st != SK_OK) return st;
    return k.launch(block_dim, grid, args, stream->backend.get());
  }
  if (!c->invalidated_by.empty()) return refuse_invalidated(*c, call);
  if (k.device() != c->scope->device.get()) return refuse_other_device(c, call, "kernel", k.symbol);
  // A launch that fails its checks is not made, captured or not: it leaves the capture valid. It
  // is checked as the launch would be, so that end-capture does not fail on it.
  if (sk_status st = check_kernel_launch(call, k, block_dim, grid); st != SK_OK) return st;
  if (sk_status st = k.check_launch(block_dim, grid); st != SK_OK) return st;
  ScopeLaunch e;
  e.kernel = kernel->backend;
  e.name = k.symbol;
  e.block_dim = block_dim;
  e.grid = grid;
  e.kind = k.kind;
  e.stream = index_of(*c, stream);
  if (sk_status st = k.copy_args(args, call, &e.args); st != SK_OK) return st;
  if (sk_status st = add_launch(c->scope.get(), std::move(e), call); st != SK_OK) return st;
  ++c->ops[index_of(*c, stream)];
  return SK_OK;
}

sk_status capture_superkernel(sk_stream *stream, sk_superkernel *sk) {
  DeviceLife &life = *stream->owner.life();
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  sk::backend::SuperKernel &b = *sk->backend;
  Capture *c = stream->capture.load(std::memory_order_relaxed);
  if (!c) {
    if (b.device() != stream->backend->device())
      return different_devices("sk_launch", "super kernel '" + b.plan.name + "'", "the stream");
    return b.launch(stream->backend.get());
  }
  if (!c->invalidated_by.empty()) return refuse_invalidated(*c, "sk_launch");
  if (b.device() != c->scope->device.get()) return refuse_other_device(c, "sk_launch", "super kernel", b.plan.name);
  sk_scope *scope = c->scope.get();
  const uint32_t origin = index_of(*c, stream);
  // Its steps keep their options. Those of its stream 0 go on the launching stream; each of its
  // other streams gets a scope stream of its own, which starts after the launching stream's
  // work so far and which that stream's next launch waits for: the launch stays one unit of it.
  std::vector<uint32_t> own;  // its stream t (t > 0) -> scope stream, 0: none yet
  uint32_t extra = 0;
  for (const sk::PlanStep &s : b.plan.steps) {
    const uint32_t t = b.plan.streams ? s.kernel.stream : 0;
    if (t == 0) continue;
    if (own.size() <= t) own.resize(t + 1, 0);
    if (own[t] == 0) own[t] = ++extra;
  }
  if (extra > 0 && !scope->options.stream_fusion)
    return fail(SK_ERR_INCOMPATIBLE,
                "sk_launch: super kernel '%s' runs on %u streams, but capture '%s' fuses one stream (begin it with "
                "stream-fusion=1)",
                b.plan.name.c_str(), extra + 1, name_of(*c));
  if (c->streams.size() + extra > kMaxScopeStreams)
    return fail(SK_ERR_INCOMPATIBLE,
                "sk_launch: super kernel '%s' needs %u more scope streams than capture '%s' has left",
                b.plan.name.c_str(), extra, name_of(*c));
  std::vector<uint32_t> entry;  // what the launching stream's next kernel would wait for
  if (origin < scope->stream_last.size()) {
    if (scope->stream_last[origin] >= 0) entry.push_back(static_cast<uint32_t>(scope->stream_last[origin]));
    entry.insert(entry.end(), scope->stream_pending[origin].begin(), scope->stream_pending[origin].end());
  }
  for (uint32_t &o : own)
    if (o != 0) o = add_stream(c, nullptr);
  const uint32_t base = static_cast<uint32_t>(scope->launches.size());
  std::vector<bool> started(c->streams.size(), false);
  for (uint32_t i = 0; i < b.plan.steps.size(); ++i) {
    const sk::PlanInput &in = b.plan.steps[i].kernel;
    const uint32_t t = b.plan.streams ? in.stream : 0;
    ScopeLaunch e;
    e.kernel = b.kernels[i];
    e.name = in.name;
    e.block_dim = in.block_dim;
    e.flags = in.flags;
    e.kind = in.kind;
    e.first_core = in.first_core;
    e.core_count = in.core_count;
    e.stream = t == 0 ? origin : own[t];
    if (t != 0 && !started[e.stream]) e.after = entry;
    started[e.stream] = true;
    for (uint32_t d : in.after) e.after.push_back(base + d);
    e.arg_refs = in.arg_refs;  // the addresses are recorded, not the values behind them
    e.args.resize(e.kernel->slots());
    b.current_args(i, e.args.data());
    if (sk_status st = add_launch(scope, std::move(e), "sk_launch"); st != SK_OK) return st;
  }
  for (uint32_t o : own)
    if (o != 0 && scope->stream_last[o] >= 0)
      scope->stream_pending[origin].push_back(static_cast<uint32_t>(scope->stream_last[o]));
  ++c->ops[origin];
  if (std::find(c->recorded.begin(), c->recorded.end(), sk) == c->recorded.end()) c->recorded.push_back(sk);
  return SK_OK;
}

sk_status refuse_on_stream(sk_stream *stream, const char *call) {
  if (!stream->capture.load(std::memory_order_relaxed)) return SK_OK;  // the wait path takes no lock
  DeviceLife &life = *stream->owner.life();
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  Capture *c = stream->capture.load(std::memory_order_relaxed);
  if (!c) return SK_OK;
  invalidate(c, call);
  return fail(SK_ERR_STATE,
              "%s: stream %p is capturing into '%s': %s cannot be captured, so the capture is invalidated", call,
              static_cast<void *>(stream), name_of(*c), call);
}

sk_status refuse_on_device(DeviceLife &life, const char *call) {
  if (life.open_captures.load(std::memory_order_relaxed) == 0) return SK_OK;
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  if (life.captures.empty()) return SK_OK;
  for (Capture *c : life.captures) invalidate(c, call);
  return fail(SK_ERR_STATE,
              "%s: device \"%s\" has streams capturing (capture '%s'%s): %s cannot be captured, so %s invalidated",
              call, life.spec.c_str(), name_of(*life.captures[0]), life.captures.size() > 1 ? " and others" : "",
              call, life.captures.size() > 1 ? "they are" : "it is");
}

sk_status refuse_set_arg(sk_superkernel *sk) {
  DeviceLife &life = *sk->owner.life();
  if (life.open_captures.load(std::memory_order_relaxed) == 0) return SK_OK;
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  Capture *hit = nullptr;
  for (Capture *c : life.captures)
    if (std::find(c->recorded.begin(), c->recorded.end(), sk) != c->recorded.end()) {
      invalidate(c, "sk_superkernel_set_arg");
      hit = hit ? hit : c;
    }
  if (!hit) return SK_OK;
  return fail(SK_ERR_STATE,
              "sk_superkernel_set_arg: super kernel '%s' was recorded by capture '%s', which is open: its arguments "
              "cannot change under the capture, so the capture is invalidated",
              sk->backend->plan.name.c_str(), name_of(*hit));
}

void forget_superkernel(sk_superkernel *sk) {
  DeviceLife &life = *sk->owner.life();
  if (life.open_captures.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  for (Capture *c : life.captures)
    c->recorded.erase(std::remove(c->recorded.begin(), c->recorded.end(), sk), c->recorded.end());
}

void drop_stream(sk_stream *stream) {
  if (!stream->capture.load(std::memory_order_relaxed)) return;
  DeviceLife &life = *stream->owner.life();
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  Capture *c = stream->capture.load(std::memory_order_relaxed);
  if (!c) return;
  const uint32_t idx = index_of(*c, stream);
  if (idx == 0) {
    unlink(life, c);  // dropped: the unique_ptr goes here
    return;
  }
  invalidate(c, "sk_stream_destroy of a joined stream");
  c->streams[idx] = nullptr;
  stream->capture.store(nullptr, std::memory_order_relaxed);
}

sk_status capture_record(sk_event *event, sk_stream *stream, bool *handled) {
  *handled = false;
  DeviceLife &life = *event->owner.life();
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  Capture *c = stream ? stream->capture.load(std::memory_order_relaxed) : nullptr;
  if (!c) {
    event->capture_id = 0;  // its last record is outside any capture now
    return SK_OK;
  }
  *handled = true;
  if (!c->invalidated_by.empty()) return refuse_invalidated(*c, "sk_event_record");
  const uint32_t idx = index_of(*c, stream);
  uint32_t scope_event = kNoScopeEvent;
  if (c->scope->options.stream_fusion) {
    scope_event = c->next_event++;
    if (sk_status st = sk_scope_record_event(c->scope.get(), idx, scope_event); st != SK_OK) return st;
  }
  event->capture_id = c->id;
  event->scope_event = scope_event;
  event->capture_stream = idx;
  event->clock = c->clock[idx];
  event->clock[idx] = c->ops[idx];
  return SK_OK;
}

sk_status capture_wait(sk_stream *stream, sk_event *event, bool *handled) {
  *handled = false;
  DeviceLife &life = *event->owner.life();
  std::lock_guard<std::mutex> lock(life.capture_mutex);
  Capture *mine = stream ? stream->capture.load(std::memory_order_relaxed) : nullptr;
  Capture *theirs = event->capture_id ? find_capture(life, event->capture_id) : nullptr;
  if (!mine && !theirs) {
    if (event->capture_id == 0) return SK_OK;  // an ordinary wait
    *handled = true;
    return fail(SK_ERR_STATE,
                "sk_stream_wait_event: event %p was last recorded in a capture that has ended; record it again "
                "outside a capture to wait on it",
                static_cast<void *>(event));
  }
  *handled = true;
  if (mine && !mine->invalidated_by.empty()) return refuse_invalidated(*mine, "sk_stream_wait_event");
  if (mine && mine != theirs) {
    invalidate(mine, "sk_stream_wait_event");
    return fail(SK_ERR_STATE,
                "sk_stream_wait_event: stream %p is capturing into '%s' but event %p was not recorded in that "
                "capture: a capture waits only on its own events, so it is invalidated",
                static_cast<void *>(stream), name_of(*mine), static_cast<void *>(event));
  }
  if (!theirs->invalidated_by.empty()) return refuse_invalidated(*theirs, "sk_stream_wait_event");
  if (!mine) {  // the stream joins the event's capture, as in CUDA
    const char *why = nullptr;
    if (!stream)
      why = "the default stream cannot join it (capture needs streams made by sk_stream_create)";
    else if (!theirs->scope->options.stream_fusion)
      why = "it fuses one stream (begin it with stream-fusion=1 to capture several)";
    else if (theirs->streams.size() >= kMaxScopeStreams)
      why = "it has no scope stream left";
    if (why) {
      invalidate(theirs, "sk_stream_wait_event");
      return fail(SK_ERR_STATE,
                  "sk_stream_wait_event: stream %p waits on event %p of capture '%s', but %s; the capture is "
                  "invalidated",
                  static_cast<void *>(stream), static_cast<void *>(event), name_of(*theirs), why);
    }
    add_stream(theirs, stream);
    stream->capture.store(theirs, std::memory_order_relaxed);
  }
  const uint32_t idx = index_of(*theirs, stream);
  if (event->scope_event != kNoScopeEvent && event->capture_stream != idx)
    if (sk_status st = sk_scope_wait_event(theirs->scope.get(), idx, event->scope_event); st != SK_OK) return st;
  std::vector<uint64_t> &clock = theirs->clock[idx];
  for (size_t t = 0; t < event->clock.size(); ++t) clock[t] = std::max(clock[t], event->clock[t]);
  return SK_OK;
}

sk_status take_capture(sk_stream *stream, const char *call, std::unique_ptr<Capture> *out) {
  DeviceLife &life = *stream->owner.life();
  std::unique_ptr<Capture> c;
  {
    std::lock_guard<std::mutex> lock(life.capture_mutex);
    Capture *open = stream->capture.load(std::memory_order_relaxed);
    if (!open)
      return fail(SK_ERR_STATE, "%s: stream %p is not capturing (sk_stream_begin_capture first)", call,
                  static_cast<void *>(stream));
    if (open->streams[0] != stream)
      return fail(SK_ERR_STATE, "%s: stream %p joined capture '%s' of stream %p: end it on that stream", call,
                  static_cast<void *>(stream), name_of(*open), static_cast<void *>(open->streams[0]));
    c = unlink(life, open);  // ended, whatever follows
  }
  const char *name = name_of(*c);
  if (!c->invalidated_by.empty())
    return fail(SK_ERR_STATE, "%s: capture '%s' was invalidated by %s; nothing was built", call, name,
                c->invalidated_by.c_str());
  for (uint32_t s = 1; s < c->streams.size(); ++s)
    if (c->streams[s] && c->clock[0][s] < c->ops[s])
      return fail(SK_ERR_STATE,
                  "%s: capture '%s': stream %p (capture stream %u) was not joined back: the origin stream must "
                  "wait on an event recorded on it after its last launch; nothing was built",
                  call, name, static_cast<void *>(c->streams[s]), s);
  if (c->scope->launches.empty())
    return fail(SK_ERR_STATE, "%s: capture '%s' recorded no launch; nothing was built", call, name);
  *out = std::move(c);
  return SK_OK;
}

}  // namespace sk::api

extern "C" {

SK_API sk_status sk_stream_begin_capture(sk_stream *stream, const char *name, const char *options) {
  if (!stream)
    return fail(SK_ERR_INVALID_ARGUMENT,
                "sk_stream_begin_capture: stream is NULL: capture needs a stream made by sk_stream_create (the "
                "default stream is shared by every caller of the device)");
  if (sk_status st = sk::api::check(stream, "sk_stream_begin_capture")) return st;
  return sk::api::guarded("sk_stream_begin_capture", [&]() -> sk_status {
    sk::api::DeviceLife &life = *stream->owner.life();
    auto c = std::make_unique<sk::api::Capture>();
    c->scope = std::make_unique<sk_scope>();
    sk_scope &scope = *c->scope;
    scope.owner.attach(stream->owner.life(), sk::api::ChildKind::Scope, false);
    scope.device = stream->backend->device()->shared_from_this();
    scope.name = name && *name ? name : "superkernel";
    if (sk_status st = sk::parse_scope_options(options, &scope.options); st != SK_OK) {
      sk::prefix_error("sk_stream_begin_capture '" + scope.name + "'");
      return st;
    }
    std::lock_guard<std::mutex> lock(life.capture_mutex);
    if (sk::api::Capture *open = stream->capture.load(std::memory_order_relaxed))
      return fail(SK_ERR_STATE, "sk_stream_begin_capture: stream %p is already capturing into '%s'",
                  static_cast<void *>(stream), open->scope->name.c_str());
    c->id = sk::api::next_capture_id.fetch_add(1, std::memory_order_relaxed);
    sk::api::add_stream(c.get(), stream);
    life.captures.push_back(c.get());
    life.open_captures.fetch_add(1, std::memory_order_relaxed);
    stream->capture.store(c.release(), std::memory_order_relaxed);
    return SK_OK;
  });
}

SK_API sk_status sk_stream_end_capture(sk_stream *stream, sk_superkernel **out) {
  if (sk_status st = sk::api::check(stream, "sk_stream_end_capture")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_stream_end_capture: out is NULL (the capture stays open)");
  return sk::api::guarded("sk_stream_end_capture", [&]() -> sk_status {
    std::unique_ptr<sk::api::Capture> c;
    if (sk_status st = sk::api::take_capture(stream, "sk_stream_end_capture", &c); st != SK_OK) return st;
    if (sk_status st = sk::api::finalize_scope(c->scope.get(), out); st != SK_OK) {
      sk::prefix_error("sk_stream_end_capture '" + c->scope->name + "'");
      return st;
    }
    return SK_OK;
  });
}

}  // extern "C"
