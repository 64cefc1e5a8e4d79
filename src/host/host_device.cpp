#include "host/host_device.hpp"

#include <unistd.h>
#include <elf.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "elf/elf_object.hpp"
#include "host/device_api.hpp"

namespace sk::host {

const KernelMetadata *LinkedModule::find_metadata(const std::string &name) const {
  for (const KernelMetadata &m : metadata)
    if (m.name == name) return &m;
  return nullptr;
}

sk_status HostDevice::open(const DeviceSpec &spec, std::unique_ptr<HostDevice> *out) {
  ExecutorConfig config;
  // Unless the spec says: as many cores as CPUs this process can use (its affinity mask and
  // cgroup CPU quota), which Executor::create counts anyway.
  config.cores = 0;
  SymbolPolicy policy = SymbolPolicy::Process;
  for (const auto &[key, value] : spec.keys) {
    uint64_t v = 0;
    sk_status st;
    if (key == "cores") {
      if ((st = parse_spec_uint(key, value, 1, 1024, &v)) != SK_OK) return st;
      config.cores = static_cast<uint32_t>(v);
    } else if (key == "spin_us") {
      if ((st = parse_spec_uint(key, value, 0, 10'000'000, &v)) != SK_OK) return st;
      config.spin_us = static_cast<uint32_t>(v);
    } else if (key == "spin_max_us") {
      if ((st = parse_spec_uint(key, value, 0, 10'000'000, &v)) != SK_OK) return st;
      config.spin_max_us = static_cast<uint32_t>(v);
    } else if (key == "pin") {
      if ((st = parse_spec_uint(key, value, 0, 1, &v)) != SK_OK) return st;
      config.pin = v == 1;
    } else if (key == "barrier_group") {
      if ((st = parse_spec_uint(key, value, 0, 1024, &v)) != SK_OK) return st;
      if (v == 1)
        return fail(SK_ERR_INVALID_ARGUMENT,
                    "device spec key 'barrier_group': 1 is not a group (0: automatic, 2..1024: cores per group)");
      config.barrier_group = static_cast<uint32_t>(v);
    } else if (key == "timeout_ms") {
      if ((st = parse_spec_uint(key, value, 1, 86'400'000, &v)) != SK_OK) return st;
      config.timeout_ms = static_cast<uint32_t>(v);
    } else if (key == "symbols") {
      if (value != "process" && value != "strict")
        return fail(SK_ERR_INVALID_ARGUMENT,
                    "device spec key 'symbols': value '%s' is not process or strict", value.c_str());
      policy = value == "strict" ? SymbolPolicy::Strict : SymbolPolicy::Process;
    } else {
      return fail(SK_ERR_INVALID_ARGUMENT,
                  "device spec: unknown key '%s' for backend 'host' (known: cores, spin_us, "
                  "spin_max_us, timeout_ms, symbols, pin, barrier_group)",
                  key.c_str());
    }
  }
  std::unique_ptr<HostDevice> dev(new HostDevice());
  dev->symbol_policy_ = policy;
  if (sk_status st = Executor::create(config, &dev->executor_); st != SK_OK) return st;
  *out = std::move(dev);
  return SK_OK;
}

HostDevice::~HostDevice() {
  executor_.reset();  // drains the queue first
  for (void *p : allocations_) std::free(p);
}

sk_status HostDevice::mem_alloc(size_t size, void **out) {
  if (size == 0) return fail(SK_ERR_INVALID_ARGUMENT, "sk_mem_alloc: size is 0");
  if (size > (size_t{1} << 46))
    return fail(SK_ERR_OUT_OF_MEMORY, "sk_mem_alloc: %zu bytes is more than the host device allows", size);
  // 64-byte alignment: whole cache lines per buffer, as kernels written for vectors expect.
  size_t rounded = (size + 63) & ~size_t{63};
  void *p = std::aligned_alloc(64, rounded);
  if (!p) return fail(SK_ERR_OUT_OF_MEMORY, "sk_mem_alloc: cannot allocate %zu bytes", size);
  std::lock_guard<std::mutex> lock(alloc_mutex_);
  allocations_.insert(p);
  *out = p;
  return SK_OK;
}

bool HostDevice::mem_free(void *ptr) {
  {
    std::lock_guard<std::mutex> lock(alloc_mutex_);
    if (allocations_.erase(ptr) == 0) return false;
  }
  std::free(ptr);
  return true;
}

sk_status HostDevice::load_module(const void *image, size_t size, const std::string &label,
                                  std::shared_ptr<LinkedModule> *out) {
  if (size >= kMaxObjectSize)
    return fail(SK_ERR_UNSUPPORTED, "%s: %zu bytes: kernel objects must be smaller than %zu bytes",
                label.c_str(), size, kMaxObjectSize);
  // Not even ELF: refused by the parser's header check, without hashing (or copying) the bytes.
  if (size < SELFMAG || std::memcmp(image, ELFMAG, SELFMAG) != 0) {
    elf::Object none;
    return elf::parse_object(image, size, label, &none);
  }
  XXH128_hash_t h = XXH3_128bits(image, size);
  const CacheKey key{static_cast<uint64_t>(h.high64), static_cast<uint64_t>(h.low64), symbol_policy_};
  std::lock_guard<std::mutex> lock(module_mutex_);
  if (auto it = module_cache_.find(key); it != module_cache_.end()) {
    if (std::shared_ptr<LinkedModule> existing = it->second.lock()) {
      *out = std::move(existing);
      return SK_OK;
    }
  }
  auto mod = std::make_shared<LinkedModule>();
  mod->label = label;
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)h.high64,
                (unsigned long long)h.low64);
  mod->content_hash = hex;
  elf::Object object;
  if (sk_status st = elf::parse_object(image, size, label, &object); st != SK_OK) return st;
  LinkOptions options;
  options.resolve_special = [](std::string_view name) { return resolve_device_api(name); };
  if (symbol_policy_ == SymbolPolicy::Strict) {
    options.allow_process_symbol = strict_allows;
    options.policy_name = "symbols=strict";
  }
  if (sk_status st = LinkedObject::link(object, options, &mod->object); st != SK_OK) return st;
  if (sk_status st = parse_kernel_metadata(mod->object->metadata_records(), label, &mod->metadata);
      st != SK_OK)
    return st;
  // Drop cache entries whose modules are gone, so the map does not grow without bound.
  for (auto it = module_cache_.begin(); it != module_cache_.end();)
    it = it->second.expired() ? module_cache_.erase(it) : std::next(it);
  module_cache_[key] = mod;
  *out = std::move(mod);
  return SK_OK;
}

}  // namespace sk::host
