// sk_event_create / destroy / record and sk_stream_wait_event. Outside a capture they order
// streams through the backend; on a capturing stream they become scope events (api/capture.cpp).
#include <cstdio>

#include "api/capture.hpp"
#include "api/handles.hpp"

using sk::fail;

namespace {

// SK_OK when `stream` (nullptr: the default stream) is of the event's device.
sk_status check_pair(sk_event *event, sk_stream *stream, const char *call) {
  if (sk_status st = sk::api::check(event, call)) return st;
  if (!stream) return SK_OK;
  if (sk_status st = sk::api::check(stream, call)) return st;
  if (stream->backend->device() == event->backend->device()) return SK_OK;
  char first[40], second[40];
  std::snprintf(first, sizeof first, "event %p", static_cast<void *>(event));
  std::snprintf(second, sizeof second, "stream %p", static_cast<void *>(stream));
  return sk::api::different_devices(call, first, second);
}

}  // namespace

extern "C" {

SK_API sk_status sk_event_create(sk_device *dev, sk_event **out) {
  if (sk_status st = sk::api::check(dev, "sk_event_create")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_event_create: out is NULL");
  return sk::api::guarded("sk_event_create", [&]() -> sk_status {
    std::unique_ptr<sk::backend::Event> made;
    if (sk_status st = dev->backend->create_event(&made); st != SK_OK) return st;
    auto e = std::make_unique<sk_event>();
    e->backend = std::move(made);
    e->owner.attach(dev->life, sk::api::ChildKind::Event);
    *out = e.release();
    return SK_OK;
  });
}

SK_API void sk_event_destroy(sk_event *event) {
  if (!event) return;
  if (sk::api::check_destroy(event, "sk_event_destroy") != SK_OK) return;  // destroyed twice: ignored
  delete event;
}

SK_API sk_status sk_event_record(sk_event *event, sk_stream *stream) {
  if (sk_status st = check_pair(event, stream, "sk_event_record")) return st;
  return sk::api::guarded("sk_event_record", [&]() -> sk_status {
    bool handled = false;
    if (sk_status st = sk::api::capture_record(event, stream, &handled); handled || st != SK_OK) return st;
    return event->backend->device()->record_event(event->backend.get(), stream ? stream->backend.get() : nullptr);
  });
}

SK_API sk_status sk_stream_wait_event(sk_stream *stream, sk_event *event) {
  if (sk_status st = check_pair(event, stream, "sk_stream_wait_event")) return st;
  return sk::api::guarded("sk_stream_wait_event", [&]() -> sk_status {
    bool handled = false;
    if (sk_status st = sk::api::capture_wait(stream, event, &handled); handled || st != SK_OK) return st;
    return event->backend->device()->wait_event(stream ? stream->backend.get() : nullptr, event->backend.get());
  });
}

}  // extern "C"
