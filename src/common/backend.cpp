// What backends share (common/backend.hpp): the argument copy of launches, the defaults of
// optional device calls.
#include "common/backend.hpp"

#include "common/error.hpp"

namespace sk::backend {

sk_status Kernel::copy_args(void *const *args, const char *call, uint64_t *out) const {
  const size_t n = signature.size();
  if (n > 0 && !args)
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: kernel '%s' takes %zu parameters (%s) but args is NULL", call,
                symbol.c_str(), n, signature_text.c_str());
  for (size_t i = 0; i < n; ++i) {
    if (!args[i])
      return fail(SK_ERR_INVALID_ARGUMENT, "%s: kernel '%s': args[%zu] (%s) is NULL", call, symbol.c_str(), i,
                  arg_type_name(signature[i]));
    out[i] = to_slot(signature[i], args[i]);
  }
  return SK_OK;
}

sk_status Kernel::copy_args(void *const *args, const char *call, std::vector<uint64_t> *out) const {
  std::vector<uint64_t> slots(signature.size(), 0);
  if (sk_status st = copy_args(args, call, slots.data()); st != SK_OK) return st;
  *out = std::move(slots);
  return SK_OK;
}

sk_status Device::wrap_stream(void *, std::unique_ptr<Stream> *) {
  return fail(SK_ERR_UNSUPPORTED, "sk_stream_create_cuda: the device is not a CUDA device");
}

}  // namespace sk::backend
