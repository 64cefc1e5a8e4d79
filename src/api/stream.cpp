// sk_stream_create / create_cuda / synchronize / query / destroy.
#include "api/capabilities.hpp"
#include "api/capture.hpp"
#include "api/handles.hpp"
#include "api/open_devices.hpp"

using sk::fail;

extern "C" {

SK_API sk_status sk_stream_create(sk_device *dev, sk_stream **out) {
  if (sk_status st = sk::api::check(dev, "sk_stream_create")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_stream_create: out is NULL");
  return sk::api::guarded("sk_stream_create", [&]() -> sk_status {
    std::unique_ptr<sk::backend::Stream> made;
    if (sk_status st = dev->backend->create_stream(&made); st != SK_OK) return st;
    auto s = std::make_unique<sk_stream>();
    s->backend = std::move(made);
    s->owner.attach(dev->life, sk::api::ChildKind::Stream);
    *out = s.release();
    return SK_OK;
  });
}

SK_API sk_status sk_stream_create_cuda(sk_device *dev, void *cu_stream, sk_stream **out) {
  if (sk_status st = sk::api::check(dev, "sk_stream_create_cuda")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_stream_create_cuda: out is NULL");
  return sk::api::guarded("sk_stream_create_cuda", [&]() -> sk_status {
    std::unique_ptr<sk::backend::Stream> made;
    if (sk_status st = sk::api::wrap_stream(*dev->backend, cu_stream, &made); st != SK_OK) return st;
    auto s = std::make_unique<sk_stream>();
    s->backend = std::move(made);
    s->owner.attach(dev->life, sk::api::ChildKind::Stream);
    *out = s.release();
    return SK_OK;
  });
}

SK_API sk_status sk_stream_synchronize(sk_stream *stream) {
  if (!stream) return sk::api::synchronize_default_streams();
  if (sk_status st = sk::api::check(stream, "sk_stream_synchronize")) return st;
  return sk::api::guarded("sk_stream_synchronize", [&] {
    if (sk_status st = sk::api::refuse_on_stream(stream, "sk_stream_synchronize")) return st;
    return stream->backend->device()->synchronize(stream->backend.get(), "sk_stream_synchronize");
  });
}

SK_API sk_status sk_stream_query(sk_device *dev, sk_stream *stream, int *done) {
  if (sk_status st = sk::api::check(dev, "sk_stream_query")) return st;
  if (stream)
    if (sk_status st = sk::api::check(stream, "sk_stream_query")) return st;  // stale, or of a closed device
  if (!done) return fail(SK_ERR_INVALID_ARGUMENT, "sk_stream_query: done is NULL");
  if (stream && stream->backend->device() != dev->backend.get())
    return fail(SK_ERR_INCOMPATIBLE, "sk_stream_query: the stream does not belong to the device");
  bool finished = false;
  sk_status st = sk::api::guarded("sk_stream_query", [&] {
    if (stream)
      if (sk_status refused = sk::api::refuse_on_stream(stream, "sk_stream_query")) return refused;
    return dev->backend->query(stream ? stream->backend.get() : nullptr, &finished);
  });
  if (st == SK_OK) *done = finished ? 1 : 0;
  return st;
}

SK_API void sk_stream_destroy(sk_stream *stream) {
  if (!stream) return;
  if (sk::api::check_destroy(stream, "sk_stream_destroy") != SK_OK) return;  // destroyed twice: ignored
  sk::api::drop_stream(stream);  // its capture, if any, is dropped (or, for a joined stream, invalidated)
  delete stream;                 // the backend's stream waits for its work
}

}  // extern "C"
