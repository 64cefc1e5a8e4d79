// sk_cuda_info: what a device run loaded, for its log (scripts/gpu-check runs it first): the CUDA
// driver and nvJitLink libsk dlopened (the path the loader found, the file behind it, their
// versions) and GPU 0 as libsk opens it. Prints "error: ..." and exits 1 for what does not load.
#include <sk.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cuda/cuda_device.hpp"
#include "cuda/nvjitlink.hpp"

namespace {

// "/usr/lib/libcuda.so.1 -> /usr/lib/libcuda.so.580.65.06", or the path alone.
std::string file(const std::string &path) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(path, ec);
  return ec || real == path ? path : path + " -> " + real.string();
}

}  // namespace

int main() {
  using namespace sk::cuda;
  std::printf("libsk %s\n", sk_version_string());
  for (const char *var : {"SK_CUDA_DRIVER_LIBRARY", "SK_CUDA_NVJITLINK_LIBRARY", kTimeoutEnv})
    if (const char *v = std::getenv(var)) std::printf("%s=%s\n", var, v);
  int failed = 0;
  std::shared_ptr<const DriverApi> api;
  if (driver_api(&api) == SK_OK) {
    int version = 0;
    api->cuDriverGetVersion(&version);
    std::printf("driver: %s, CUDA %d.%d (cuDriverGetVersion %d)\n", file(api->library.path()).c_str(),
                version / 1000, version % 1000 / 10, version);
  } else {
    std::printf("error: driver: %s\n", sk_last_error());
    failed = 1;
  }
  std::shared_ptr<const NvJitLink> link;
  if (NvJitLink::get(&link) == SK_OK) {
    std::printf("nvJitLink: %s, version %s\n", file(link->library_path()).c_str(), link->version().c_str());
  } else {
    std::printf("error: nvJitLink: %s\n", sk_last_error());
    failed = 1;
  }
  std::shared_ptr<CudaDevice> dev;
  if (api && CudaDevice::open(CudaSpec{}, &dev) == SK_OK) {
    std::printf("cuda:0: %s, %s, %u SMs, %u bytes of shared memory per block with the opt-in, %u reserved\n",
                dev->name().c_str(), dev->arch().c_str(), dev->multiprocessors(), dev->shared_optin(),
                dev->shared_reserved());
  } else if (api) {
    std::printf("error: cuda:0: %s\n", sk_last_error());
    failed = 1;
  }
  return failed;
}
