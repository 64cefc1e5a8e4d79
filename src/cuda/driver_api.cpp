#include "cuda/driver_api.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/error.hpp"

namespace sk::cuda {
namespace {

// cuda.h maps several names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the driver
// keeps the old ones with old ABIs, so the versioned name is the one to bind.
template <class F>
bool bind(const DynamicLibrary &lib, F *slot, const char *symbol, std::string *missing) {
  *slot = reinterpret_cast<F>(lib.find(symbol));
  if (!*slot) {
    if (!missing->empty()) *missing += ", ";
    *missing += symbol;
  }
  return *slot != nullptr;
}

}  // namespace

KernelLaunch::KernelLaunch(const unsigned grid[3], const unsigned block[3], unsigned shared_bytes, CUstream stream,
                           bool cooperative, const unsigned cluster[3]) {
  std::memset(&config_, 0, sizeof config_);
  std::memset(attrs_, 0, sizeof attrs_);
  config_.grid_x = grid[0], config_.grid_y = grid[1], config_.grid_z = grid[2];
  config_.block_x = block[0], config_.block_y = block[1], config_.block_z = block[2];
  config_.shared_mem_bytes = shared_bytes;
  config_.stream = stream;
  config_.attrs = attrs_;
  unsigned n = 0;
  if (cooperative) {
    attrs_[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs_[n++].value.cooperative = 1;
  }
  if (cluster && cluster[0]) {
    attrs_[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs_[n++].value.cluster_dim = {cluster[0], cluster[1], cluster[2]};
  }
  config_.num_attrs = n;
}

std::string DriverApi::describe(CUresult r) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

sk_status load_driver_api(const std::string &library, std::shared_ptr<const DriverApi> *out) {
  auto api = std::make_shared<DriverApi>();
  if (sk_status st = api->library.open(library, "the CUDA driver; is an NVIDIA driver installed?"); st != SK_OK)
    return st;
  std::string missing;
  const DynamicLibrary &l = api->library;
  bind(l, &api->cuInit, "cuInit", &missing);
  bind(l, &api->cuDriverGetVersion, "cuDriverGetVersion", &missing);
  bind(l, &api->cuDeviceGetCount, "cuDeviceGetCount", &missing);
  bind(l, &api->cuDeviceGet, "cuDeviceGet", &missing);
  bind(l, &api->cuDeviceGetName, "cuDeviceGetName", &missing);
  bind(l, &api->cuDeviceGetAttribute, "cuDeviceGetAttribute", &missing);
  bind(l, &api->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", &missing);
  bind(l, &api->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", &missing);
  bind(l, &api->cuCtxPushCurrent, "cuCtxPushCurrent_v2", &missing);
  bind(l, &api->cuCtxPopCurrent, "cuCtxPopCurrent_v2", &missing);
  bind(l, &api->cuCtxSynchronize, "cuCtxSynchronize", &missing);
  bind(l, &api->cuCtxGetLimit, "cuCtxGetLimit", &missing);
  bind(l, &api->cuCtxSetLimit, "cuCtxSetLimit", &missing);
  bind(l, &api->cuMemAlloc, "cuMemAlloc_v2", &missing);
  bind(l, &api->cuMemFree, "cuMemFree_v2", &missing);
  bind(l, &api->cuMemcpy, "cuMemcpy", &missing);
  bind(l, &api->cuMemcpyHtoD, "cuMemcpyHtoD_v2", &missing);
  bind(l, &api->cuMemcpyDtoH, "cuMemcpyDtoH_v2", &missing);
  bind(l, &api->cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", &missing);
  bind(l, &api->cuMemsetD8Async, "cuMemsetD8Async", &missing);
  bind(l, &api->cuPointerGetAttribute, "cuPointerGetAttribute", &missing);
  bind(l, &api->cuStreamCreate, "cuStreamCreate", &missing);
  bind(l, &api->cuStreamDestroy, "cuStreamDestroy_v2", &missing);
  bind(l, &api->cuStreamSynchronize, "cuStreamSynchronize", &missing);
  bind(l, &api->cuStreamWaitEvent, "cuStreamWaitEvent", &missing);
  bind(l, &api->cuStreamIsCapturing, "cuStreamIsCapturing", &missing);
  bind(l, &api->cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", &missing);
  bind(l, &api->cuEventCreate, "cuEventCreate", &missing);
  bind(l, &api->cuEventDestroy, "cuEventDestroy_v2", &missing);
  bind(l, &api->cuEventRecord, "cuEventRecord", &missing);
  bind(l, &api->cuEventSynchronize, "cuEventSynchronize", &missing);
  bind(l, &api->cuModuleLoadData, "cuModuleLoadData", &missing);
  bind(l, &api->cuModuleLoadDataEx, "cuModuleLoadDataEx", &missing);
  bind(l, &api->cuModuleUnload, "cuModuleUnload", &missing);
  bind(l, &api->cuModuleGetFunction, "cuModuleGetFunction", &missing);
  bind(l, &api->cuFuncGetAttribute, "cuFuncGetAttribute", &missing);
  bind(l, &api->cuFuncSetAttribute, "cuFuncSetAttribute", &missing);
  bind(l, &api->cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
       &missing);
  bind(l, &api->cuLaunchKernelEx, "cuLaunchKernelEx", &missing);
  bind(l, &api->cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", &missing);
  bind(l, &api->cuGetErrorName, "cuGetErrorName", &missing);
  bind(l, &api->cuGetErrorString, "cuGetErrorString", &missing);
  if (!missing.empty())
    return fail(SK_ERR_DEVICE, "%s does not export %s (libsk needs a CUDA 12 or newer driver)", library.c_str(),
                missing.c_str());
  *out = std::move(api);
  return SK_OK;
}

sk_status driver_api(std::shared_ptr<const DriverApi> *out) {
  static std::mutex mutex;
  // Never unloaded: the driver outlives every object of the process (as with cudart).
  static auto *loaded_ptr = new std::shared_ptr<const DriverApi>();
  std::shared_ptr<const DriverApi> &loaded = *loaded_ptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded) {
    const char *env = std::getenv("SK_CUDA_DRIVER_LIBRARY");
    std::shared_ptr<const DriverApi> api;
    if (sk_status st = load_driver_api(env && *env ? env : "libcuda.so.1", &api); st != SK_OK) return st;
    if (CUresult r = api->cuInit(0); r != CUDA_SUCCESS)
      return fail(SK_ERR_DEVICE, "cuInit failed: %s (no usable NVIDIA GPU or driver?)", api->describe(r).c_str());
    loaded = std::move(api);
  }
  *out = loaded;
  return SK_OK;
}

}  // namespace sk::cuda
