// libFuzzer target: bytes as a sequence of public C API calls on a host device (2 cores or 1,
// by the first byte). Each later byte picks a call, the next ones its operands: load and unload
// the two test modules (capi_chain, capi_sync), look kernels up, build scopes (options, kernel
// options, stream-fusion events, block dims both valid and not), finalize or abort them, launch
// super kernels and unfused kernels on the default stream or on streams of their own, rebind
// arguments, explain, profile, synchronize, allocate, copy and free memory, destroy, in any
// order the API allows. What the API says is undefined is not done: a handle is never used
// after its destroy call, and the kernels only ever see this harness's buffers with counts
// that fit them (a kernel's own out-of-bounds access is the kernel's bug, not libsk's). The
// rest is fair: hangs (capi_hang_half on two blocks) meet the device's 20 ms deadline, and the
// device must stay usable for the next input. The sanitizers judge, and the harness's own
// checks: a call that must succeed, a status libsk never returns, a failure without a message,
// and after each input a clean launch that must compute the right values.
#include <sk.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "file_bytes.hpp"

namespace {

constexpr uint32_t kElems = 4096;  // each buffer's uint32 count: n and block counts stay within
constexpr uint32_t kBuffers = 3;
constexpr uint32_t kMaxOps = 96;

[[noreturn]] void harness_failure(const char *what) {
  std::fprintf(stderr, "fuzz_api: %s (last error: %s)\n", what, sk_last_error());
  std::abort();
}

// Two devices, opened once for every input: 2 cores, and 1 core, whose launches host threads
// run, with the stand-in core-0 thread for launches nobody waits for (executor.hpp).
struct Device {
  const char *spec;
  uint32_t cores;
  sk_device *handle = nullptr;
  std::array<uint32_t *, kBuffers> buffers{};  // the kernels' buffers
};
struct Fixture {
  std::array<Device, 2> devices{Device{"host:cores=2,timeout_ms=20", 2}, Device{"host:cores=1,timeout_ms=20", 1}};
  std::array<std::vector<uint8_t>, 2> objects;  // capi_chain.o, capi_sync.o
};

std::vector<uint8_t> read_file(const std::string &path) {
  std::vector<uint8_t> bytes;
  if (!read_file_bytes(path, &bytes) || bytes.empty()) harness_failure(("cannot read " + path).c_str());
  return bytes;
}

void open_device(Device &d) {
  if (sk_device_open(d.spec, &d.handle) != SK_OK) harness_failure("device open");
  for (uint32_t *&b : d.buffers)
    if (sk_mem_alloc(d.handle, kElems * sizeof(uint32_t), reinterpret_cast<void **>(&b)) != SK_OK)
      harness_failure("sk_mem_alloc");
}

Fixture &fixture() {
  static Fixture *f = [] {
    auto *made = new Fixture;
    for (Device &d : made->devices) open_device(d);
    const std::string dir = SK_FUZZ_KERNEL_DIR "/clang-O2-pic/";
    made->objects[0] = read_file(dir + "capi_chain.o");
    made->objects[1] = read_file(dir + "capi_sync.o");
    return made;
  }();
  return *f;
}

// The kernels the harness may call, with what each parameter is: a buffer, a count (n, at most
// kElems), or a free 32-bit value.
enum Param : uint8_t { kBuf, kCount, kFree };
struct KernelInfo {
  const char *name;
  uint32_t module;
  std::vector<Param> params;
};
const std::vector<KernelInfo> &kernel_infos() {
  static const std::vector<KernelInfo> infos = {
      {"capi_fill", 0, {kBuf, kCount, kFree}},
      {"capi_axpb", 0, {kBuf, kCount, kFree, kFree}},
      {"capi_gather", 0, {kBuf, kBuf, kCount, kFree}},
      {"capi_rotate", 0, {kBuf, kBuf, kCount}},
      {"capi_sync_sum", 1, {kBuf, kBuf, kBuf, kCount}},
      {"capi_hang_half", 1, {kBuf}},
      {"capi_hang_if", 1, {kBuf, kFree}},
  };
  return infos;
}

class Bytes {
 public:
  Bytes(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t next() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t next32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | next();
    return v;
  }

