#include "cuda/cuda_device.hpp"

#include <sk_kernel.h>

#include <cstdlib>
#include <cstring>

#include "common/device_spec.hpp"
#include "common/error.hpp"
#include "cuda/diagnostic_dump.hpp"
#include "cuda/entry_ptx.hpp"

namespace sk::cuda {

namespace {

// The cuda device's spec keys (documented in sk.h), in the order its unknown-key message names
// them. stack_bytes's bound: the driver refuses what it cannot reserve, and says so.
constexpr SpecKey kCudaKeys[] = {
    {"device", 0, 1023},           // also the leading bare ordinal
    {"timeout_ms", 1, 3'600'000},  // also $SK_CUDA_TIMEOUT_MS
    {"arch"},                      // sm_XY
    {"stack_bytes", 1, 1u << 20},
};
const SpecKey &kDeviceKey = kCudaKeys[0], &kTimeoutKey = kCudaKeys[1];

}  // namespace

sk_status parse_cuda_spec(const char *text, CudaSpec *out) {
  std::string spec(text);
  CudaSpec result;
  if (const char *env = std::getenv(kTimeoutEnv); env && *env) {
    uint64_t v = 0;
    if (parse_spec_uint(kTimeoutEnv, env, kTimeoutKey.min, kTimeoutKey.max, &v) != SK_OK)
      return fail(SK_ERR_INVALID_ARGUMENT,
                  "device spec \"%s\": environment variable %s='%s' is not an integer in [%llu, %llu] (ms)", text,
                  kTimeoutEnv, env, (unsigned long long)kTimeoutKey.min, (unsigned long long)kTimeoutKey.max);
    result.timeout_ms = v;
  }
  // "cuda:N[,key=value...]": a leading bare number is the device ordinal.
  size_t colon = spec.find(':');
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') {
    size_t comma = rest.find(',');
    std::string ordinal = rest.substr(0, comma);
    uint64_t v = 0;
    if (sk_status st = parse_spec_uint("device ordinal", ordinal, kDeviceKey.min, kDeviceKey.max, &v); st != SK_OK) {
      prefix_error(std::string("device spec \"") + text + "\"");
      return st;
    }
    result.ordinal = (int)v;
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  DeviceSpec parsed;
  if (sk_status st = parse_device_spec(("cuda" + (rest.empty() ? "" : ":" + rest)).c_str(), &parsed); st != SK_OK)
    return st;
  for (const auto &[key, value] : parsed.keys) {
    const SpecKey *known = find_spec_key(kCudaKeys, key);
    if (!known)
      return fail(SK_ERR_INVALID_ARGUMENT, "device spec \"%s\": unknown key '%s' for the cuda backend (keys: %s)",
                  text, key.c_str(), spec_key_names(kCudaKeys).c_str());
    uint64_t v = 0;
    if (known->integer())
      if (sk_status st = parse_spec_uint(key, value, known->min, known->max, &v); st != SK_OK) return st;
    if (key == "device") {
      result.ordinal = (int)v;
    } else if (key == "timeout_ms") {
      result.timeout_ms = v;
    } else if (key == "stack_bytes") {
      result.stack_bytes = (uint32_t)v;
    } else if (key == "arch") {
      if (value.rfind("sm_", 0) != 0 || value.size() < 5)
        return fail(SK_ERR_INVALID_ARGUMENT, "device spec \"%s\": arch '%s' is not of the form sm_XY", text,
                    value.c_str());
      result.arch = value;
    }
  }
  *out = std::move(result);
  return SK_OK;
}

namespace {

// Errors after which the context is unusable until the process ends (cuda.h: "the process
// must be terminated and relaunched").
bool sticky(CUresult r) {
  switch (r) {
    case 700:  // CUDA_ERROR_ILLEGAL_ADDRESS
    case 702:  // CUDA_ERROR_LAUNCH_TIMEOUT
    case 714:  // CUDA_ERROR_HARDWARE_STACK_ERROR
    case 715:  // CUDA_ERROR_ILLEGAL_INSTRUCTION
    case 716:  // CUDA_ERROR_MISALIGNED_ADDRESS
    case 717:  // CUDA_ERROR_INVALID_ADDRESS_SPACE
    case 718:  // CUDA_ERROR_INVALID_PC
    case 719:  // CUDA_ERROR_LAUNCH_FAILED
      return true;
    default: return false;
  }
}

}  // namespace

sk_status CudaDevice::check(CUresult r, const char *call, const char *what) const {
  if (r == CUDA_SUCCESS) return SK_OK;
  sk_status st = fail(SK_ERR_DEVICE, "%s: %s on %s (cuda:%d) failed: %s", call, what, name_.c_str(), device_,
                      api_->describe(r).c_str());
  if (sticky(r)) {
    std::lock_guard<std::mutex> lock(lost_mutex_);
    if (lost_.empty()) lost_ = sk_last_error();
  }
  return st;
}

sk_status CudaDevice::usable(const char *call) const {
  std::lock_guard<std::mutex> lock(lost_mutex_);
  if (lost_.empty()) return SK_OK;
  return fail(SK_ERR_DEVICE, "%s: %s (cuda:%d) is lost since an earlier error (open a new device to go on): %s",
              call, name_.c_str(), device_, lost_.c_str());
}

RelaxedCapture::RelaxedCapture(const DriverApi &api) : api_(api), mode_(CU_STREAM_CAPTURE_MODE_RELAXED) {
  exchanged_ = api_.cuThreadExchangeStreamCaptureMode(&mode_) == CUDA_SUCCESS;
}

RelaxedCapture::~RelaxedCapture() {
  if (exchanged_) api_.cuThreadExchangeStreamCaptureMode(&mode_);
}

ContextScope::ContextScope(const CudaDevice &device, const char *call, bool teardown) : device_(device) {
  if (!teardown && (status_ = device.usable(call)) != SK_OK) return;
  status_ = device.check(device.api_->cuCtxPushCurrent(device.context_), call, "cuCtxPushCurrent");
  pushed_ = status_ == SK_OK;
}

ContextScope::~ContextScope() {
  CUcontext popped = nullptr;
  if (pushed_) device_.api_->cuCtxPopCurrent(&popped);
}

sk_status CudaDevice::open(const CudaSpec &spec, std::shared_ptr<CudaDevice> *out) {
  std::shared_ptr<const DriverApi> api;
  if (sk_status st = driver_api(&api); st != SK_OK) {
    prefix_error("cuda:" + std::to_string(spec.ordinal));
    return st;
  }
  int count = 0;
  if (CUresult r = api->cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return fail(SK_ERR_DEVICE, "cuda:%d: cuDeviceGetCount failed: %s", spec.ordinal, api->describe(r).c_str());
  if (spec.ordinal >= count)
    return fail(SK_ERR_DEVICE, "cuda:%d: no such device (%d CUDA device%s present)", spec.ordinal, count,
                count == 1 ? "" : "s");
  std::shared_ptr<CudaDevice> dev(new CudaDevice());
  dev->api_ = api;
  dev->timeout_ms_ = spec.timeout_ms;
  dev->stack_bytes_ = spec.stack_bytes;
  const DriverApi &a = *api;
  if (CUresult r = a.cuDeviceGet(&dev->device_, spec.ordinal); r != CUDA_SUCCESS)
    return fail(SK_ERR_DEVICE, "cuda:%d: cuDeviceGet failed: %s", spec.ordinal, a.describe(r).c_str());
  char name[256] = {0};
  a.cuDeviceGetName(name, sizeof name - 1, dev->device_);
  dev->name_ = name;
  int major = 0, minor = 0, sms = 0, coop = 0;
  a.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->device_);
  a.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->device_);
  a.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev->device_);
  a.cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev->device_);
  if (major < 7)
    return fail(SK_ERR_UNSUPPORTED, "cuda:%d (%s): compute capability %d.%d; libsk needs sm_70 or newer",
                spec.ordinal, name, major, minor);
  if (!coop)
    return fail(SK_ERR_UNSUPPORTED, "cuda:%d (%s): no cooperative launch, which super kernels need", spec.ordinal,
                name);
  dev->sms_ = (uint32_t)sms;
  int optin = 0, reserved = 0;
  if (a.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev->device_) ==
          CUDA_SUCCESS &&
      optin > 0)
    dev->shared_optin_ = (uint32_t)optin;
  if (a.cuDeviceGetAttribute(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, dev->device_) ==
          CUDA_SUCCESS &&
      reserved > 0)
    dev->shared_reserved_ = (uint32_t)reserved;
  int driver = 0;
  if (a.cuDriverGetVersion(&driver) == CUDA_SUCCESS) dev->driver_version_ = driver;
  dev->arch_ = spec.arch.empty() ? "sm_" + std::to_string(major * 10 + minor) : spec.arch;
  if (CUresult r = a.cuDevicePrimaryCtxRetain(&dev->context_, dev->device_); r != CUDA_SUCCESS)
    return fail(SK_ERR_DEVICE, "cuda:%d: cuDevicePrimaryCtxRetain failed: %s", spec.ordinal, a.describe(r).c_str());
  dev->retained_ = true;
  ContextScope ctx(*dev, "sk_device_open");
  if (ctx.status() != SK_OK) return ctx.status();
  if (sk_status st = dev->check(a.cuStreamCreate(&dev->default_stream_, CU_STREAM_NON_BLOCKING), "sk_device_open",
                                "cuStreamCreate");
      st != SK_OK)
    return st;
  *out = std::move(dev);
  return SK_OK;
}

