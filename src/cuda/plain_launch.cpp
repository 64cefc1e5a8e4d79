#include "cuda/plain_launch.hpp"

#include <cstring>
#include <map>

#include "common/error.hpp"
#include "cuda/cuda_kernel.hpp"
#include "cuda/linked_program.hpp"

namespace sk::cuda {
namespace {

// The blocks a portable cluster holds at most (more needs the driver's non-portable opt-in).
constexpr uint64_t kMaxClusterBlocks = 8;

std::string xyz(const uint32_t v[3]) {
  return "{" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + "}";
}

// The largest power of two, up to 8, that divides `v` (0: 8).
uint32_t alignment_of(uint32_t v) {
  uint32_t a = 8;
  while (a > 1 && v % a) a /= 2;
  return a;
}

// The type a parameter's size and offset give.
std::string spelled_type(const elf::CubinParam &p) {
  if (p.size == 8 && p.offset % 8 == 0) return "ptr";
  if (p.size == 4 && p.offset % 4 == 0) return "u32";
  if (p.size == 2 && p.offset % 2 == 0) return "u16";
  if (p.size == 1) return "u8";
  const uint32_t a = std::min(alignment_of(p.size), alignment_of(p.offset));
  const char *member = a == 1 ? "u8" : a == 2 ? "u16" : a == 4 ? "u32" : "u64";
  return std::string("{") + member + "[" + std::to_string(p.size / a) + "]}";
}

}  // namespace

sk_status plain_signature(const elf::CubinFunction &fn, const char *given, const std::string &what, const char *call,
                          Signature *out) {
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (fn.params[i].ordinal != i || fn.params[i].size == 0)
      return fail(SK_ERR_BAD_BINARY,
                  "%s: %s: its .nv.info records parameter %u at offset %u with %u bytes as its parameter %zu of %zu "
                  "(EIATTR_KPARAM_INFO)",
                  call, what.c_str(), fn.params[i].ordinal, fn.params[i].offset, fn.params[i].size, i,
                  fn.params.size());
    if (fn.params[i].size > kMaxAggregateBytes)
      return fail(SK_ERR_UNSUPPORTED, "%s: %s: parameter %zu is %u bytes, more than the %zu libsk passes by value",
                  call, what.c_str(), i, fn.params[i].size, kMaxAggregateBytes);
  }
  // Its parameters must fill the parameter space its launch passes (EIATTR_CBANK_PARAM_SIZE):
  // a record libsk does not read would otherwise leave a parameter out, unseen.
  uint32_t extent = 0;
  for (const elf::CubinParam &p : fn.params) extent = std::max(extent, p.offset + p.size);
  if (extent != fn.param_bytes)
    return fail(SK_ERR_UNSUPPORTED,
                "%s: %s: its .nv.info records %zu parameters ending at byte %u of its %u bytes of parameters, so "
                "libsk cannot tell what its launch passes",
                call, what.c_str(), fn.params.size(), extent, fn.param_bytes);
  std::string derived;
  for (const elf::CubinParam &p : fn.params) derived += (derived.empty() ? "" : ",") + spelled_type(p);
  Signature own;
  if (sk_status st = parse_signature(derived, what, &own); st != SK_OK) return st;
  if (!given) {
    *out = std::move(own);
    return SK_OK;
  }
  Signature sig;
  if (sk_status st = parse_signature(given, what, &sig); st != SK_OK) return st;
  if (sig.size() != own.size())
    return fail(SK_ERR_INCOMPATIBLE, "%s: %s has %zu parameters in its cubin (sizes %s), not %zu", call,
                what.c_str(), own.size(), derived.c_str(), sig.size());
  for (size_t i = 0; i < sig.size(); ++i)
    if (arg_size(sig[i]) != fn.params[i].size)
      return fail(SK_ERR_INCOMPATIBLE,
                  "%s: %s: parameter %zu is %u bytes in its cubin, which %s (%zu bytes) does not pass", call,
                  what.c_str(), i, fn.params[i].size, type_to_string(sig[i]).c_str(), arg_size(sig[i]));
  *out = std::move(sig);
  return SK_OK;
}

sk_status check_cluster_request(const backend::KernelRequest &request, bool plain, const std::string &what,
                                const char *call) {
  const uint32_t *c = request.cluster;
  if (!c[0] && !c[1] && !c[2]) return SK_OK;
  if (!c[0] || !c[1] || !c[2])
    return fail(SK_ERR_INVALID_ARGUMENT, "%s: %s: cluster %s has an extent of 0 (each is at least 1; zeros: none)",
                call, what.c_str(), xyz(c).c_str());
  const uint64_t blocks = uint64_t{c[0]} * c[1] * c[2];
  if (blocks > kMaxClusterBlocks)
    return fail(SK_ERR_INVALID_ARGUMENT,
                "%s: %s: cluster %s is %llu blocks, more than the %llu of a portable cluster", call, what.c_str(),
                xyz(c).c_str(), static_cast<unsigned long long>(blocks),
                static_cast<unsigned long long>(kMaxClusterBlocks));
  if (!plain)
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: %s is fused, and a super kernel runs in no thread block cluster: a cluster "
                "(sk_kernel_desc.cluster) is for a kernel of linked SASS, launched as compiled",
                call, what.c_str());
  return SK_OK;
}

