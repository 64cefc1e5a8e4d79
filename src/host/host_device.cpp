#include "host/host_device.hpp"

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/backend.hpp"
#include "common/error.hpp"
#include "elf/archive.hpp"
#include "elf/combine.hpp"
#include "elf/elf_object.hpp"
#include "host/device_api/device_api.hpp"
#include "host/executor/core_thread.hpp"
#include "host/linker/debug_registration.hpp"
#include "host/linker/perf_map.hpp"

namespace sk::host {

const KernelMetadata *LinkedModule::find_metadata(const std::string &name) const {
  for (const KernelMetadata &m : metadata)
    if (m.name == name) return &m;
  return nullptr;
}

void keep_for_stuck_threads(std::shared_ptr<const void> what) {
  static std::mutex mutex;
  static auto *kept = new std::vector<std::shared_ptr<const void>>;  // never freed: see the header
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(what));
}

namespace {

// The host device's spec keys (documented in sk.h), in the order its unknown-key message names them.
constexpr SpecKey kHostKeys[] = {
    {"cores", 1, 1024},
    {"spin_us", 0, 10'000'000},
    {"spin_max_us", 0, 10'000'000},
    {"timeout_ms", 1, 86'400'000},
    {"core0"},  // caller or thread
    {"stack_kb", kMinCoreStackKiB, kMaxCoreStackKiB},
    {"symbols"},  // process or strict
    {"pin", 0, 1},
    {"barrier_group", 0, 1024},
    {"perf_map", 0, 1},
};

}  // namespace

sk_status parse_host_spec(const DeviceSpec &spec, HostSpec *out) {
  ExecutorConfig config;
  // Unless the spec says: as many cores as CPUs this process can use (its affinity mask and
  // cgroup CPU quota), which Executor::create counts anyway.
  config.cores = 0;
  SymbolPolicy policy = SymbolPolicy::Process;
  bool perf_map = perf_map_from_environment();
  // core0: unless the spec says, a thread of its own exactly when the spec sets timeout_ms: a
  // caller that asks for a deadline is promised that a kernel that never returns is reported
  // to it, which a thread running core 0's share itself cannot be (docs/benchmarks.md, "Core 0
  // on a thread of its own", for what it costs).
  bool core0_given = false, timeout_given = false;
  for (const auto &[key, value] : spec.keys) {
    const SpecKey *known = find_spec_key(kHostKeys, key);
    if (!known)
      return fail(SK_ERR_INVALID_ARGUMENT, "device spec: unknown key '%s' for backend 'host' (known: %s)",
                  key.c_str(), spec_key_names(kHostKeys).c_str());
    uint64_t v = 0;
    if (known->integer())
      if (sk_status st = parse_spec_uint(key, value, known->min, known->max, &v); st != SK_OK) return st;
    if (key == "cores") {
      config.cores = static_cast<uint32_t>(v);
    } else if (key == "spin_us") {
      config.spin_us = static_cast<uint32_t>(v);
    } else if (key == "spin_max_us") {
      config.spin_max_us = static_cast<uint32_t>(v);
    } else if (key == "pin") {
      config.pin = v == 1;
    } else if (key == "barrier_group") {
      if (v == 1)
        return fail(SK_ERR_INVALID_ARGUMENT,
                    "device spec key 'barrier_group': 1 is not a group (0: automatic, 2..1024: cores per group)");
      config.barrier_group = static_cast<uint32_t>(v);
    } else if (key == "timeout_ms") {
      config.timeout_ms = static_cast<uint32_t>(v);
      timeout_given = true;
    } else if (key == "core0") {
      if (value != "caller" && value != "thread")
        return fail(SK_ERR_INVALID_ARGUMENT, "device spec key 'core0': value '%s' is not caller or thread",
                    value.c_str());
      config.core0_thread = value == "thread";
      core0_given = true;
    } else if (key == "stack_kb") {
      config.stack_kib = v;
    } else if (key == "symbols") {
      if (value != "process" && value != "strict")
        return fail(SK_ERR_INVALID_ARGUMENT, "device spec key 'symbols': value '%s' is not process or strict",
                    value.c_str());
      policy = value == "strict" ? SymbolPolicy::Strict : SymbolPolicy::Process;
    } else if (key == "perf_map") {
      perf_map = v == 1;
    }
  }
  if (!core0_given) config.core0_thread = timeout_given;
  out->executor = config;
  out->symbols = policy;
  out->perf_map = perf_map;
  return SK_OK;
}

sk_status HostDevice::open(const DeviceSpec &spec, std::unique_ptr<HostDevice> *out) {
  HostSpec parsed;
  if (sk_status st = parse_host_spec(spec, &parsed); st != SK_OK) return st;
  std::unique_ptr<HostDevice> dev(new HostDevice());
  dev->symbol_policy_ = parsed.symbols;
  dev->perf_map_ = parsed.perf_map;
  if (parsed.perf_map)
    if (sk_status st = check_perf_map(); st != SK_OK) return st;
  if (sk_status st = Executor::create(parsed.executor, &dev->executor_); st != SK_OK) return st;
  *out = std::move(dev);
  return SK_OK;
}