CudaDevice::~CudaDevice() {
  if (!api_) return;
  const DriverApi &a = *api_;
  if (context_) {
    CUcontext popped = nullptr;
    const bool pushed = a.cuCtxPushCurrent(context_) == CUDA_SUCCESS;
    if (default_stream_) {
      a.cuStreamSynchronize(default_stream_);
      a.cuStreamDestroy(default_stream_);
    }
    for (uintptr_t p : allocations_) a.cuMemFree((CUdeviceptr)p);
    if (pushed) a.cuCtxPopCurrent(&popped);
  }
  if (retained_) a.cuDevicePrimaryCtxRelease(device_);
}

sk_status CudaDevice::mem_alloc(size_t size, void **out) {
  ContextScope ctx(*this, "sk_mem_alloc");
  if (ctx.status() != SK_OK) return ctx.status();
  CUdeviceptr p = 0;
  CUresult r = api_->cuMemAlloc(&p, size ? size : 1);
  if (r == 2 /* CUDA_ERROR_OUT_OF_MEMORY */)
    return fail(SK_ERR_OUT_OF_MEMORY, "sk_mem_alloc: %zu bytes on %s: out of device memory", size, name_.c_str());
  if (sk_status st = check(r, "sk_mem_alloc", "cuMemAlloc"); st != SK_OK) return st;
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.insert((uintptr_t)p);
  *out = reinterpret_cast<void *>(p);
  return SK_OK;
}

