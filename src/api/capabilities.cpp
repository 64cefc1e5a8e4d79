#include "api/capabilities.hpp"

#include "common/error.hpp"

namespace sk::api {

sk_status wrap_stream(backend::Device &device, void *handle, std::unique_ptr<backend::Stream> *out) {
  backend::StreamWrapping *wrapping = device.stream_wrapping();
  if (!wrapping) return fail(SK_ERR_UNSUPPORTED, "sk_stream_create_cuda: the device is not a CUDA device");
  return wrapping->wrap_stream(handle, out);
}

sk_status encode_tensor_map(backend::Device &device, const sk_tensor_map_desc &desc, void *out) {
  backend::TensorMaps *maps = device.tensor_maps();
  if (!maps)
    return fail(SK_ERR_UNSUPPORTED,
                "sk_tensor_map_encode: the device is not a CUDA device (tensor maps are for TMA)");
  return maps->encode_tensor_map(desc, out);
}

bool forked_away(const backend::Device &device) {
  const backend::ForkWatch *watch = device.fork_watch();
  return watch && watch->forked_away();
}

sk_status last_profile(const backend::SuperKernel &sk, const char *call, std::vector<sk_profile_record> *out,
                       uint32_t *id) {
  const backend::Profiling *profiling = sk.profiling();
  if (!profiling)
    return fail(SK_ERR_UNSUPPORTED,
                "%s: super kernel '%s' is not on the host device; profiling is host-only for now", call,
                sk.plan.name.c_str());
  return profiling->last_profile(call, out, id);
}

}  // namespace sk::api
