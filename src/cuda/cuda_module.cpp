#include "cuda/cuda_module.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <xxhash.h>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "elf/fatbin.hpp"
#include "elf/shared_overlay_layout.hpp"

namespace sk::cuda {
namespace {

// NVVM's LTO-IR starts with this magic (little-endian 0x7f4e43ed).
constexpr uint8_t kLtoIrMagic[4] = {0xed, 0x43, 0x4e, 0x7f};

// A numeric field ("threads=N", "shared=N") of a CUDA-mode record, 0 when absent
// (parse_kernel_metadata skips fields it does not know, so the record stays readable by every
// reader).
sk_status record_number(const std::string &record, const std::string &label, const std::string &kernel,
                        const std::string &field, unsigned long low, unsigned long high, uint32_t *out) {
  *out = 0;
  const std::string key = ";" + field + "=";
  size_t t = record.find(key);
  if (t == std::string::npos) return SK_OK;
  t += key.size();
  const std::string value = record.substr(t, record.find(';', t) - t);
  char *end = nullptr;
  unsigned long v = std::strtoul(value.c_str(), &end, 10);
  if (value.empty() || *end || v < low || v > high)
    return fail(SK_ERR_BAD_BINARY, "%s: kernel '%s': metadata %s=%s is not in [%lu, %lu]", label.c_str(),
                kernel.c_str(), field.c_str(), value.c_str(), low, high);
  *out = (uint32_t)v;
  return SK_OK;
}

// A 64-bit little-endian ELF object for another machine than EM_CUDA: a host object, which may
// carry a fatbinary (nvcc -dc).
bool host_elf(const void *image, size_t size) {
  const auto *b = static_cast<const uint8_t *>(image);
  return size >= 64 && std::memcmp(b, "\177ELF", 4) == 0 && b[4] == 2 /* ELFCLASS64 */ &&
         b[5] == 1 /* ELFDATA2LSB */ && !elf::looks_like_cubin(image, size);
}

std::string record_kernel(const std::string &record) {
  size_t k = record.find(";kernel=");
  if (k == std::string::npos) return "";
  size_t end = record.find(';', k + 8);
  return record.substr(k + 8, end == std::string::npos ? std::string::npos : end - k - 8);
}

}  // namespace

std::vector<std::string> ptx_metadata_records(const std::string &ptx) {
  std::vector<std::string> records;
  const std::string marker = " sk_kernel_meta_";
  for (size_t at = ptx.find(marker); at != std::string::npos; at = ptx.find(marker, at + 1)) {
    const size_t open = ptx.find('{', at), close = ptx.find('}', at), eol = ptx.find('\n', at);
    if (open == std::string::npos || close == std::string::npos || (eol != std::string::npos && open > eol))
      continue;
    std::string text;
    for (size_t p = open + 1; p < close;) {
      char *end = nullptr;
      const unsigned long v = std::strtoul(ptx.c_str() + p, &end, 10);
      if (end == ptx.c_str() + p) break;
      if (v == 0) break;  // the terminating NUL
      text.push_back((char)v);
      p = (size_t)(end - ptx.c_str());
      while (p < close && (ptx[p] == ',' || ptx[p] == ' ')) ++p;
    }
    if (text.rfind("sk1;", 0) == 0) records.push_back(std::move(text));
  }
  return records;
}

namespace {
// Reads the `sk_kernel_meta_*` records of a cubin or of PTX into the module.
sk_status take_records(const std::vector<std::string> &records, CudaModule *m) {
  if (sk_status st = parse_kernel_metadata(records, m->label, &m->metadata); st != SK_OK) return st;
  for (const std::string &rec : records) {
    const std::string kernel = record_kernel(rec);
    uint32_t threads = 0, shared = 0;
    if (sk_status st = record_number(rec, m->label, kernel, "threads", 1, 1024, &threads); st != SK_OK) return st;
    // 227 KiB: the most dynamic shared memory a block may opt in to on any architecture.
    if (sk_status st = record_number(rec, m->label, kernel, "shared", 0, 227 * 1024, &shared); st != SK_OK)
      return st;
    if (threads) m->threads[kernel] = threads;
    if (shared) m->dynamic_shared[kernel] = shared;
  }
  return SK_OK;
}
}  // namespace

sk_status load_cuda_module(const void *image, size_t size, const std::string &label,
                           std::shared_ptr<const CudaModule> *out, const std::string &arch) {
  auto m = std::make_shared<CudaModule>();
  m->label = label;
  const auto *b = static_cast<const uint8_t *>(image);
  // What nvcc -dc writes by default (a host object whose __nv_relfatbin holds the cubins) and
  // nvcc -dc -fatbin: the cubin for the device's architecture, then read as if given alone.
  std::vector<uint8_t> extracted;
  if (elf::looks_like_fatbin(image, size) || host_elf(image, size)) {
    std::string what;
    if (sk_status st = elf::extract_fatbin_cubin(image, size, label, arch, &extracted, &what); st != SK_OK)
      return st;
    m->given.assign(b, b + size);
    m->label = label + " (" + what + ")";
    image = extracted.data();
    size = extracted.size();
    b = extracted.data();
  }
  if (size >= 4 && std::memcmp(b, kLtoIrMagic, 4) == 0) {
    m->kind = InputKind::LtoIr;
    std::shared_ptr<const NvJitLink> linker;
    std::string ptx;
    if (NvJitLink::get(&linker) == SK_OK &&
        linker->lto_to_ptx({InputKind::LtoIr, image, size, m->label}, arch, &ptx) == SK_OK) {
      if (sk_status st = take_records(ptx_metadata_records(ptx), m.get()); st != SK_OK) return st;
    } else {
      m->metadata_note = last_error();
    }
  } else if (size >= 4 && std::memcmp(b, "\177ELF", 4) == 0) {
    m->kind = InputKind::Cubin;
    if (sk_status st = elf::parse_cubin(image, size, m->label, &m->cubin); st != SK_OK) return st;
    if (m->cubin.type != 1 /* ET_REL */)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: a linked cubin cannot be fused; build the kernels relocatable: nvcc -dc (or -rdc=true), "
                  "e.g. nvcc -dc -cubin, or CMake's CUDA_SEPARABLE_COMPILATION",
                  m->label.c_str());
    if (sk_status st = take_records(m->cubin.metadata_records, m.get()); st != SK_OK) return st;
  } else {
    return fail(SK_ERR_BAD_BINARY,
                "%s: neither a cubin (ELF) nor LTO-IR (%zu bytes); build CUDA kernels with nvcc -dc -cubin or "
                "nvcc -dc -dlto -ltoir",
                m->label.c_str(), size);
  }
  if (!extracted.empty())
    m->bytes = std::move(extracted);
  else
    m->bytes.assign(b, b + size);
  *out = std::move(m);
  return SK_OK;
}