bool CudaDevice::mem_free(void *ptr) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!allocations_.erase((uintptr_t)ptr)) return false;
  }
  ContextScope ctx(*this, "sk_mem_free");
  if (ctx.status() == SK_OK) api_->cuMemFree((CUdeviceptr)ptr);
  return true;
}

bool CudaDevice::driver_memory(const void *p) const {
  unsigned type = 0;
  return api_->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p) == CUDA_SUCCESS;
}

sk_status CudaDevice::memcpy(void *dst, const void *src, size_t size) {
  ContextScope ctx(*this, "sk_memcpy");
  if (ctx.status() != SK_OK) return ctx.status();
  // Waits for the device's queued work first, as on every backend.
  if (sk_status st = check(api_->cuCtxSynchronize(), "sk_memcpy", "cuCtxSynchronize"); st != SK_OK) return st;
  // The driver knows the memory it (or cudart, or a registration) made; anything it does not
  // know is pageable host memory, which the HtoD / DtoH forms take.
  auto on_device = [&](const void *p) {
    unsigned type = 0;
    return api_->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p) == CUDA_SUCCESS &&
           type != CU_MEMORYTYPE_HOST;
  };
  const bool dst_dev = on_device(dst), src_dev = on_device(src);
  if (!dst_dev && src_dev)
    return check(api_->cuMemcpyDtoH(dst, (CUdeviceptr)src, size), "sk_memcpy", "cuMemcpyDtoH");
  if (!dst_dev && !src_dev) {
    std::memmove(dst, src, size);
    return SK_OK;
  }
  const CUresult r = dst_dev && !src_dev ? api_->cuMemcpyHtoD((CUdeviceptr)dst, src, size)
                                         : api_->cuMemcpy((CUdeviceptr)dst, (CUdeviceptr)src, size);
  if (sk_status st = check(r, "sk_memcpy", src_dev ? "cuMemcpy" : "cuMemcpyHtoD"); st != SK_OK) return st;
  // These return before the data lands, on the legacy stream, which launches on libsk's
  // non-blocking streams do not wait for: sk_memcpy is a synchronous copy (sk.h).
  return check(api_->cuCtxSynchronize(), "sk_memcpy", "cuCtxSynchronize");
}

uint64_t CudaDevice::register_name(const std::string &name, std::vector<std::string> step_names,
                                   uint32_t first_step) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = next_id_++;
  names_[id] = {name, std::move(step_names), first_step};
  return id;
}

void CudaDevice::unregister_name(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.erase(id);
}

sk_status CudaDevice::reserve_stack(uint32_t bytes, const char *call, const std::string &name) {
  std::lock_guard<std::mutex> lock(stack_mutex_);
  size_t current = 0;
  if (sk_status st =
          check(api_->cuCtxGetLimit(&current, CU_LIMIT_STACK_SIZE), call, "cuCtxGetLimit(CU_LIMIT_STACK_SIZE)");
      st != SK_OK)
    return st;
  if (current >= bytes) return SK_OK;
  const CUresult r = api_->cuCtxSetLimit(CU_LIMIT_STACK_SIZE, bytes);
  if (r == CUDA_SUCCESS) return SK_OK;
  // The driver reserves the stack for every thread the GPU can hold at once.
  const std::string what = "cuCtxSetLimit(CU_LIMIT_STACK_SIZE, " + std::to_string(bytes) + ") for '" + name +
                           "', whose call stack needs " + std::to_string(bytes) +
                           " bytes per thread (the limit is " + std::to_string(current) + ")";
  return check(r, call, what.c_str());
}

