// Stream fusion inside a scope: sk_scope_record_event, sk_scope_wait_event, and the stream
// bookkeeping of sk_add_kernel. Streams and events exist only while the scope is built: they
// become step dependencies of the plan (PlanInput::stream, PlanInput::after).
#include "api/handles.hpp"

using sk::fail;

namespace {
using sk::api::kMaxScopeStreams;

// `what` names the culprit ("kernel 'x'", "event 3"); it is built only for the error.
template <class What>
sk_status check_stream(const sk_scope *scope, uint32_t stream, const char *call, What what) {
  if (!scope->options.stream_fusion && stream != 0)
    return fail(SK_ERR_INVALID_ARGUMENT,
                "%s: %s is on stream %u, but scope '%s' fuses one stream (set scope option stream-fusion=1)", call,
                what().c_str(), stream, scope->name.c_str());
  if (stream >= kMaxScopeStreams)
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s: stream %u is out of range (0..%u)", call, what().c_str(), stream,
                kMaxScopeStreams - 1);
  return SK_OK;
}

void grow_streams(sk_scope *scope, uint32_t stream) {
  if (scope->stream_last.size() <= stream) {
    scope->stream_last.resize(stream + 1, -1);
    scope->stream_pending.resize(stream + 1);
  }
}

sk_status check_event_call(sk_scope *scope, uint32_t stream, uint32_t event, const char *call) {
  if (sk_status st = sk::api::check(scope, call)) return st;
  if (!scope->options.stream_fusion)
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: event %u: scope '%s' has no stream fusion (set stream-fusion=1)", call,
                event, scope->name.c_str());
  return check_stream(scope, stream, call, [event] { return "event " + std::to_string(event); });
}
}  // namespace

namespace sk::api {

sk_status place_on_stream(sk_scope *scope, ScopeLaunch *l, const char *call) {
  if (sk_status st = check_stream(scope, l->stream, call, [l] { return "kernel '" + l->name + "'"; })) return st;
  grow_streams(scope, l->stream);
  const std::vector<uint32_t> &pending = scope->stream_pending[l->stream];
  l->after.insert(l->after.end(), pending.begin(), pending.end());
  return SK_OK;
}

void note_added(sk_scope *scope, const ScopeLaunch &l) {
  scope->stream_last[l.stream] = static_cast<int32_t>(scope->launches.size());
  // Later kernels of the stream follow this one, so they wait for the same events through it.
  scope->stream_pending[l.stream].clear();
}

sk_status add_launch(sk_scope *scope, ScopeLaunch &&l, const char *call) {
  if (sk_status st = place_on_stream(scope, &l, call); st != SK_OK) return st;
  note_added(scope, l);
  scope->launches.push_back(std::move(l));
  return SK_OK;
}

}  // namespace sk::api

extern "C" {

SK_API sk_status sk_scope_record_event(sk_scope *scope, uint32_t stream, uint32_t event) {
  if (sk_status st = check_event_call(scope, stream, event, "sk_scope_record_event")) return st;
  return sk::api::guarded("sk_scope_record_event", [&]() -> sk_status {
    grow_streams(scope, stream);
    if (!scope->events.emplace(event, scope->stream_last[stream]).second)
      return fail(SK_ERR_INVALID_ARGUMENT, "sk_scope_record_event: scope '%s': event %u is already recorded",
                  scope->name.c_str(), event);
    return SK_OK;
  });
}

SK_API sk_status sk_scope_wait_event(sk_scope *scope, uint32_t stream, uint32_t event) {
  if (sk_status st = check_event_call(scope, stream, event, "sk_scope_wait_event")) return st;
  return sk::api::guarded("sk_scope_wait_event", [&]() -> sk_status {
    auto it = scope->events.find(event);
    if (it == scope->events.end())
      return fail(SK_ERR_INVALID_ARGUMENT,
                  "sk_scope_wait_event: scope '%s': event %u was not recorded (record it before waiting on it)",
                  scope->name.c_str(), event);
    grow_streams(scope, stream);
    if (it->second >= 0) scope->stream_pending[stream].push_back(static_cast<uint32_t>(it->second));
    return SK_OK;
  });
}

}  // extern "C"