sk_status check_cluster_grid(const CudaKernel &k, uint32_t block_dim, const GridShape &grid,
                             const std::string &subject, const char *call) {
  if (!k.cluster[0]) return SK_OK;
  const GridShape g = launch_grid(block_dim, grid);
  for (int d = 0; d < 3; ++d)
    if (g[d] % k.cluster[d])
      return fail(SK_ERR_INCOMPATIBLE,
                  "%s: %s runs in clusters of %s blocks (%s), which its grid {%u, %u, %u} does not hold whole", call,
                  subject.c_str(), xyz(k.cluster).c_str(), k.cluster_from.c_str(), g[0], g[1], g[2]);
  return SK_OK;
}

sk_status make_plain_kernel(const elf::CubinFunction &fn, const backend::KernelRequest &request,
                            const std::string &what, const char *call, CudaKernel *k) {
  if (sk_status st = plain_signature(fn, request.signature, what, call, &k->signature); st != SK_OK) return st;
  const uint32_t *req = fn.reqntid, *max = fn.max_threads;
  const uint32_t req_threads = req[0] * std::max(req[1], 1u) * std::max(req[2], 1u);
  const uint32_t max_threads = max[0] * std::max(max[1], 1u) * std::max(max[2], 1u);
  uint32_t block[3] = {request.block[0], request.block[1], request.block[2]};
  if (!block[0] && request.threads) block[0] = request.threads, block[1] = block[2] = 1;
  if (block[0]) {
    const uint32_t threads = block[0] * block[1] * block[2];
    if (req_threads && (block[0] != req[0] || block[1] != std::max(req[1], 1u) || block[2] != std::max(req[2], 1u)))
      return fail(SK_ERR_INCOMPATIBLE,
                  "%s: %s requires a block of %u x %u x %u threads (.reqntid), not {%u, %u, %u}", call, what.c_str(),
                  req[0], std::max(req[1], 1u), std::max(req[2], 1u), block[0], block[1], block[2]);
    if (max_threads && threads > max_threads)
      return fail(SK_ERR_INCOMPATIBLE, "%s: %s runs at most %u threads per block (__launch_bounds__), not %u", call,
                  what.c_str(), max_threads, threads);
    k->threads_from = "caller";
  } else if (req_threads) {
    block[0] = req[0], block[1] = std::max(req[1], 1u), block[2] = std::max(req[2], 1u);
    k->threads_from = ".reqntid";
  } else if (max_threads) {
    block[0] = max_threads, block[1] = block[2] = 1;
    k->threads_from = ".maxntid";
  } else if (request.stand_ins) {
    block[0] = kDefaultThreads, block[1] = block[2] = 1;
    k->threads_from = "stand-in";
    k->stand_ins.push_back("threads");
  } else {
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: %s does not say its threads per block (its cubin records no __launch_bounds__): give the block "
                "its launches have when taking it (sk_kernel_desc.threads, or sk_kernel_desc.block)",
                call, what.c_str());
  }
  std::copy(block, block + 3, k->block);
  k->threads = block[0] * block[1] * block[2];
  // SASS does not say whether it uses an `extern __shared__` array: the caller's size, as a
  // launch's sharedMemBytes.
  k->dynamic_shared = request.dynamic_shared;
  if (request.dynamic_shared) k->dynamic_shared_from = "caller";
  k->registers = fn.registers;
  k->static_shared = fn.shared_bytes;
  if (fn.grid_sync) k->usage |= kUsesGridSync;
  // Its cluster: compiled in (the driver applies it), else the caller's, which a kernel compiled
  // for a cluster its launch gives (.explicitcluster) needs.
  const uint32_t *given = request.cluster, *compiled = fn.cluster_dims;
  if (compiled[0] && given[0] && !std::equal(given, given + 3, compiled))
    return fail(SK_ERR_INCOMPATIBLE, "%s: %s was compiled for clusters of %s blocks (__cluster_dims__), not %s",
                call, what.c_str(), xyz(compiled).c_str(), xyz(given).c_str());
  if (compiled[0]) {
    std::copy(compiled, compiled + 3, k->cluster);
    k->cluster_from = "__cluster_dims__";
  } else if (given[0]) {
    std::copy(given, given + 3, k->cluster);
    k->cluster_from = "caller";
  } else if (fn.explicit_cluster && request.stand_ins) {
    std::fill(k->cluster, k->cluster + 3, 1u);
    k->cluster_from = "stand-in";
    k->stand_ins.push_back("cluster");
  } else if (fn.explicit_cluster) {
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: %s runs only in a thread block cluster its launch gives (.explicitcluster): give the cluster "
                "its launches have when taking it (sk_kernel_desc.cluster)",
                call, what.c_str());
  }
  k->plain = true;
  return SK_OK;
}

