// A stand-in for libcuda.so.1 on machines without a GPU (loaded through SK_CUDA_DRIVER_LIBRARY
// by test_cuda_fake_driver.cpp): "device memory" is host memory, modules are checked for an
// ELF image and the function name, and launches are recorded instead of run. It lets the
// launch path of the CUDA backend (finalize, co-residency clipping, parameters, epochs, stream
// ordering, argument rebinding, hang reports) be tested without a GPU. Not a simulator: no
// kernel code runs.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"

namespace {

struct Launch {
  unsigned grid, block;
  int cooperative;
  void *stream;
  uint64_t first_slot;   // first 8 bytes of the argument slots (parameter or buffer mode)
  uint64_t args_buffer;  // buffer mode: the buffer's address; 0 in parameter mode
  uint64_t sync, epoch, report;
};

std::mutex g_mutex;
std::vector<Launch> g_launches;
std::vector<std::pair<void *, void *>> g_waits;  // (stream, event) of cuStreamWaitEvent
int g_occupancy = 2;                             // blocks per SM
std::map<uint64_t, size_t> g_allocations;        // "device" memory: address -> size

// The launch configuration libsk passes: its own mirror of cuda.h's CUlaunchConfig.
using sk::cuda::LaunchConfig;

}  // namespace

extern "C" {

// ---- test controls -------------------------------------------------------------------------
struct FakeLaunch {
  unsigned grid, block;
  int cooperative;
  void *stream;
  uint64_t first_slot, args_buffer, sync, epoch, report;
};
int fake_cuda_launches(FakeLaunch *out, int cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (const Launch &l : g_launches) {
    if (n < cap) out[n] = {l.grid, l.block, l.cooperative, l.stream, l.first_slot, l.args_buffer, l.sync, l.epoch, l.report};
    ++n;
  }
  return n;
}
int fake_cuda_stream_waits() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return (int)g_waits.size();
}
void fake_cuda_reset(int occupancy) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_launches.clear();
  g_waits.clear();
  g_occupancy = occupancy;
}

// ---- the driver API libsk binds ------------------------------------------------------------
int cuInit(unsigned) { return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
int cuDeviceGetName(char *name, int len, int) {
  std::strncpy(name, "Fake GPU", (size_t)len);
  return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int) {
  switch (attr) {
    case 1: *v = 1024; break;   // max threads per block
    case 16: *v = 4; break;     // SMs
    case 75: *v = 9; break;     // compute capability 9.0
    case 76: *v = 0; break;
    case 95: *v = 1; break;     // cooperative launch
    default: *v = 0;
  }
  return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) { *ctx = reinterpret_cast<void *>(0x1000); return 0; }
int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
int cuCtxSetCurrent(void *) { return 0; }
int cuCtxSynchronize() { return 0; }
int cuMemAlloc_v2(uint64_t *p, size_t size) {
  *p = reinterpret_cast<uint64_t>(std::calloc(1, size));
  if (!*p) return 2;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_allocations[*p] = size;
  return 0;
}
int cuMemFree_v2(uint64_t p) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_allocations.erase(p);
  }
  std::free(reinterpret_cast<void *>(p));
  return 0;
}
// Device memory: inside an allocation of cuMemAlloc; anything else is unknown (host) memory.
int cuPointerGetAttribute(void *out, int attr, uint64_t p) {
  if (attr != 2) return 1;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_allocations.upper_bound(p);
  if (it == g_allocations.begin()) return 1;  // CUDA_ERROR_INVALID_VALUE
  --it;
  if (p >= it->first + it->second) return 1;
  *static_cast<unsigned *>(out) = 2;  // CU_MEMORYTYPE_DEVICE
  return 0;
}
int cuMemcpy(uint64_t dst, uint64_t src, size_t n) {
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src), n);
  return 0;
}
int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) {
  std::memcpy(reinterpret_cast<void *>(dst), src, n);
  return 0;
}
int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) {
  std::memcpy(dst, reinterpret_cast<void *>(src), n);
  return 0;
}
int cuMemsetD8_v2(uint64_t dst, unsigned char v, size_t n) {
  std::memset(reinterpret_cast<void *>(dst), v, n);
  return 0;
}
int cuStreamCreate(void **s, unsigned) { *s = new int(0); return 0; }
int cuStreamDestroy_v2(void *s) { delete static_cast<int *>(s); return 0; }
int cuStreamSynchronize(void *) { return 0; }
int cuStreamWaitEvent(void *s, void *e, unsigned) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_waits.emplace_back(s, e);
  return 0;
}
int cuEventCreate(void **e, unsigned) { *e = new int(0); return 0; }
int cuEventDestroy_v2(void *e) { delete static_cast<int *>(e); return 0; }
int cuEventRecord(void *, void *) { return 0; }
int cuEventSynchronize(void *) { return 0; }
int cuModuleLoadData(void **m, const void *image) {
  if (std::memcmp(image, "\177ELF", 4) != 0) return 200;  // CUDA_ERROR_INVALID_IMAGE
  *m = new int(0);
  return 0;
}
int cuModuleUnload(void *m) { delete static_cast<int *>(m); return 0; }
int cuModuleGetFunction(void **f, void *, const char *name) {
  if (std::strcmp(name, "sk_superkernel_entry") != 0) return 500;  // CUDA_ERROR_NOT_FOUND
  *f = reinterpret_cast<void *>(0x2000);
  return 0;
}
int cuFuncGetAttribute(int *v, int attr, void *) {
  *v = attr == 4 ? 40 : 1024;
  return 0;
}
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *, int, size_t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *n = g_occupancy;
  return 0;
}
int cuLaunchKernelEx(const LaunchConfig *cfg, void *, void **params, void **) {
  Launch l{};
  l.grid = cfg->grid_x;
  l.block = cfg->block_x;
  for (unsigned i = 0; i < cfg->num_attrs; ++i)
    if (cfg->attrs[i].id == sk::cuda::CU_LAUNCH_ATTRIBUTE_COOPERATIVE) l.cooperative = cfg->attrs[i].value.cooperative;
  l.stream = cfg->stream;
  std::memcpy(&l.sync, params[1], 8);
  std::memcpy(&l.epoch, params[2], 8);
  std::memcpy(&l.report, params[3], 8);
  std::memcpy(&l.first_slot, params[0], 8);  // parameter mode: the first slot itself
  std::lock_guard<std::mutex> lock(g_mutex);
  g_launches.push_back(l);
  return 0;
}
int cuGetErrorName(int r, const char **s) {
  *s = r == 500 ? "CUDA_ERROR_NOT_FOUND" : r == 200 ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR_FAKE";
  return 0;
}
int cuGetErrorString(int, const char **s) {
  *s = "fake driver error";
  return 0;
}

}  // extern "C"
