// sk_stream_create / synchronize / query / destroy.
#include "api/cuda_entry.hpp"
#include "api/handles.hpp"
#include "api/open_devices.hpp"

using sk::fail;

extern "C" {

SK_API sk_status sk_stream_create(sk_device *dev, sk_stream **out) {
  if (sk_status st = sk::api::check(dev, "sk_stream_create")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_stream_create: out is NULL");
  return sk::api::guarded("sk_stream_create", [&] {
    if (dev->cuda) {
      if (sk_status st = sk::api::cuda_stream_create(dev, out); st != SK_OK) return st;
    } else {
      auto s = std::make_unique<sk_stream>();
      s->device = dev->impl;
      *out = s.release();
    }
    (*out)->owner.attach(dev->life, sk::api::ChildKind::Stream);
    return SK_OK;
  });
}

SK_API sk_status sk_stream_synchronize(sk_stream *stream) {
  if (!stream) return sk::api::synchronize_default_streams();
  if (sk_status st = sk::api::check(stream, "sk_stream_synchronize")) return st;
  if (stream->cuda) return sk::api::guarded("sk_stream_synchronize", [&] { return sk::api::cuda_stream_synchronize(stream); });
  return stream->device->executor().synchronize(&stream->state);
}

SK_API sk_status sk_stream_query(sk_device *dev, sk_stream *stream, int *done) {
  if (sk_status st = sk::api::check(dev, "sk_stream_query")) return st;
  if (stream)
    if (sk_status st = sk::api::check(stream, "sk_stream_query")) return st;  // stale, or of a closed device
  if (!done) return fail(SK_ERR_INVALID_ARGUMENT, "sk_stream_query: done is NULL");
  if (stream && (stream->cuda ? !dev->cuda : stream->device != dev->impl))
    return fail(SK_ERR_INCOMPATIBLE, "sk_stream_query: the stream does not belong to the device");
  if (dev->cuda) {  // the GPU reports its own hangs: this waits, as synchronize does
    sk_status st = sk::api::guarded("sk_stream_query", [&] {
      return stream ? sk::api::cuda_stream_synchronize(stream) : sk::api::cuda_synchronize_default(dev);
    });
    if (st == SK_OK) *done = 1;
    return st;
  }
  bool finished = false;
  sk_status st = dev->impl->executor().query(stream ? &stream->state : &dev->impl->default_stream(), &finished);
  if (st == SK_OK) *done = finished ? 1 : 0;
  return st;
}

SK_API void sk_stream_destroy(sk_stream *stream) {
  if (!stream) return;
  if (sk::api::check_destroy(stream, "sk_stream_destroy") != SK_OK) return;  // destroyed twice: ignored
  if (stream->cuda) return sk::api::cuda_stream_destroy(stream);
  stream->device->executor().synchronize(&stream->state);
  delete stream;
}

}  // extern "C"