 private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
};

// Argument values for one call of kernel `info`, and the pointers to them args wants.
struct Args {
  std::array<uint64_t, 4> values{};
  std::array<void *, 4> ptrs{};
  void *const *get() { return ptrs.data(); }
};

uint64_t param_value(Param p, const Device &dev, Bytes &in) {
  switch (p) {
    case kBuf: return reinterpret_cast<uint64_t>(dev.buffers[in.next() % kBuffers]);
    case kCount: return (in.next() * 17u) % (kElems + 1);
    case kFree: return in.next32();
  }
  return 0;
}

void make_args(const KernelInfo &info, const Device &dev, Bytes &in, Args *out) {
  for (size_t i = 0; i < info.params.size(); ++i) {
    const uint64_t v = param_value(info.params[i], dev, in);
    if (info.params[i] == kBuf) {
      out->values[i] = v;  // a pointer: all 8 bytes
    } else {
      const uint32_t v32 = static_cast<uint32_t>(v);
      std::memcpy(&out->values[i], &v32, sizeof v32);  // u32 / i32: the first 4 bytes
    }
    out->ptrs[i] = &out->values[i];
  }
}

// Block dims: mostly 1-8, sometimes the refused 0 and 2^24 + 1.
uint32_t block_dim(Bytes &in) {
  const uint8_t b = in.next();
  if (b == 0xfe) return 0;
  if (b == 0xff) return (1u << 24) + 1;
  return 1 + b % 8;
}

struct Kernel {
  sk_kernel *handle;
  const KernelInfo *info;
  uint32_t module;
};
struct Step {  // what set_arg may rebind: the kernel of each step of a super kernel
  const KernelInfo *info;
};
struct Scope {
  sk_scope *handle;
  std::vector<Step> steps;
};
struct SuperKernel {
  sk_superkernel *handle;
  std::vector<Step> steps;
};

const char *const kScopeOptions[] = {
    nullptr,
    "",
    "early-start=1",
    "stream-fusion=1",
    "debug-sync-all=1",
    "strict-scope-check=abort",
    "profiling=1",
    "dcci-before-kernel-start=capi_.*:dcci-after-kernel-end=capi_fill",
    "debug-aiv-num=1",
    "feed-sync-all=1:profiling=1",
    "bogus=1",
    "stream-fusion=1:profiling=1:early-start=1",
};
const char *const kCoreTypes[] = {nullptr, "vector", "cube", "mix_1_1", "mix_1_2", "bogus"};

// A status no call of the public API returns: libsk lost track of something.
void check_status(sk_status st, const char *call) {
  if (st < SK_OK || st > SK_ERR_STATE) harness_failure(call);
  if (st != SK_OK && sk_last_error()[0] == '\0') harness_failure("a failure without a message");
}

class Session {
 public:
  // The first byte picks the device.
  explicit Session(Bytes &in) : in_(in), f_(fixture()), d_(f_.devices[in.next() % f_.devices.size()]) {}
  ~Session() { end(); }

  void run() {
    for (uint32_t op = 0; op < kMaxOps && !in_.empty() && !lost_; ++op) step(in_.next());
  }

 private:
  template <class T>
  T *pick(std::vector<T> &v) {
    return v.empty() ? nullptr : &v[in_.next() % v.size()];
  }
  template <class T>
  void drop(std::vector<T> &v, T *item) {
    v.erase(v.begin() + (item - v.data()));
  }
  sk_stream *stream() {
    const uint8_t b = in_.next();
    return b % 2 == 0 || streams_.empty() ? nullptr : streams_[b % streams_.size()];
  }