sk_status CudaModuleCache::load(const void *image, size_t size, const std::string &label, const std::string &arch,
                                std::shared_ptr<const CudaModule> *out) {
  const uint64_t key = XXH3_64bits(image, size);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto [it, end] = modules_.equal_range(key); it != end; ++it) {
    std::shared_ptr<const CudaModule> m = it->second.lock();
    if (!m) continue;
    const std::vector<uint8_t> &given = m->given.empty() ? m->bytes : m->given;
    if (given.size() == size && std::memcmp(given.data(), image, size) == 0) {
      *out = std::move(m);
      return SK_OK;
    }
  }
  std::shared_ptr<const CudaModule> m;
  if (sk_status st = load_cuda_module(image, size, label, &m, arch); st != SK_OK) return st;
  if (modules_.size() >= sweep_at_) {
    std::erase_if(modules_, [](const auto &entry) { return entry.second.expired(); });
    sweep_at_ = std::max<size_t>(64, 2 * modules_.size());
  }
  modules_.emplace(key, m);
  *out = std::move(m);
  return SK_OK;
}

sk_status make_cuda_kernel(const std::shared_ptr<const CudaModule> &module, const char *name, const char *signature,
                           const char *call, std::shared_ptr<CudaKernel> *out) {
  const CudaModule &m = *module;
  const std::string what = std::string("kernel '") + name + "' of " + m.label;
  const KernelMetadata *meta = nullptr;
  for (const KernelMetadata &k : m.metadata)
    if (k.name == name) meta = &k;
  auto k = std::make_shared<CudaKernel>();
  if (m.kind == InputKind::Cubin) {
    const elf::CubinFunction *fn = m.cubin.find(name);
    if (!fn) return fail(SK_ERR_NOT_FOUND, "%s: no function '%s' is defined in %s", call, name, m.label.c_str());
    if (fn->entry)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: %s is a __global__ kernel; sub-kernels are extern \"C\" __device__ functions (sk_kernel.h)",
                  call, what.c_str());
    const elf::CubinReach reach = m.cubin.reach(name);
    k->usage = device_api_usage(reach.externs);
    k->usage_paths = device_api_paths(reach.paths);
    for (const std::string &f : reach.functions) k->registers = std::max(k->registers, m.cubin.find(f)->registers);
    const elf::SharedOverlayLayout alone = elf::layout_shared_overlay({&m.cubin}, {{0, name}}, false);
    uint64_t in_place = 0;
    for (uint32_t v : reach.shared_vars)
      if (const elf::CubinSharedVar &var = m.cubin.shared_vars[v]; !var.overlay)
        in_place = (in_place + var.align - 1) / var.align * var.align + var.size;
    k->static_shared = (uint32_t)std::min<uint64_t>(alone.bytes + in_place, UINT32_MAX);
    if (reach.dynamic_shared && !m.dynamic_shared.count(name))
      return fail(SK_ERR_INCOMPATIBLE,
                  "%s: %s uses an extern __shared__ array but declares no size for it; record it with "
                  "SK_KERNEL_CUDA_SHARED(%s, signature, threads, bytes)",
                  call, what.c_str(), name);
  }
  const std::string no_metadata =
      "sk_kernel.h metadata (" +
      (!m.metadata_note.empty() ? m.metadata_note : "no sk_kernel_meta_ variable: built without SK_KERNEL_CUDA?") +
      ")";
  if (sk_status st = kernel_signature(signature, meta, what, call, no_metadata, &k->signature); st != SK_OK)
    return st;
  if (m.kind == InputKind::LtoIr)
    // The calls an LTO-IR function makes are unknown before linking: assume it synchronises
    // its blocks, so the planner never multiplexes them (which would hang sk_sync_all).
    k->usage = kUsesSyncAll | kUsesBlockIdx | kUsesBlockNum;
  if (meta) k->core_type = meta->core_type;
  if (auto it = m.threads.find(name); it != m.threads.end()) k->threads = it->second;
  if (auto it = m.dynamic_shared.find(name); it != m.dynamic_shared.end()) k->dynamic_shared = it->second;
  k->module = module;
  k->symbol = name;
  *out = std::move(k);
  return SK_OK;
}

}  // namespace sk::cuda
