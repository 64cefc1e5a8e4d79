// The CUDA backend's device: open, close, streams, synchronisation, module loading and kernel lookup.
#include "cuda/cuda_backend.hpp"

#include "common/error.hpp"
#include "cuda/module_set.hpp"
#include "cuda/open.hpp"
#include "cuda/tensor_map.hpp"

namespace sk::cuda {
namespace {

// Every wait of a CUDA device (sk_stream_synchronize, sk_device_synchronize, sk_stream_query)
// is a stream synchronize, and its messages name it so: waits, then reports a hang a super
// kernel recorded.
sk_status synchronize_stream(CudaDevice &d, CUstream stream) {
  constexpr const char *call = "sk_stream_synchronize";
  ContextScope ctx(d, call);
  if (ctx.status() != SK_OK) return ctx.status();
  // The driver would end the capture, failing it: the application's graph is not libsk's to lose.
  int capture = 0;
  if (sk_status st = d.check(d.api().cuStreamIsCapturing(stream, &capture), call, "cuStreamIsCapturing");
      st != SK_OK)
    return st;
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return fail(SK_ERR_STATE,
                "%s: the stream is being captured into a CUDA graph (cuStreamBeginCapture); end the capture before "
                "waiting for it",
                call);
  if (sk_status st = d.check(d.api().cuStreamSynchronize(stream), call, "cuStreamSynchronize"); st != SK_OK)
    return st;
  return d.take_hang_report(stream, call);
}

}  // namespace

sk_status open_cuda_backend(const char *spec, std::shared_ptr<backend::Device> *out) {
  CudaSpec parsed;
  if (sk_status st = parse_cuda_spec(spec, &parsed); st != SK_OK) return st;
  std::shared_ptr<CudaDevice> gpu;
  if (sk_status st = CudaDevice::open(parsed, &gpu); st != SK_OK) return st;
  *out = std::make_shared<CudaBackendDevice>(std::move(gpu));
  return SK_OK;
}

void CudaBackendDevice::close() {
  ContextScope ctx(*gpu_, "sk_device_close", true);
  if (ctx.status() == SK_OK) gpu_->api().cuCtxSynchronize();
}

sk_status CudaBackendDevice::create_stream(std::unique_ptr<backend::Stream> *out) {
  auto s = std::make_unique<CudaBackendStream>(shared_from_this(), gpu_);
  ContextScope ctx(*gpu_, "sk_stream_create");
  if (ctx.status() != SK_OK) return ctx.status();
  if (sk_status st = gpu_->check(gpu_->api().cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING), "sk_stream_create",
                                 "cuStreamCreate");
      st != SK_OK)
    return st;
  *out = std::move(s);
  return SK_OK;
}

sk_status CudaBackendDevice::encode_tensor_map(const sk_tensor_map_desc &desc, void *out) {
  return sk::cuda::encode_tensor_map(*gpu_, desc, out);
}

sk_status CudaBackendDevice::wrap_stream(void *handle, std::unique_ptr<backend::Stream> *out) {
  constexpr const char *call = "sk_stream_create_cuda";
  if (!handle)
    return fail(SK_ERR_INVALID_ARGUMENT,
                "%s: cu_stream is NULL (the legacy stream, which libsk's launches do not order against); pass a "
                "stream made with cuStreamCreate or cudaStreamCreate",
                call);
  ContextScope ctx(*gpu_, call);
  if (ctx.status() != SK_OK) return ctx.status();
  // A handle the driver does not know fails here rather than at the first launch.
  int capture = 0;
  if (sk_status st = gpu_->check(gpu_->api().cuStreamIsCapturing(static_cast<CUstream>(handle), &capture), call,
                                 "cuStreamIsCapturing of cu_stream");
      st != SK_OK)
    return st;
  auto s = std::make_unique<CudaBackendStream>(shared_from_this(), gpu_);
  s->stream = static_cast<CUstream>(handle);
  s->owned = false;
  *out = std::move(s);
  return SK_OK;
}