  void step(uint8_t op) {
    switch (op % 20) {
      case 0: {  // load a module (each at most once at a time)
        const uint32_t m = in_.next() % 2;
        if (modules_[m]) break;
        const std::vector<uint8_t> &bytes = f_.objects[m];
        sk_status st = sk_module_load(d_.handle, bytes.data(), bytes.size(), &modules_[m]);
        if (st == SK_ERR_DEVICE && std::strstr(sk_last_error(), "is lost")) {
          lost_ = true;  // within the input, as end() may find it: every later call would fail
          break;
        }
        if (st != SK_OK) harness_failure("sk_module_load of a test object");
        break;
      }
      case 1: {  // unload: its kernel handles go; super kernels keep their code
        const uint32_t m = in_.next() % 2;
        if (!modules_[m]) break;
        sk_module_unload(modules_[m]);
        modules_[m] = nullptr;
        std::erase_if(kernels_, [m](const Kernel &k) { return k.module == m; });
        break;
      }
      case 2: {  // look a kernel up, by metadata or by a given signature
        const KernelInfo &info = kernel_infos()[in_.next() % kernel_infos().size()];
        sk_module *mod = modules_[info.module];
        if (!mod) break;
        sk_kernel *k = nullptr;
        const uint8_t how = in_.next() % 4;
        sk_status st = how == 0   ? sk_module_get_kernel_with_signature(mod, info.name, "ptr,ptr,ptr,ptr,ptr", &k)
                       : how == 1 ? sk_module_get_kernel(mod, "no_such_kernel", &k)
                                  : sk_module_get_kernel(mod, info.name, &k);
        check_status(st, "get_kernel");
        if (st == SK_OK && how >= 2) kernels_.push_back({k, &info, info.module});
        if (st == SK_OK && how < 2) harness_failure("a wrong lookup succeeded");
        break;
      }
      case 3: {  // begin a scope
        if (scopes_.size() >= 3) break;
        const char *options = kScopeOptions[in_.next() % std::size(kScopeOptions)];
        sk_scope *s = nullptr;
        sk_status st = sk_scope_begin(d_.handle, "fuzz", options, &s);
        check_status(st, "sk_scope_begin");
        if (st == SK_OK) scopes_.push_back({s, {}});
        break;
      }
      case 4: {  // add a kernel to a scope
        Scope *s = pick(scopes_);
        Kernel *k = pick(kernels_);
        if (!s || !k) break;
        Args args;
        make_args(*k->info, d_, in_, &args);
        sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
        const uint8_t o = in_.next();
        opts.core_type = kCoreTypes[o % std::size(kCoreTypes)];
        opts.stream = (o >> 3) % 3;
        opts.flags = (o >> 5) & 1 ? SK_KERNEL_FLAG_TILING_SINK : 0;
        if ((o >> 6) & 1) opts.name = "renamed";
        // A grid's shape, sometimes one whose product is not the block count.
        if (const uint8_t g = in_.next(); g & 1)
          opts.grid[0] = 1 + (g >> 1) % 4, opts.grid[1] = (g >> 3) % 3, opts.grid[2] = 1 + (g >> 5) % 2;
        sk_status st = sk_add_kernel(s->handle, k->handle, block_dim(in_), args.get(), (o >> 7) ? &opts : nullptr);
        check_status(st, "sk_add_kernel");
        if (st == SK_OK) s->steps.push_back({k->info});
        break;
      }
      case 5: {  // stream-fusion events
        Scope *s = pick(scopes_);
        if (!s) break;
        const uint32_t stream_id = in_.next() % 4, event = in_.next() % 4;
        check_status(in_.next() % 2 ? sk_scope_record_event(s->handle, stream_id, event)
                                    : sk_scope_wait_event(s->handle, stream_id, event),
                     "scope event");
        break;
      }
      case 6: {  // finalize (consumes the scope either way)
        Scope *s = pick(scopes_);
        if (!s) break;
        sk_superkernel *sk = nullptr;
        sk_status st = sk_finalize(s->handle, &sk);
        check_status(st, "sk_finalize");
        if (st == SK_OK) superkernels_.push_back({sk, s->steps});
        drop(scopes_, s);
        break;
      }
      case 7: {  // abort a scope
        Scope *s = pick(scopes_);
        if (!s) break;
        sk_scope_abort(s->handle);
        drop(scopes_, s);
        break;
      }
      case 8: {  // launch a super kernel
        SuperKernel *sk = pick(superkernels_);
        if (sk) check_status(sk_launch(sk->handle, stream()), "sk_launch");
        break;
      }
      case 9: {  // launch one kernel unfused
        Kernel *k = pick(kernels_);
        if (!k) break;
        Args args;
        make_args(*k->info, d_, in_, &args);
        if (const uint8_t g = in_.next(); g & 1) {  // by a grid's shape, an extent of 0 sometimes
          const uint32_t grid[3] = {1u + (g >> 1) % 4, (g >> 3) % 3u, 1u + (g >> 5) % 2};
          check_status(sk_launch_kernel_grid(k->handle, grid, args.get(), stream()), "sk_launch_kernel_grid");
        } else {
          check_status(sk_launch_kernel(k->handle, block_dim(in_), args.get(), stream()), "sk_launch_kernel");
        }
        break;
      }
      case 10: {  // rebind an argument (or name a step or index that does not exist)
        SuperKernel *sk = pick(superkernels_);
        if (!sk) break;
        const uint32_t step = in_.next() % (sk->steps.size() + 1);
        const uint32_t index = in_.next() % 5;
        uint64_t value = 0;
        if (step < sk->steps.size() && index < sk->steps[step].info->params.size()) {
          const Param p = sk->steps[step].info->params[index];
          value = param_value(p, d_, in_);
          if (p != kBuf) {
            const uint32_t v32 = static_cast<uint32_t>(value);
            std::memcpy(&value, &v32, sizeof v32);
          }
        }
        sk_status st = sk_superkernel_set_arg(sk->handle, step, index, &value);
        check_status(st, "sk_superkernel_set_arg");
        break;
      }
      case 11: {  // explain, with a buffer too small or large enough
        SuperKernel *sk = pick(superkernels_);
        if (!sk) break;
        size_t needed = 0;
        check_status(sk_superkernel_explain(sk->handle, nullptr, 0, &needed), "explain size");
        std::vector<char> buf(in_.next() % 2 ? needed : needed / 2 + 1);
        check_status(sk_superkernel_explain(sk->handle, buf.data(), buf.size(), &needed), "explain");
        break;
      }
      case 12: {  // profile of the last completed launch
        SuperKernel *sk = pick(superkernels_);
        if (!sk) break;
        size_t count = 0;
        sk_status st = sk_superkernel_profile(sk->handle, nullptr, 0, &count);
        check_status(st, "profile size");
        if (st == SK_OK) {
          // struct_size: this header's, a later version's larger record (the stride libsk must
          // keep to), or a refused one (smaller than the first version, not a multiple of 8).
          const uint32_t sizes[] = {sizeof(sk_profile_record), sizeof(sk_profile_record) + 24, 8,
                                    sizeof(sk_profile_record) + 1};
          const uint32_t size = sizes[in_.next() % 4];
          std::vector<uint64_t> words(((count + 1) * size + 7) / 8);
          auto *records = reinterpret_cast<sk_profile_record *>(words.data());
          records[0].struct_size = size;
          check_status(sk_superkernel_profile(sk->handle, records, count + 1, &count), "profile");
        }
        break;
      }
      case 13: {  // a stream of its own
        if (streams_.size() >= 3) break;
        sk_stream *s = nullptr;
        check_status(sk_stream_create(d_.handle, &s), "sk_stream_create");
        if (s) streams_.push_back(s);
        break;
      }
      case 14: {  // destroy a stream (waits for its work)
        if (streams_.empty()) break;
        const size_t i = in_.next() % streams_.size();
        sk_stream_destroy(streams_[i]);
        streams_.erase(streams_.begin() + i);
        break;
      }
      case 15: {  // synchronize one stream, the device, or every device
        const uint8_t which = in_.next() % 3;
        sk_status st = which == 0   ? sk_stream_synchronize(stream())
                       : which == 1 ? sk_device_synchronize(d_.handle)
                                    : sk_stream_synchronize(nullptr);
        check_status(st, "synchronize");
        break;
      }
      case 16: {  // destroy a super kernel (waits for its launches)
        SuperKernel *sk = pick(superkernels_);
        if (!sk) break;
        sk_superkernel_destroy(sk->handle);
        drop(superkernels_, sk);
        break;
      }
      case 18: {  // memory of its own: allocate (0 bytes included) or free
        if (in_.next() % 2 == 0 && memory_.size() < 4) {
          static const size_t kSizes[] = {0, 1, 64, 4096, 1 << 20};
          const size_t size = kSizes[in_.next() % std::size(kSizes)];
          void *p = nullptr;
          sk_status st = sk_mem_alloc(d_.handle, size, &p);
          check_status(st, "sk_mem_alloc");
          if (st == SK_OK) memory_.push_back({p, size});
        } else if (!memory_.empty()) {
          const size_t i = in_.next() % memory_.size();
          sk_mem_free(d_.handle, memory_[i].first);
          memory_.erase(memory_.begin() + i);
        }
        break;
      }
      case 19: {  // a copy between two of them, or into a kernel buffer (waits for queued work)
        if (memory_.empty()) break;
        const auto &[src, size] = memory_[in_.next() % memory_.size()];
        const bool to_buffer = in_.next() % 2;
        const auto &[dst, dst_size] = memory_[in_.next() % memory_.size()];
        void *target = to_buffer ? static_cast<void *>(d_.buffers[0]) : dst;
        const size_t limit = to_buffer ? kElems * sizeof(uint32_t) : dst_size;
        check_status(sk_memcpy(d_.handle, target, src, std::min(size, limit)), "sk_memcpy");
        break;
      }
      case 17: {  // the device is still there, whatever happened
        uint32_t cores = 0;
        if (sk_device_cores(d_.handle, &cores) != SK_OK || cores != d_.cores) harness_failure("sk_device_cores");
        break;
      }
    }
  }

