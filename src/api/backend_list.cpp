#include "api/backend_list.hpp"

#include <string>
#include <string_view>

#include "common/device_spec.hpp"
#include "common/error.hpp"
#include "host/host_backend.hpp"
#ifdef SK_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace sk::api {
namespace {

// One line per backend; a backend built only in some configurations is listed only in those.
constexpr backend::Registration kBackends[] = {
    {"host", host::open_host_backend},
#ifdef SK_HAVE_CUDA
    {"cuda", cuda::open_cuda_backend},
#endif
};

}  // namespace

sk_status open_backend(const char *spec, std::shared_ptr<backend::Device> *out) {
  const std::string_view text(spec);
  const std::string_view name = text.substr(0, text.find(':'));
  for (const backend::Registration &b : kBackends)
    if (name == b.name) return b.open(spec, out);
  if (name.empty()) {  // the spec's own error ("no backend")
    DeviceSpec parsed;
    if (sk_status st = parse_device_spec(spec, &parsed); st != SK_OK) return st;
  }
  std::string known;
  for (const backend::Registration &b : kBackends) known += (known.empty() ? "" : ", ") + std::string(b.name);
  return fail(SK_ERR_INVALID_ARGUMENT, "device spec \"%s\": unknown backend '%.*s' (this build has: %s)", spec,
              static_cast<int>(name.size()), name.data(), known.c_str());
}

}  // namespace sk::api