void CudaDevice::add_report(uint64_t id, CUdeviceptr sync, size_t steps) {
  std::lock_guard<std::mutex> lock(mutex_);
  Report r;
  r.sync = sync;
  r.address = sync + sync_layout(steps).report;
  r.steps = steps;
  reports_[id] = std::move(r);
}

void CudaDevice::remove_report(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  reports_.erase(id);
}

bool CudaDevice::launching(uint64_t id, CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = reports_.find(id);
  if (it == reports_.end()) return false;
  it->second.pending.insert(stream);
  const bool taken = it->second.taken;
  it->second.taken = false;
  return taken;
}

void CudaDevice::forget_stream(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto &[id, r] : reports_) r.pending.erase(stream);
}

void CudaDevice::dump_aborted_launch(uint64_t id, const std::string &message) {
  if (!dumping()) return;
  CUdeviceptr sync = 0;
  std::vector<std::string> steps;
  std::string name = "#" + std::to_string(id);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = reports_.find(id);
    if (it == reports_.end()) return;
    sync = it->second.sync;
    steps.resize(it->second.steps, "?");
    if (auto n = names_.find(id); n != names_.end()) {
      name = n->second.name;
      for (size_t i = 0; i < steps.size() && i < n->second.steps.size(); ++i) steps[i] = n->second.steps[i];
    }
  }
  std::vector<uint64_t> words(sync_layout(steps.size()).bytes / 8);
  // A failed read leaves the dump out; the synchronisation's report stands as it is.
  if (api_->cuMemcpyDtoH(words.data(), sync, words.size() * 8) == CUDA_SUCCESS)
    dump_sync_buffer(id, name, steps, words, message);
}

sk_status CudaDevice::take_hang_report(CUstream stream, const char *call) {
  // The reports of the super kernels launched on `stream`: their launches up to the last one
  // there are over (a super kernel's launches run one after another).
  std::vector<std::pair<uint64_t, CUdeviceptr>> look;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto &[id, r] : reports_)
      if (r.pending.erase(stream) && !r.taken) look.emplace_back(id, r.address);
  }
  uint64_t words[kReportWords] = {0};
  uint64_t id = 0;
  for (const auto &[rid, address] : look) {
    uint64_t w[kReportWords] = {0};
    if (sk_status st = check(api_->cuMemcpyDtoH(w, address, sizeof w), call, "reading the hang report"); st != SK_OK)
      return st;
    if (w[kReportEpoch] == 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = reports_.find(rid);
    if (it == reports_.end() || it->second.taken) continue;  // destroyed, or another sync took it
    it->second.taken = true;  // every hang these launches had is reported once, as the first
    if (!id) {
      id = rid;
      std::memcpy(words, w, sizeof w);
    }
  }
  if (!id) return SK_OK;
  std::string name = "#" + std::to_string(words[kReportId]), step = "?";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = names_.find(words[kReportId]); it != names_.end()) {
      name = it->second.name;
      if (words[kReportStep] < it->second.steps.size()) step = it->second.steps[words[kReportStep]];
      words[kReportStep] += it->second.first_step;  // the super kernel's step, where its dispatch is not the first
    }
  }
  sk_status st;
  if (words[kReportPoint] == (uint64_t)SyncPoint::InvalidFlag)
    st = fail(SK_ERR_INVALID_ARGUMENT,
              "%s: super kernel '%s' on %s: block %llu of step %llu '%s' called %s(%llu): flag ids are 0..%u; the "
              "launch was aborted",
              call, name.c_str(), name_.c_str(), (unsigned long long)words[kReportBlock],
              (unsigned long long)words[kReportStep], step.c_str(), flag_call_name(words[kReportFlagCall]),
              (unsigned long long)words[kReportFlagId], SK_CROSS_CORE_FLAGS - 1);
  else
    st = fail(SK_ERR_HANG,
              "%s: super kernel '%s' on %s: block %llu of step %llu '%s' waited past the %llu ms deadline at %s "
              "(counter %llu of %llu); the launch was aborted",
              call, name.c_str(), name_.c_str(), (unsigned long long)words[kReportBlock],
              (unsigned long long)words[kReportStep], step.c_str(), (unsigned long long)timeout_ms_,
              sync_point_name((uint32_t)words[kReportPoint]), (unsigned long long)words[kReportSeen],
              (unsigned long long)words[kReportTarget]);
  dump_aborted_launch(id, sk_last_error());
  return st;
}

}  // namespace sk::cuda
