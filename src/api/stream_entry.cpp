// sk_stream_create / synchronize / destroy.
#include "api/cuda_entry.hpp"
#include "api/handles.hpp"
#include "api/open_devices.hpp"

using sk::fail;

extern "C" {

SK_API sk_status sk_stream_create(sk_device *dev, sk_stream **out) {
  if (sk_status st = sk::api::check(dev, "sk_stream_create")) return st;
  if (!out) return fail(SK_ERR_INVALID_ARGUMENT, "sk_stream_create: out is NULL");
  if (dev->cuda) return sk::api::guarded("sk_stream_create", [&] { return sk::api::cuda_stream_create(dev, out); });
  return sk::api::guarded("sk_stream_create", [&] {
    auto s = std::make_unique<sk_stream>();
    s->device = dev->impl;
    *out = s.release();
    return SK_OK;
  });
}

SK_API sk_status sk_stream_synchronize(sk_stream *stream) {
  if (!stream) return sk::api::synchronize_default_streams();
  if (sk_status st = sk::api::check(stream, "sk_stream_synchronize")) return st;
  if (stream->cuda) return sk::api::guarded("sk_stream_synchronize", [&] { return sk::api::cuda_stream_synchronize(stream); });
  return stream->device->executor().synchronize(&stream->state);
}

SK_API void sk_stream_destroy(sk_stream *stream) {
  if (!stream) return;
  if (sk::api::check(stream, "sk_stream_destroy") != SK_OK) return;  // destroyed twice: ignored
  if (stream->cuda) return sk::api::cuda_stream_destroy(stream);
  stream->device->executor().synchronize(&stream->state);
  delete stream;
}

}  // extern "C"