CudaBackendStream::~CudaBackendStream() {
  if (!stream) return;
  ContextScope ctx(*gpu, "sk_stream_destroy", true);
  int capture = 0;
  // A stream being captured cannot be waited for without failing the capture.
  if (gpu->api().cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS || capture == CU_STREAM_CAPTURE_STATUS_NONE)
    gpu->api().cuStreamSynchronize(stream);
  gpu->forget_stream(stream);  // a later stream may get its handle
  if (owned) gpu->api().cuStreamDestroy(stream);
}

sk_status CudaBackendDevice::create_event(std::unique_ptr<backend::Event> *out) {
  auto e = std::make_unique<CudaBackendEvent>(shared_from_this(), gpu_);
  ContextScope ctx(*gpu_, "sk_event_create");
  if (ctx.status() != SK_OK) return ctx.status();
  if (sk_status st = gpu_->check(gpu_->api().cuEventCreate(&e->event, CU_EVENT_DISABLE_TIMING), "sk_event_create",
                                 "cuEventCreate");
      st != SK_OK)
    return st;
  *out = std::move(e);
  return SK_OK;
}

CudaBackendEvent::~CudaBackendEvent() {
  if (!event) return;
  ContextScope ctx(*gpu, "sk_event_destroy", true);
  gpu->api().cuEventDestroy(event);
}

sk_status CudaBackendDevice::record_event(backend::Event *event, backend::Stream *stream) {
  ContextScope ctx(*gpu_, "sk_event_record");
  if (ctx.status() != SK_OK) return ctx.status();
  return gpu_->check(
      gpu_->api().cuEventRecord(static_cast<CudaBackendEvent *>(event)->event, driver_stream(*gpu_, stream)),
      "sk_event_record", "cuEventRecord");
}

sk_status CudaBackendDevice::wait_event(backend::Stream *waiter, backend::Event *event) {
  ContextScope ctx(*gpu_, "sk_stream_wait_event");
  if (ctx.status() != SK_OK) return ctx.status();
  return gpu_->check(
      gpu_->api().cuStreamWaitEvent(driver_stream(*gpu_, waiter), static_cast<CudaBackendEvent *>(event)->event, 0),
      "sk_stream_wait_event", "cuStreamWaitEvent");
}

sk_status CudaBackendDevice::synchronize(backend::Stream *stream, const char *) {
  return synchronize_stream(*gpu_, driver_stream(*gpu_, stream));
}

sk_status CudaBackendDevice::query(backend::Stream *stream, bool *done) {
  sk_status st = synchronize_stream(*gpu_, driver_stream(*gpu_, stream));
  if (st == SK_OK) *done = true;
  return st;
}

sk_status CudaBackendDevice::load_module(const std::vector<backend::ModuleImage> &images, const char *call,
                                         std::unique_ptr<backend::Module> *out) {
  if (sk_status st = gpu_->usable("sk_module_load"); st != SK_OK) return st;
  std::shared_ptr<const CudaModule> m;
  if (is_module_set(images)) {
    if (sk_status st = load_module_set(images, gpu_->arch(), modules_, call, &m); st != SK_OK) return st;
  } else if (sk_status st = modules_.load(images[0].bytes, images[0].size, images[0].label, gpu_->arch(), &m);
             st != SK_OK) {
    return st;
  }
  *out = std::make_unique<CudaBackendModule>(shared_from_this(), gpu_, std::move(m));
  return SK_OK;
}

sk_status CudaBackendModule::get_kernel(const char *name, const backend::KernelRequest &request, const char *call,
                                        std::shared_ptr<backend::Kernel> *out) {
  std::shared_ptr<CudaKernel> ck;
  if (sk_status st = make_cuda_kernel(module, name, request, call, &ck); st != SK_OK) return st;
  auto k = std::make_shared<CudaBackendKernel>(device_);
  k->symbol = name;
  k->core_type = ck->core_type;
  parse_kernel_kind(k->core_type, &k->kind);
  k->set_signature(ck->signature);
  k->usage = ck->usage;
  k->usage_paths = ck->usage_paths;
  k->multi_dimensional_grid = ck->ptx && ck->ptx->multi_dimensional_grid;
  k->plain_launch = ck->plain;
  k->gpu = gpu;
  k->kernel = std::move(ck);
  *out = std::move(k);
  return SK_OK;
}

}  // namespace sk::cuda
