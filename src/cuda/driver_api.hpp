// The CUDA driver API, resolved from libcuda.so.1 at run time. Only what libsk calls is
// declared; the types mirror cuda.h's ABI (tests/cpp/cuda/test_cuda_abi.cpp checks them against the
// toolkit's header where one is installed), so libsk needs no CUDA header to build.
#pragma once
#include <sk.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cuda/dynamic_library.hpp"

namespace sk::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// cuDeviceGetAttribute
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111;
// cuFuncGetAttribute
constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr int CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
constexpr int CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
// CUjit_option (cuModuleLoadDataEx)
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr int CU_JIT_GENERATE_LINE_INFO = 13;
// cuModuleLoadDataEx of PTX the JIT cannot compile
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
// cuPointerGetAttribute
constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
constexpr unsigned CU_MEMORYTYPE_HOST = 1;
// cuEventCreate
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
// cuStreamCreate
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
// cuStreamIsCapturing's CUstreamCaptureStatus
constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;
// CUstreamCaptureMode (cuStreamBeginCapture, cuThreadExchangeStreamCaptureMode)
constexpr int CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2;
// CUlimit
constexpr int CU_LIMIT_STACK_SIZE = 0;
// CUlaunchAttributeID
constexpr int CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2;
constexpr int CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;

// cuda.h's CUlaunchAttribute: a 4-byte id, padding to 8, a 64-byte value union.
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int cooperative;
    struct {
      unsigned x, y, z;
    } cluster_dim;
  } value;
};

// cuda.h's CUlaunchConfig.
struct LaunchConfig {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_mem_bytes;
  CUstream stream;
  LaunchAttribute *attrs;
  unsigned num_attrs;
};

// One cuLaunchKernelEx's configuration: a grid and block (x, y, z), dynamic shared bytes and a
// stream, and as attributes a cooperative launch and a thread block cluster (zeros: none). It
// points into itself: neither copied nor moved.
class KernelLaunch {
 public:
  KernelLaunch(const unsigned grid[3], const unsigned block[3], unsigned shared_bytes, CUstream stream,
               bool cooperative, const unsigned cluster[3] = nullptr);
  KernelLaunch(const KernelLaunch &) = delete;
  KernelLaunch &operator=(const KernelLaunch &) = delete;
  const LaunchConfig *config() const { return &config_; }

 private:
  LaunchConfig config_;
  LaunchAttribute attrs_[2];
};

struct DriverApi {
  DynamicLibrary library;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext *);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuCtxGetLimit)(size_t *, int);
  CUresult (*cuCtxSetLimit)(int, size_t);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuStreamIsCapturing)(CUstream, int *);
  CUresult (*cuThreadExchangeStreamCaptureMode)(int *);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
  CUresult (*cuLaunchKernelEx)(const LaunchConfig *, CUfunction, void **, void **);
  // The CUtensorMap to write (128 bytes, 64-byte aligned), then the parameters of
  // sk_tensor_map_desc in cuda.h's order; the four enumerations last.
  CUresult (*cuTensorMapEncodeTiled)(void *, int, uint32_t, void *, const uint64_t *, const uint64_t *,
                                     const uint32_t *, const uint32_t *, int, int, int, int);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);

  // "CUDA_ERROR_INVALID_VALUE (invalid argument)" for messages.
  std::string describe(CUresult r) const;
};

// The process's driver API: loads libcuda.so.1 (or $SK_CUDA_DRIVER_LIBRARY) and cuInit()s it
// once. Fails with SK_ERR_DEVICE saying what is missing; the failure is not cached, so a
// later call retries (a driver may be installed meanwhile).
sk_status driver_api(std::shared_ptr<const DriverApi> *out);

// Loads the driver API from `library` without the process-wide cache (tests use it to
// check the messages for a missing library or symbol).
sk_status load_driver_api(const std::string &library, std::shared_ptr<const DriverApi> *out);

}  // namespace sk::cuda