  // Everything this input made goes, and the device must run a launch cleanly afterwards.
  void end() {
    for (Scope &s : scopes_) sk_scope_abort(s.handle);
    for (sk_stream *s : streams_) {
      check_status(sk_stream_synchronize(s), "final stream synchronize");
      sk_stream_destroy(s);
    }
    check_status(sk_device_synchronize(d_.handle), "final synchronize");
    for (SuperKernel &sk : superkernels_) sk_superkernel_destroy(sk.handle);
    for (sk_module *&m : modules_) sk_module_unload(m);
    for (auto &[p, size] : memory_) sk_mem_free(d_.handle, p);
    sk_module *mod = nullptr;
    sk_kernel *fill = nullptr;
    sk_status loaded = sk_module_load(d_.handle, f_.objects[0].data(), f_.objects[0].size(), &mod);
    if (loaded == SK_ERR_DEVICE) {
      // The kernels here all return, so a lost device means a core was held off its CPU past the
      // 20 ms deadline inside a kernel (a loaded machine, a sanitizer's slowdown): this one may
      // have been lost within the input (lost_). That may happen rarely; every input losing it
      // is a defect.
      static int reopened = 0;
      if (++reopened > 3) harness_failure("the device was lost more than 3 times");
      std::fprintf(stderr, "fuzz_api: device lost (%s); opening a new one\n", sk_last_error());
      sk_device_close(d_.handle);
      open_device(d_);
      loaded = sk_module_load(d_.handle, f_.objects[0].data(), f_.objects[0].size(), &mod);
    }
    if (loaded != SK_OK || sk_module_get_kernel(mod, "capi_fill", &fill) != SK_OK)
      harness_failure("reload after the input");
    uint32_t *buf = d_.buffers[0], n = 64, seed = 5;
    void *args[] = {&buf, &n, &seed};
    // The 20 ms deadline is short: on a loaded machine a core can be descheduled that long, and
    // the launch is aborted as hung. A few tries tell that from a device left broken.
    sk_status st = SK_ERR_HANG;
    for (int attempt = 0; attempt < 5 && st == SK_ERR_HANG; ++attempt) {
      st = sk_launch_kernel(fill, 2, args, nullptr);
      if (st == SK_OK) st = sk_device_synchronize(d_.handle);
    }
    if (st != SK_OK) harness_failure("the device is not usable after the input");
    for (uint32_t i = 0; i < n; ++i)
      if (buf[i] != i * 2654435761u + seed) harness_failure("a clean launch after the input computed a wrong value");
    sk_module_unload(mod);
  }

  Bytes &in_;
  Fixture &f_;
  Device &d_;
  std::array<sk_module *, 2> modules_{};
  std::vector<Kernel> kernels_;
  std::vector<Scope> scopes_;
  std::vector<SuperKernel> superkernels_;
  std::vector<sk_stream *> streams_;
  std::vector<std::pair<void *, size_t>> memory_;  // sk_mem_alloc'd here, with its size
  bool lost_ = false;                              // a call found the device lost: the input ends
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes in(data, size);
  Session(in).run();
  return 0;
}
