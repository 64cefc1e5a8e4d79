#include "api/backend_list.hpp"

#include <string>
#include <string_view>

#include "common/device_spec.hpp"
#include "common/error.hpp"
#include "host/open.hpp"
#ifdef SK_HAVE_CUDA
#include "cuda/open.hpp"
#endif

namespace sk::api {
namespace {

// One line per backend; a backend built only in some configurations is listed only in those.
constexpr backend::Registration kBackends[] = {
    {"host", host::open_host_backend, host::inspect_host_module},
#ifdef SK_HAVE_CUDA
    {"cuda", cuda::open_cuda_backend, cuda::inspect_cuda_module},
#endif
};

// The registration of the spec's backend, or NULL with the error set.
const backend::Registration *find_backend(const char *spec) {
  const std::string_view text(spec);
  const std::string_view name = text.substr(0, text.find(':'));
  for (const backend::Registration &b : kBackends)
    if (name == b.name) return &b;
  if (name.empty()) {  // the spec's own error ("no backend")
    DeviceSpec parsed;
    if (parse_device_spec(spec, &parsed) != SK_OK) return nullptr;
  }
  std::string known;
  for (const backend::Registration &b : kBackends) known += (known.empty() ? "" : ", ") + std::string(b.name);
  fail(SK_ERR_INVALID_ARGUMENT, "device spec \"%s\": unknown backend '%.*s' (this build has: %s)", spec,
       static_cast<int>(name.size()), name.data(), known.c_str());
  return nullptr;
}

}  // namespace

sk_status open_backend(const char *spec, std::shared_ptr<backend::Device> *out) {
  const backend::Registration *b = find_backend(spec);
  return b ? b->open(spec, out) : SK_ERR_INVALID_ARGUMENT;
}

sk_status inspect_module(const char *spec, const void *image, size_t size, std::string *json) {
  const backend::Registration *b = find_backend(spec);
  if (!b) return SK_ERR_INVALID_ARGUMENT;
  if (!b->inspect)
    return fail(SK_ERR_UNSUPPORTED, "sk_module_inspect: the %s backend does not inspect modules without a device",
                b->name);
  return b->inspect(spec, image, size, json);
}

}  // namespace sk::api