HostDevice::~HostDevice() {
  if (executor_ && executor_->lost()) {
    // Its stuck threads run on: they keep the executor's state, and the memory they were given.
    executor_->abandon();
    keep_for_stuck_threads(std::shared_ptr<Executor>(std::move(executor_)));
    keep_for_stuck_threads(std::make_shared<std::set<void *>>(std::move(allocations_)));
    keep_for_stuck_threads(default_stream_);
    return;
  }
  executor_.reset();  // drains the queue first
  for (void *p : allocations_) std::free(p);
}

sk_status HostDevice::mem_alloc(size_t size, void **out) {
  if (executor_->lost()) return executor_->refuse_lost("sk_mem_alloc");
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
    if (executor_->lost()) return allocations_.count(ptr) != 0;
    if (allocations_.erase(ptr) == 0) return false;
  }
  std::free(ptr);
  return true;
}

sk_status HostDevice::load_module(const void *image, size_t size, const std::string &label,
                                  std::shared_ptr<LinkedModule> *out) {
  if (executor_->lost()) return executor_->refuse_lost("loading " + label);
  if (sk_status st = backend::check_object_size(size, label); st != SK_OK) return st;
  // Not even ELF: refused by the parser's header check, without hashing (or copying) the bytes.
  if ((size < SELFMAG || std::memcmp(image, ELFMAG, SELFMAG) != 0) && !elf::is_archive(image, size)) {
    elf::Object none;
    return elf::parse_object(image, size, label, &none);
  }
  return load_inputs({{label, image, size}}, image, size, label, out);
}

sk_status HostDevice::load_module_set(const std::vector<elf::Input> &inputs, const std::string &label,
                                      std::shared_ptr<LinkedModule> *out) {
  if (inputs.size() == 1) return load_module(inputs[0].bytes, inputs[0].size, inputs[0].label, out);
  if (executor_->lost()) return executor_->refuse_lost("loading " + label);
  // The cache key: every input's size and bytes, in order, behind a prefix no object starts with.
  static constexpr char kSetTag[] = "sk-module-set";
  size_t total = sizeof kSetTag;
  for (const elf::Input &in : inputs) {
    if (in.size >= backend::kMaxObjectSize - total)
      return fail(SK_ERR_UNSUPPORTED, "%s: the objects of a module must be smaller than %zu bytes together",
                  in.label.c_str(), backend::kMaxObjectSize);
    total += sizeof(uint64_t) + in.size;
  }
  std::vector<unsigned char> key(kSetTag, kSetTag + sizeof kSetTag);
  key.reserve(total);
  for (const elf::Input &in : inputs) {
    const uint64_t n = in.size;
    const auto *bytes = static_cast<const unsigned char *>(in.bytes);
    key.insert(key.end(), reinterpret_cast<const unsigned char *>(&n),
               reinterpret_cast<const unsigned char *>(&n + 1));
    key.insert(key.end(), bytes, bytes + in.size);
  }
  return load_inputs(inputs, key.data(), key.size(), label, out);
}

sk_status HostDevice::load_inputs(const std::vector<elf::Input> &inputs, const void *image, size_t size,
                                  const std::string &label, std::shared_ptr<LinkedModule> *out) {
  const ContentHash fn = content_hash_.load();
  const std::pair<uint64_t, uint64_t> h = fn ? fn(image, size) : sk::content_hash(image, size);
  const ContentKey key{h.first, h.second, static_cast<uint64_t>(symbol_policy_)};
  std::lock_guard<std::mutex> lock(module_mutex_);
  if (std::shared_ptr<LinkedModule> existing = module_cache_.find(
          key, image, size, [](const LinkedModule &m) -> const auto & { return m.image; })) {
    *out = std::move(existing);
    return SK_OK;
  }
  auto mod = std::make_shared<LinkedModule>();
  mod->label = label;
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)h.first, (unsigned long long)h.second);
  mod->content_hash = hex;
  elf::Object object;
  if (sk_status st = elf::combine(inputs, label, &object); st != SK_OK) return st;
  LinkOptions options;
  options.resolve_special = [](std::string_view name) { return resolve_device_api(name); };
  if (symbol_policy_ == SymbolPolicy::Strict) {
    options.allow_process_symbol = strict_allows;
    options.policy_name = "symbols=strict";
  }
  if (sk_status st = LinkedObject::link(object, options, &mod->object); st != SK_OK) return st;
  if (sk_status st = parse_kernel_metadata(mod->object->metadata_records(), label, &mod->metadata); st != SK_OK)
    return st;
  mod->archive_definitions = std::move(object.archive_definitions);
  mod->debug = DebugRegistration::create(*mod->object);
  if (perf_map_) append_perf_map(*mod->object);
  const auto *bytes = static_cast<const unsigned char *>(image);
  mod->image.assign(bytes, bytes + size);
  module_cache_.insert(key, mod);
  *out = std::move(mod);
  return SK_OK;
}

void HostDevice::set_content_hash(ContentHash fn) { content_hash_.store(fn); }

size_t HostDevice::module_cache_sweeps() {
  std::lock_guard<std::mutex> lock(module_mutex_);
  return module_cache_.sweeps();
}

size_t HostDevice::module_cache_entries() {
  std::lock_guard<std::mutex> lock(module_mutex_);
  return module_cache_.size();
}

}  // namespace sk::host