PlainFunction::PlainFunction(std::shared_ptr<CudaDevice> gpu, std::shared_ptr<const CudaKernel> kernel,
                             bool cooperative)
    : gpu_(std::move(gpu)),
      kernel_(std::move(kernel)),
      cooperative_(cooperative),
      param_slots_(slot_offsets(kernel_->signature)) {}

sk_status LoadedCubin::get(const std::shared_ptr<CudaDevice> &gpu, const std::shared_ptr<const CudaModule> &module,
                           const std::string &kernel, const char *call, std::shared_ptr<LoadedCubin> *out) {
  // By device and module, both kept alive by the load the entry points at.
  static std::mutex mutex;
  static std::map<std::pair<const CudaDevice *, const CudaModule *>, std::weak_ptr<LoadedCubin>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  std::erase_if(loaded, [](const auto &entry) { return entry.second.expired(); });
  const auto key = std::make_pair(gpu.get(), module.get());
  if (auto it = loaded.find(key); it != loaded.end()) {
    *out = it->second.lock();
    return SK_OK;
  }
  CUmodule handle = nullptr;
  const std::string what = "cuModuleLoadData of the cubin of kernel '" + kernel + "'";
  if (sk_status st = gpu->check(gpu->api().cuModuleLoadData(&handle, module->bytes.data()), call, what.c_str());
      st != SK_OK)
    return st;
  *out = std::make_shared<LoadedCubin>(gpu, module, handle);
  loaded.emplace(key, *out);
  return SK_OK;
}

LoadedCubin::~LoadedCubin() {
  ContextScope ctx(*gpu_, "sk_kernel_destroy", true);
  if (ctx.status() == SK_OK) gpu_->api().cuModuleUnload(handle_);
}

sk_status PlainFunction::load(const char *call) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (function_) return SK_OK;
  const DriverApi &a = gpu_->api();
  std::shared_ptr<LoadedCubin> cubin;
  if (sk_status st = LoadedCubin::get(gpu_, kernel_->module, kernel_->symbol, call, &cubin); st != SK_OK) return st;
  CUfunction fn = nullptr;
  sk_status st = gpu_->check(a.cuModuleGetFunction(&fn, cubin->handle(), kernel_->symbol.c_str()), call,
                             ("cuModuleGetFunction '" + kernel_->symbol + "'").c_str());
  if (st == SK_OK && kernel_->static_shared + kernel_->dynamic_shared > kDefaultSharedLimit) {
    const std::string opt_in = "cuFuncSetAttribute (" + std::to_string(kernel_->dynamic_shared) +
                               " bytes of dynamic shared memory of kernel '" + kernel_->symbol + "')";
    st = gpu_->check(
        a.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)kernel_->dynamic_shared),
        call, opt_in.c_str());
  }
  if (st != SK_OK) return st;  // the cubin is unloaded with the last kernel that holds it
  cubin_ = std::move(cubin);
  function_ = fn;
  return SK_OK;
}

sk_status PlainFunction::launch(uint32_t block_dim, const GridShape &grid, const uint64_t *slots, CUstream stream,
                                const char *call) {
  ContextScope ctx(*gpu_, call);
  if (ctx.status() != SK_OK) return ctx.status();
  if (sk_status st = load(call); st != SK_OK) return st;
  const CudaKernel &k = *kernel_;
  std::vector<void *> params(k.signature.size());
  for (size_t i = 0; i < params.size(); ++i) params[i] = const_cast<uint64_t *>(slots + param_slots_[i]);
  const GridShape shape = launch_grid(block_dim, grid);
  // The caller's cluster is the launch's; __cluster_dims__ the driver applies itself.
  const KernelLaunch launch(shape.data(), k.block, k.dynamic_shared, stream, cooperative_,
                            k.cluster_from == "caller" ? k.cluster : nullptr);
  return gpu_->check(gpu_->api().cuLaunchKernelEx(launch.config(), function_, params.data(), nullptr), call,
                     ("cuLaunchKernelEx of kernel '" + k.symbol + "'").c_str());
}

}  // namespace sk::cuda
