// A stand-in for libcuda.so.1 on machines without a GPU (loaded through SK_CUDA_DRIVER_LIBRARY by
// test_cuda_fake_driver.cpp): "device memory" is host memory, modules are checked for an ELF image
// (the last one is kept for the tests to read) and the function name, PTX given to
// cuModuleLoadDataEx is compiled by ptxas as one program (as the driver's JIT does), and launches
// are recorded instead of run (unless a test hands the launches of programs compiled from PTX to a
// runner, fake_cuda_set_runner: tests/ptxsim's simulator). It lets the launch path of the CUDA
// backend (finalize, co-residency clipping, parameters, epochs, stream ordering, argument
// rebinding, hang reports, context handling, sticky errors, shared memory requests, graph capture,
// tensor maps) be tested without a GPU. Each thread has a context stack; a call that needs a
// context fails with CUDA_ERROR_INVALID_CONTEXT unless the device's is current. Not a simulator
// itself: no kernel code runs, but each launch does to the sync buffer's epoch word what the
// entry's blocks do (read it, run as the next epoch and as many more as the launch's runs, stopping
// early on a nonzero stop flag or this launch's abort word, write the last back). A stream being
// captured (cuStreamBeginCapture) records its kernel launches, writes and event records as graph
// nodes instead, with the parameters of the call; cuGraphLaunch runs them again, in order. As a
// driver does, it refuses the calls a capture does not allow (a synchronous call, a copy from
// pageable memory, an allocation, a module load) to a thread whose capture mode forbids them
// (cuThreadExchangeStreamCaptureMode), and invalidates the captures concerned. It keeps the
// context's stack limit (cuCtxSetLimit), and a test can make a call never return.
#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "cuda/entry_ptx.hpp"
#include "fake_cuda_launches.hpp"

namespace {

using Launch = FakeLaunch;

std::mutex g_mutex;
std::vector<Launch> g_launches;
std::vector<std::pair<void *, void *>> g_waits;  // (stream, event) of cuStreamWaitEvent
int g_occupancy = 2;                             // blocks per SM
int g_driver_version = 13000;                    // what cuDriverGetVersion says
std::map<uint64_t, size_t> g_allocations;        // "device" memory: address -> size
// Calls that write device memory, launch, or order streams, in order: name, stream (nullptr:
// the legacy stream, or every stream for cuCtxSynchronize), the bytes written (the event for
// cuEventRecord / cuStreamWaitEvent).
struct Call {
  const char *name;
  void *stream;
  uint64_t address, size;
};
std::vector<Call> g_calls;
struct InjectedFailure {
  int error = 0;
  int skip = 0;  // calls that succeed first
};
std::map<std::string, InjectedFailure> g_fail;  // a call's name -> the failure to inject
std::vector<uint8_t> g_last_image;              // the ELF image of the last cuModuleLoadData
std::vector<uint8_t> g_last_program;            // the cubin the last cuModuleLoadDataEx compiled from PTX
bool g_last_program_line_info = false;          // ... asked for line tables (CU_JIT_GENERATE_LINE_INFO)

// A loaded module, which is also its function's handle: what cuFuncGetAttribute says of it
// (a cubin's registers are a fixed 40; a compiled program's are what ptxas said).
struct FakeModule {
  int registers, shared, local;
  bool program = false;  // compiled from PTX by cuModuleLoadDataEx
  // A linked cubin's own __global__ kernel (a plain launch): its name and the module's image,
  // whose .nv.info says where its parameters go; "" for libsk's entry.
  std::string function;
  std::vector<uint8_t> image;
  std::string ptx;                                     // a program's PTX text, for a runner (fake_cuda_set_runner)
  std::vector<std::unique_ptr<FakeModule>> functions;  // the module's plain functions
};

using PlainLaunch = FakePlainLaunch;
std::vector<PlainLaunch> g_plain_launches;
int g_modules_loaded = 0;  // modules loaded (cuModuleLoadData*) and not unloaded

// Where each parameter of `function` goes: {ordinal, offset, size} from .nv.info.<function>'s
// EIATTR_KPARAM_INFO (format 0x04, attribute 0x17, 12 bytes: index, ordinal:16, offset:16,
// size in the top 14 bits of the last word), or for a kernel of more than 4 KiB of parameters
// attribute 0x45, whose last word is the size.
struct PlainParam {
  unsigned ordinal, offset, size;
};
std::vector<PlainParam> plain_params(const std::vector<uint8_t> &image, const std::string &function) {
  std::vector<PlainParam> out;
  const auto *eh = reinterpret_cast<const Elf64_Ehdr *>(image.data());
  const auto *sh = reinterpret_cast<const Elf64_Shdr *>(image.data() + eh->e_shoff);
  const char *names = reinterpret_cast<const char *>(image.data() + sh[eh->e_shstrndx].sh_offset);
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    if (names + sh[i].sh_name != ".nv.info." + function) continue;
    const uint8_t *p = image.data() + sh[i].sh_offset, *end = p + sh[i].sh_size;
    while (end - p >= 4) {
      const uint8_t format = p[0], attr = p[1];
      const unsigned length = format == 0x04 ? p[2] | p[3] << 8 : 2;
      const uint8_t *value = p + (format == 0x04 ? 4 : 2);
      if (format == 0x04 && (attr == 0x17 || attr == 0x45) && length == 12) {
        uint32_t word;
        std::memcpy(&word, value + 8, 4);
        out.push_back({(unsigned)(value[4] | value[5] << 8), (unsigned)(value[6] | value[7] << 8),
                       attr == 0x17 ? word >> 18 : word});
      }
      p = value + length;
    }
  }
  return out;
}
int g_program_occupancy = 0;  // blocks per SM of a compiled program's function (0: g_occupancy)

// The size of the section `name` of an ELF64 image (0 without one).
int elf_section_size(const uint8_t *image, const char *name) {
  const auto *eh = reinterpret_cast<const Elf64_Ehdr *>(image);
  const auto *sh = reinterpret_cast<const Elf64_Shdr *>(image + eh->e_shoff);
  if (eh->e_shstrndx >= eh->e_shnum) return 0;
  const char *names = reinterpret_cast<const char *>(image + sh[eh->e_shstrndx].sh_offset);
  for (unsigned i = 0; i < eh->e_shnum; ++i)
    if (std::strcmp(names + sh[i].sh_name, name) == 0) return (int)sh[i].sh_size;
  return 0;
}

// Keeps an ELF image the driver takes without its size in `last` (it ends at its last section,
// segment or header table) and makes its module.
int load_image(void **m, const void *image, std::vector<uint8_t> *last) {
  if (std::memcmp(image, "\177ELF", 4) != 0) return 200;  // CUDA_ERROR_INVALID_IMAGE
  const auto *eh = static_cast<const Elf64_Ehdr *>(image);
  size_t size = std::max<size_t>(eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize,
                                 eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize);
  const auto *ph = reinterpret_cast<const Elf64_Phdr *>(static_cast<const uint8_t *>(image) + eh->e_phoff);
  for (unsigned i = 0; i < eh->e_phnum; ++i) size = std::max<size_t>(size, ph[i].p_offset + ph[i].p_filesz);
  const auto *sh = reinterpret_cast<const Elf64_Shdr *>(static_cast<const uint8_t *>(image) + eh->e_shoff);
  for (unsigned i = 0; i < eh->e_shnum; ++i)
    if (sh[i].sh_type != SHT_NOBITS) size = std::max<size_t>(size, sh[i].sh_offset + sh[i].sh_size);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    last->assign(static_cast<const uint8_t *>(image), static_cast<const uint8_t *>(image) + size);
  }
  auto *module = new FakeModule{
      40, elf_section_size(static_cast<const uint8_t *>(image), ".nv.shared.sk_superkernel_entry"), 0};
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_modules_loaded;
  }
  module->image.assign(static_cast<const uint8_t *>(image), static_cast<const uint8_t *>(image) + size);
  *m = module;
  return 0;
}

// What a runner needs to run a captured launch of a program's entry again: the program, the
// launch's shape and its parameters' bytes as they were at the capture (a graph keeps values).
struct CapturedRun {
  const FakeModule *program = nullptr;
  unsigned grid[3] = {}, block[3] = {}, shared = 0;
  std::vector<std::vector<uint8_t>> params;
};

// A node of a captured graph: a kernel launch, a write (memset or copy) or an event record.
struct Node {
  const char *name;  // the call that made it
  Launch launch;     // a kernel launch's parameters, as captured
  uint64_t address = 0, size = 0;
  unsigned char value = 0;       // a memset's
  const void *source = nullptr;  // a copy's
  CapturedRun run;               // a launch of a program's entry (compiled from PTX)
};
struct Graph {
  std::vector<Node> nodes;
  bool invalidated = false;     // a call the capture does not allow ended it
  int mode = 0;                 // CUstreamCaptureMode: 0 global, 1 thread-local, 2 relaxed
  const void *owner = nullptr;  // the thread that began it (its t_mode's address)
};
std::map<void *, Graph *> g_capturing;  // stream -> the graph it is capturing
std::vector<void *> g_captured_events;  // events recorded in a capture
constexpr int kCaptureUnsupported = 900, kCaptureInvalidated = 901, kCaptureIsolation = 905, kIllegalState = 401;
constexpr int kGlobal = 0, kRelaxed = 2;  // CUstreamCaptureMode
constexpr int kLimitStackSize = 0;        // CUlimit CU_LIMIT_STACK_SIZE
// Initial exec: the library is dlopened, and LeakSanitizer's tracer (GCC 12's) crashes on the
// dynamic TLS it records for __tls_get_addr there (the static space glibc keeps for dlopened
// libraries holds these few bytes). The calling thread's cuThreadExchangeStreamCaptureMode:
[[gnu::tls_model("initial-exec")]] thread_local int t_mode = kGlobal;
size_t g_stack_limit = 1024;                            // CU_LIMIT_STACK_SIZE: the driver's default
int g_shared_optin = 232448, g_shared_reserved = 1024;  // sm_90's shared memory per block
// fake_cuda_fail_next's error that makes the call block for ever instead (a kernel that never
// comes back, as the synchronisation sees it).
constexpr int kNeverReturn = -1;

// The graph `stream` is capturing, or nullptr. Called with g_mutex held.
Graph *capturing(void *stream) {
  auto it = g_capturing.find(stream);
  return it == g_capturing.end() ? nullptr : it->second;
}

// A hang to inject (fake_cuda_hang_in_run): the report words a wait of run `run` of the next
// launch writes past its deadline.
struct InjectedHang {
  bool armed = false;
  unsigned run = 0;
  uint64_t words[sk::cuda::kReportWords] = {};
};
InjectedHang g_hang;

// Runs a launch of a program's entry (fake_cuda_set_runner): its PTX, the function, the grid,
// block, dynamic shared bytes and the kernel parameters as cuLaunchKernelEx has them; returns a
// CUresult. When set, a graph replays its captured launches of programs on it too, and the
// launches it cannot run (SASS: a linked cubin's) fail.
using Runner = int (*)(const char *ptx, const char *function, const unsigned *grid, const unsigned *block,
                       unsigned shared, void **params);
Runner g_runner = nullptr;
constexpr int kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED

// A launch runs: its blocks read the epoch word and run as the next epoch, up to `runs` times
// (the iteration barrier's last arriver ends the loop early after a run that left the stop
// flag nonzero or raised this launch's abort word), and write the last run's epoch back; in
// buffer mode they read the argument slots from the buffer. Called with g_mutex held.
void run_launch(Launch l) {
  if (g_allocations.count(l.first_slot)) {
    l.args_buffer = l.first_slot;
    std::memcpy(&l.first_slot, reinterpret_cast<const void *>(l.args_buffer), 8);
  }
  auto *epoch = reinterpret_cast<uint64_t *>(l.sync + sk::cuda::kSyncEpoch);
  auto *report = reinterpret_cast<uint64_t *>(l.report);
  l.epoch = *epoch + 1;
  l.last_epoch = l.epoch;
  for (unsigned k = 0;; ++k, ++l.last_epoch) {
    if (g_hang.armed && g_hang.run == k) {
      g_hang.armed = false;
      std::memcpy(report, g_hang.words, sizeof g_hang.words);
      report[sk::cuda::kReportEpoch] = report[sk::cuda::kReportAbortWord] = l.last_epoch;
    }
    if (k + 1 >= l.runs) break;
    if (l.stop && *reinterpret_cast<const uint32_t *>(l.stop) != 0) break;
    if (report[sk::cuda::kReportAbortWord] >= l.epoch) break;
  }
  *epoch = l.last_epoch;
  g_launches.push_back(l);
}

void *const kDeviceContext = reinterpret_cast<void *>(0x1000);
[[gnu::tls_model("initial-exec")]] thread_local std::vector<void *>
    t_contexts;  // the calling thread's context stack

constexpr int kInvalidContext = 201;  // CUDA_ERROR_INVALID_CONTEXT

// Returns the error to fail `name` with: an injected one, or a missing context.
int enter(const char *name, bool needs_context = true) {
  int injected = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_fail.find(name);
    if (it != g_fail.end() && it->second.skip == 0) {
      injected = it->second.error;
      g_fail.erase(it);
    } else {
      if (it != g_fail.end()) --it->second.skip;
      if (needs_context && (t_contexts.empty() || t_contexts.back() != kDeviceContext)) return kInvalidContext;
    }
  }
  while (injected == kNeverReturn) pause();
  return injected;
}

// A call a capture may forbid (cuda.h's "potentially unsafe API calls"): refused with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the captures concerned invalidated, when the
// calling thread captures in global or thread-local mode, or, in global mode, another thread
// captures in global mode. A relaxed thread may make it.
int unsafe_call() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (t_mode == kRelaxed) return 0;
  bool refused = false;
  for (auto &[stream, g] : g_capturing) {
    if (g->mode == kRelaxed) continue;
    if (g->owner == &t_mode || (t_mode == kGlobal && g->mode == kGlobal)) {
      g->invalidated = true;
      refused = true;
    }
  }
  return refused ? kCaptureUnsupported : 0;
}

// Host memory the stand-in knows as page-locked: none, so every host source is pageable.
bool pageable(const void *p) { return !g_allocations.count(reinterpret_cast<uint64_t>(p)); }

void record(const char *name, void *stream, uint64_t address = 0, uint64_t size = 0) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_calls.push_back({name, stream, address, size});
}

// Shared memory as libsk asks for it: the last cuFuncSetAttribute of the dynamic-size opt-in
// (0: never set), the dynamic bytes of the last occupancy query and of each launch.
struct FakeShared {
  int max_dynamic;
  unsigned occupancy_dynamic;
  unsigned launches;
  unsigned launch_dynamic[64];
};
FakeShared g_shared{};

// The launch configuration libsk passes: its own mirror of cuda.h's CUlaunchConfig.
using sk::cuda::LaunchConfig;

}  // namespace

extern "C" {

// ---- test controls -------------------------------------------------------------------------
// The test's view of a Launch (the same fields).
using FakeLaunch = Launch;
int fake_cuda_launches(FakeLaunch *out, int cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (const Launch &l : g_launches) {
    if (n < cap) out[n] = l;
    ++n;
  }
  return n;
}
// The next launch that runs has a wait of its run `run` (0: the first) write `words` as its
// hang report, with the run's epoch in the report's epoch and abort words.
void fake_cuda_hang_in_run(unsigned run, const uint64_t *words) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_hang.armed = true;
  g_hang.run = run;
  std::memcpy(g_hang.words, words, sizeof g_hang.words);
}
int fake_cuda_stream_waits() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return (int)g_waits.size();
}
// Modules loaded and not unloaded.
int fake_cuda_modules_loaded() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_modules_loaded;
}
// The plain launches so far (a linked cubin's own kernels), in order.
int fake_cuda_plain_launches(PlainLaunch *out, int cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int i = 0; i < cap && i < (int)g_plain_launches.size(); ++i) out[i] = g_plain_launches[i];
  return (int)g_plain_launches.size();
}
void fake_cuda_reset(int occupancy) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_plain_launches.clear();
  for (auto &[stream, graph] : g_capturing) delete graph;
  g_capturing.clear();
  g_captured_events.clear();
  g_launches.clear();
  g_waits.clear();
  g_calls.clear();
  g_fail.clear();
  g_occupancy = occupancy;
  g_program_occupancy = 0;
  g_shared = {};
  g_hang = {};
  g_driver_version = 13000;
  g_runner = nullptr;
  g_stack_limit = 1024;
  g_shared_optin = 232448;
  g_shared_reserved = 1024;
}
// Blocks per SM of the functions of programs compiled from PTX from now on (0: as any other).
void fake_cuda_set_program_occupancy(int occupancy) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_program_occupancy = occupancy;
}
// The context's CU_LIMIT_STACK_SIZE, and the shared memory per block the device reports.
size_t fake_cuda_stack_limit() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_stack_limit;
}
void fake_cuda_set_shared(int optin, int reserved) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_shared_optin = optin;
  g_shared_reserved = reserved;
}
// The calling thread's capture mode (CUstreamCaptureMode).
int fake_cuda_capture_mode() { return t_mode; }
// What cuDriverGetVersion reports from now on (12000 is CUDA 12.0).
void fake_cuda_set_driver_version(int version) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_driver_version = version;
}
// The next call of `name` (the exported symbol) returns `error`.
void fake_cuda_fail_next(const char *name, int error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fail[name] = {error, 0};
}
// The call of `name` after the next `skip` returns `error`.
void fake_cuda_fail_later(const char *name, int skip, int error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fail[name] = {error, skip};
}
// Launches of programs compiled from PTX run through `runner` from now on (nullptr: recorded).
void fake_cuda_set_runner(Runner runner) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_runner = runner;
}
// The device allocations (address, size pairs; up to `cap` of them); returns their count.
int fake_cuda_allocations(uint64_t *out, int cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (const auto &[address, size] : g_allocations) {
    if (n < cap) out[2 * n] = address, out[2 * n + 1] = size;
    ++n;
  }
  return n;
}
// The calling thread's current context and the depth of its stack.
void *fake_cuda_current() { return t_contexts.empty() ? nullptr : t_contexts.back(); }
int fake_cuda_context_depth() { return (int)t_contexts.size(); }
struct FakeCall {
  const char *name;
  void *stream;
  uint64_t address, size;
};
int fake_cuda_calls(FakeCall *out, int cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (const Call &c : g_calls) {
    if (n < cap) out[n] = {c.name, c.stream, c.address, c.size};
    ++n;
  }
  return n;
}

// ---- the driver API libsk binds ------------------------------------------------------------
int cuInit(unsigned) { return 0; }
int cuDriverGetVersion(int *v) {
  *v = g_driver_version;
  return 0;
}
int cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
int cuDeviceGet(int *d, int ordinal) {
  *d = ordinal;
  return ordinal == 0 ? 0 : 101;
}
int cuDeviceGetName(char *name, int len, int) {
  std::strncpy(name, "Fake GPU", (size_t)len);
  return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int) {
  switch (attr) {
    case 1: *v = 1024; break;  // max threads per block
    case 16: *v = 4; break;    // SMs
    case 75: *v = 9; break;    // compute capability 9.0
    case 76: *v = 0; break;
    case 95: *v = 1; break;  // cooperative launch
    case 97: *v = g_shared_optin; break;
    case 111: *v = g_shared_reserved; break;
    default: *v = 0;
  }
  return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  *ctx = reinterpret_cast<void *>(0x1000);
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
int cuCtxSetCurrent(void *ctx) {
  if (t_contexts.empty())
    t_contexts.push_back(ctx);
  else
    t_contexts.back() = ctx;
  return 0;
}
int cuCtxPushCurrent_v2(void *ctx) {
  if (int r = enter("cuCtxPushCurrent_v2", false)) return r;
  t_contexts.push_back(ctx);
  return 0;
}
int cuCtxPopCurrent_v2(void **ctx) {
  if (t_contexts.empty()) return kInvalidContext;
  if (ctx) *ctx = t_contexts.back();
  t_contexts.pop_back();
  return 0;
}
int cuCtxSynchronize() {
  if (int r = enter("cuCtxSynchronize")) return r;
  if (int r = unsafe_call()) return r;
  record("cuCtxSynchronize", nullptr);
  return 0;
}
int cuCtxGetLimit(size_t *value, int limit) {
  if (int r = enter("cuCtxGetLimit")) return r;
  if (limit != kLimitStackSize) return 1;  // CUDA_ERROR_INVALID_VALUE: not modelled
  std::lock_guard<std::mutex> lock(g_mutex);
  *value = g_stack_limit;
  return 0;
}
int cuCtxSetLimit(int limit, size_t value) {
  if (int r = enter("cuCtxSetLimit")) return r;
  if (int r = unsafe_call()) return r;
  if (limit != kLimitStackSize) return 1;
  record("cuCtxSetLimit", nullptr, (uint64_t)limit, value);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_stack_limit = value;
  return 0;
}
int cuThreadExchangeStreamCaptureMode(int *mode) {
  const int old = t_mode;
  t_mode = *mode;
  *mode = old;
  return 0;
}
int cuMemAlloc_v2(uint64_t *p, size_t size) {
  if (int r = enter("cuMemAlloc_v2")) return r;
  if (int r = unsafe_call()) return r;
  *p = reinterpret_cast<uint64_t>(std::calloc(1, size));
  if (!*p) return 2;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_allocations[*p] = size;
  }
  record("cuMemAlloc", nullptr, *p, size);
  return 0;
}
int cuMemFree_v2(uint64_t p) {
  if (int r = enter("cuMemFree_v2")) return r;
  if (int r = unsafe_call()) return r;
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
  if (int r = enter("cuMemcpy")) return r;
  if (int r = unsafe_call()) return r;
  record("cuMemcpy", nullptr, dst, n);
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src), n);
  return 0;
}
int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) {
  if (int r = enter("cuMemcpyHtoD_v2")) return r;
  if (int r = unsafe_call()) return r;
  record("cuMemcpyHtoD", nullptr, dst, n);
  std::memcpy(reinterpret_cast<void *>(dst), src, n);
  return 0;
}
int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) {
  if (int r = enter("cuMemcpyDtoH_v2")) return r;
  if (int r = unsafe_call()) return r;
  std::memcpy(dst, reinterpret_cast<void *>(src), n);
  return 0;
}
int cuMemsetD8_v2(uint64_t dst, unsigned char v, size_t n) {
  if (int r = enter("cuMemsetD8_v2")) return r;
  record("cuMemsetD8", nullptr, dst, n);
  std::memset(reinterpret_cast<void *>(dst), v, n);
  return 0;
}
// Async copies run at once: nothing runs on the "device" that could see the difference.
int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *stream) {
  if (int r = enter("cuMemcpyHtoDAsync_v2")) return r;
  bool from_pageable = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    from_pageable = pageable(src);
  }
  // From pageable memory the copy is synchronous (the driver stages it before returning).
  if (from_pageable)
    if (int r = unsafe_call()) return r;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (Graph *g = capturing(stream)) {
      Node node{"cuMemcpyHtoDAsync", {}, dst, n};
      node.source = src;  // read at each replay, as the driver's copy node does
      g->nodes.push_back(node);
      return 0;
    }
  }
  record("cuMemcpyHtoDAsync", stream, dst, n);
  std::memcpy(reinterpret_cast<void *>(dst), src, n);
  return 0;
}
int cuMemsetD8Async(uint64_t dst, unsigned char v, size_t n, void *stream) {
  if (int r = enter("cuMemsetD8Async")) return r;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (Graph *g = capturing(stream)) {
      Node node{"cuMemsetD8Async", {}, dst, n};
      node.value = v;
      g->nodes.push_back(node);
      return 0;
    }
  }
  record("cuMemsetD8Async", stream, dst, n);
  std::memset(reinterpret_cast<void *>(dst), v, n);
  return 0;
}
int cuStreamCreate(void **s, unsigned) {
  if (int r = enter("cuStreamCreate")) return r;
  *s = new int(0);
  return 0;
}
int cuStreamDestroy_v2(void *s) {
  if (int r = enter("cuStreamDestroy_v2")) return r;
  record("cuStreamDestroy", s);
  delete static_cast<int *>(s);
  return 0;
}
int cuStreamSynchronize(void *s) {
  if (int r = enter("cuStreamSynchronize")) return r;
  if (int r = unsafe_call()) return r;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (Graph *g = capturing(s)) {  // the driver fails the call and the capture
      g->invalidated = true;
      return kCaptureUnsupported;
    }
  }
  record("cuStreamSynchronize", s);
  return 0;
}
int cuStreamWaitEvent(void *s, void *e, unsigned) {
  if (int r = enter("cuStreamWaitEvent")) return r;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    // A captured stream may wait only for an event recorded in a capture.
    if (capturing(s) &&
        std::find(g_captured_events.begin(), g_captured_events.end(), e) == g_captured_events.end()) {
      capturing(s)->invalidated = true;
      return kCaptureIsolation;
    }
  }
  record("cuStreamWaitEvent", s, reinterpret_cast<uint64_t>(e));
  std::lock_guard<std::mutex> lock(g_mutex);
  g_waits.emplace_back(s, e);
  return 0;
}
int cuEventCreate(void **e, unsigned) {
  if (int r = enter("cuEventCreate")) return r;
  *e = new int(0);
  return 0;
}
int cuEventDestroy_v2(void *e) {
  if (int r = enter("cuEventDestroy_v2")) return r;
  delete static_cast<int *>(e);
  return 0;
}
int cuEventRecord(void *e, void *s) {
  if (int r = enter("cuEventRecord")) return r;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (Graph *g = capturing(s)) {
      g->nodes.push_back(Node{"cuEventRecord", {}, reinterpret_cast<uint64_t>(e), 0});
      g_captured_events.push_back(e);
      return 0;
    }
    g_captured_events.erase(std::remove(g_captured_events.begin(), g_captured_events.end(), e),
                            g_captured_events.end());
  }
  record("cuEventRecord", s, reinterpret_cast<uint64_t>(e));
  return 0;
}
int cuEventSynchronize(void *) {
  if (int r = enter("cuEventSynchronize")) return r;
  return unsafe_call();
}
int cuModuleLoadData(void **m, const void *image) {
  if (int r = enter("cuModuleLoadData")) return r;
  if (int r = unsafe_call()) return r;
  return load_image(m, image, &g_last_image);
}
// PTX is compiled as the driver's JIT compiles it, as one program: by ptxas (without -c), its
// log in CU_JIT_ERROR_LOG_BUFFER on failure; the cubin is kept apart from the last
// cuModuleLoadData's (fake_cuda_last_program).
int cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *options, void **values) {
  if (int r = enter("cuModuleLoadDataEx")) return r;
  if (int r = unsafe_call()) return r;
  if (std::memcmp(image, "\177ELF", 4) == 0) return load_image(m, image, &g_last_image);
  char *log = nullptr;
  size_t log_size = 0;
  bool line_info = false;
  for (unsigned i = 0; i < n; ++i) {
    const auto value = reinterpret_cast<uintptr_t>(values[i]);
    if (options[i] == sk::cuda::CU_JIT_ERROR_LOG_BUFFER) log = static_cast<char *>(values[i]);
    if (options[i] == sk::cuda::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) log_size = value;
    if (options[i] == sk::cuda::CU_JIT_GENERATE_LINE_INFO) line_info = value != 0;
  }
  const std::string text = static_cast<const char *>(image);
  const size_t target = text.find("\n.target ");
  if (target == std::string::npos) return sk::cuda::CUDA_ERROR_INVALID_PTX;
  const std::string arch = text.substr(target + 9, text.find_first_of(" ,\n", target + 9) - target - 9);
  char dir[] = "/tmp/sk-fake-jit-XXXXXX";
  if (!mkdtemp(dir)) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  const std::string ptx = std::string(dir) + "/program.ptx", cubin = std::string(dir) + "/program.cubin",
                    out = std::string(dir) + "/ptxas.log";
  FILE *f = std::fopen(ptx.c_str(), "w");
  if (f) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  const std::string command = std::string(SK_PTXAS) + " -v" + (line_info ? " -lineinfo" : "") + " -arch=" + arch +
                              " " + ptx + " -o " + cubin;
  const int status = f ? std::system((command + " > " + out + " 2>&1").c_str()) : -1;
  std::string said;
  if (FILE *l = std::fopen(out.c_str(), "r")) {
    for (int c; (c = std::fgetc(l)) != EOF;) said += (char)c;
    std::fclose(l);
  }
  std::vector<uint8_t> bytes;
  if (FILE *c = std::fopen(cubin.c_str(), "rb")) {
    for (int b; (b = std::fgetc(c)) != EOF;) bytes.push_back((uint8_t)b);
    std::fclose(c);
  }
  for (const std::string &file : {ptx, cubin, out}) std::remove(file.c_str());
  rmdir(dir);
  if (status != 0 || bytes.empty()) {
    if (log && log_size) {
      std::strncpy(log, said.c_str(), log_size - 1);
      log[log_size - 1] = '\0';
    }
    return sk::cuda::CUDA_ERROR_INVALID_PTX;
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_last_program = bytes;
    g_last_program_line_info = line_info;
  }
  auto *module = new FakeModule{40, elf_section_size(bytes.data(), ".nv.shared.sk_superkernel_entry"), 0, true};
  module->ptx = text;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_modules_loaded;
  }
  // "Compiling entry function 'E' ... Used N registers": the entry's count, its callees' included.
  const size_t entry = said.find("Compiling entry function 'sk_superkernel_entry'");
  const size_t used = said.find("Used ", entry == std::string::npos ? 0 : entry);
  if (used != std::string::npos) module->registers = std::atoi(said.c_str() + used + 5);
  const size_t frame = said.find("bytes stack frame", entry == std::string::npos ? 0 : entry);
  if (frame != std::string::npos) module->local = std::atoi(said.c_str() + said.rfind('\n', frame) + 1);
  *m = module;
  return 0;
}
int cuModuleUnload(void *m) {
  if (int r = enter("cuModuleUnload")) return r;
  delete static_cast<FakeModule *>(m);
  std::lock_guard<std::mutex> lock(g_mutex);
  --g_modules_loaded;
  return 0;
}
int cuModuleGetFunction(void **f, void *m, const char *name) {
  if (int r = enter("cuModuleGetFunction")) return r;
  auto *module = static_cast<FakeModule *>(m);
  if (std::strcmp(name, "sk_superkernel_entry") == 0) {
    *f = m;  // the entry is its module's FakeModule
    return 0;
  }
  // Any other: a kernel of a linked cubin, which must define it.
  if (module->image.empty() || !elf_section_size(module->image.data(), (std::string(".text.") + name).c_str()))
    return 500;  // CUDA_ERROR_NOT_FOUND
  auto fn = std::make_unique<FakeModule>(FakeModule{40, 0, 0});
  fn->function = name;
  fn->image = module->image;
  *f = fn.get();
  module->functions.push_back(std::move(fn));
  return 0;
}
// Copies the last loaded image (up to `cap` bytes); returns its size.
size_t fake_cuda_last_image(uint8_t *out, size_t cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::memcpy(out, g_last_image.data(), std::min(cap, g_last_image.size()));
  return g_last_image.size();
}
// The same of the cubin the last cuModuleLoadDataEx of PTX compiled.
size_t fake_cuda_last_program(uint8_t *out, size_t cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::memcpy(out, g_last_program.data(), std::min(cap, g_last_program.size()));
  return g_last_program.size();
}
// Whether that compile was asked for line tables.
int fake_cuda_last_program_line_info() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last_program_line_info;
}
void fake_cuda_shared(FakeShared *out) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *out = g_shared;
}
int cuFuncSetAttribute(void *, int attr, int value) {
  if (attr != sk::cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return 1;  // CUDA_ERROR_INVALID_VALUE
  std::lock_guard<std::mutex> lock(g_mutex);
  g_shared.max_dynamic = value;
  return 0;
}
int cuFuncGetAttribute(int *v, int attr, void *f) {
  const auto *m = static_cast<const FakeModule *>(f);
  *v = attr == sk::cuda::CU_FUNC_ATTRIBUTE_NUM_REGS            ? m->registers
       : attr == sk::cuda::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES ? m->shared
       : attr == sk::cuda::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES  ? m->local
                                                               : 1024;
  return 0;
}
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int, size_t dynamic_shared) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_shared.occupancy_dynamic = (unsigned)dynamic_shared;
  *n = static_cast<const FakeModule *>(f)->program && g_program_occupancy ? g_program_occupancy : g_occupancy;
  return 0;
}
// The bytes of a program entry's parameters, as a launch passes them: the argument slots (the
// PTX declares their size) or the buffer's address, then the entry's own.
CapturedRun capture_run(const FakeModule *program, const LaunchConfig *cfg, void **params) {
  CapturedRun c;
  c.program = program;
  c.grid[0] = cfg->grid_x, c.grid[1] = cfg->grid_y, c.grid[2] = cfg->grid_z;
  c.block[0] = cfg->block_x, c.block[1] = cfg->block_y, c.block[2] = cfg->block_z;
  c.shared = cfg->shared_mem_bytes;
  const size_t at = program->ptx.find(".b8 sk_args[");
  const size_t slots = at == std::string::npos ? 8 : std::strtoull(program->ptx.c_str() + at + 12, nullptr, 10);
  static_assert(sk::cuda::kEntryParams == 5 && sk::cuda::kEntryOwnParamBytes == 32);
  const size_t sizes[sk::cuda::kEntryParams] = {slots, 8, 8, 4, 8};
  for (size_t i = 0; i < sk::cuda::kEntryParams; ++i) {
    const auto *bytes = static_cast<const uint8_t *>(params[i]);
    c.params.emplace_back(bytes, bytes + sizes[i]);
  }
  return c;
}

// Runs a launch of a program's entry on the runner (unlocking `lock` meanwhile: the runner
// reads and writes device memory, as the blocks would) and records it.
int run_on_runner(std::unique_lock<std::mutex> &lock, Launch l, const CapturedRun &c) {
  auto *epoch = reinterpret_cast<const uint64_t *>(l.sync + sk::cuda::kSyncEpoch);
  l.epoch = *epoch + 1;
  void *params[sk::cuda::kEntryParams];
  for (size_t i = 0; i < sk::cuda::kEntryParams; ++i) params[i] = const_cast<uint8_t *>(c.params[i].data());
  const Runner runner = g_runner;
  lock.unlock();
  const int r = runner(c.program->ptx.c_str(), "sk_superkernel_entry", c.grid, c.block, c.shared, params);
  lock.lock();
  if (r) return r;
  l.last_epoch = *epoch;
  g_launches.push_back(l);
  return 0;
}

int cuLaunchKernelEx(const LaunchConfig *cfg, void *f, void **params, void **) {
  if (int r = enter("cuLaunchKernelEx")) return r;
  if (const auto *fn = static_cast<const FakeModule *>(f); !fn->function.empty()) {
    PlainLaunch p{};
    std::snprintf(p.function, sizeof p.function, "%s", fn->function.c_str());
    p.grid[0] = cfg->grid_x, p.grid[1] = cfg->grid_y, p.grid[2] = cfg->grid_z;
    p.block[0] = cfg->block_x, p.block[1] = cfg->block_y, p.block[2] = cfg->block_z;
    p.shared = cfg->shared_mem_bytes;
    p.stream = cfg->stream;
    for (unsigned i = 0; i < cfg->num_attrs; ++i)
      if (cfg->attrs[i].id == sk::cuda::CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
        p.cooperative = cfg->attrs[i].value.cooperative;
      else if (cfg->attrs[i].id == sk::cuda::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        p.cluster[0] = cfg->attrs[i].value.cluster_dim.x, p.cluster[1] = cfg->attrs[i].value.cluster_dim.y,
        p.cluster[2] = cfg->attrs[i].value.cluster_dim.z;
    for (const PlainParam &a : plain_params(fn->image, fn->function)) {
      if (a.offset + a.size > sizeof p.params) return 1;  // CUDA_ERROR_INVALID_VALUE
      std::memcpy(p.params + a.offset, params[a.ordinal], a.size);
      p.param_bytes = std::max(p.param_bytes, a.offset + a.size);
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    if (capturing(cfg->stream)) return 0;  // nothing of it runs here
    if (g_runner) return kNotSupported;    // SASS, which no runner runs
    g_calls.push_back({"cuLaunchKernelEx", cfg->stream, 0, 0});
    g_plain_launches.push_back(p);
    return 0;
  }
  Launch l{};
  l.grid = cfg->grid_x;
  l.block = cfg->block_x;
  for (unsigned i = 0; i < cfg->num_attrs; ++i)
    if (cfg->attrs[i].id == sk::cuda::CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
      l.cooperative = cfg->attrs[i].value.cooperative;
  l.stream = cfg->stream;
  static_assert(sk::cuda::kEntryParams == 5);
  std::memcpy(&l.first_slot, params[0], 8);  // parameter mode: the first slot itself
  std::memcpy(&l.sync, params[1], 8);
  std::memcpy(&l.report, params[2], 8);
  std::memcpy(&l.runs, params[3], 4);
  std::memcpy(&l.stop, params[4], 8);
  std::unique_lock<std::mutex> lock(g_mutex);
  if (Graph *g = capturing(cfg->stream)) {
    Node node{"cuLaunchKernelEx", l};
    if (const auto *fn = static_cast<const FakeModule *>(f); !fn->ptx.empty())
      node.run = capture_run(fn, cfg, params);
    g->nodes.push_back(std::move(node));
    return 0;
  }
  g_calls.push_back({"cuLaunchKernelEx", cfg->stream, 0, 0});
  if (g_shared.launches < 64) g_shared.launch_dynamic[g_shared.launches] = cfg->shared_mem_bytes;
  ++g_shared.launches;
  if (g_runner) {
    const auto *fn = static_cast<const FakeModule *>(f);
    if (fn->ptx.empty()) return kNotSupported;  // a linked cubin: SASS
    return run_on_runner(lock, l, capture_run(fn, cfg, params));
  }
  run_launch(l);
  return 0;
}

// ---- graph capture and replay --------------------------------------------------------------
// The application's calls: they act in the stream's (or graph's) context, current or not.
int cuStreamBeginCapture_v2(void *s, int mode) {
  if (int r = enter("cuStreamBeginCapture_v2", false)) return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (capturing(s)) return kIllegalState;
  Graph *g = new Graph();
  g->mode = mode;
  g->owner = &t_mode;
  g_capturing[s] = g;
  return 0;
}
int cuStreamIsCapturing(void *s, int *status) {
  if (int r = enter("cuStreamIsCapturing")) return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  *status = capturing(s) ? 1 : 0;  // CU_STREAM_CAPTURE_STATUS_ACTIVE : NONE
  return 0;
}
int cuStreamEndCapture(void *s, void **graph) {
  if (int r = enter("cuStreamEndCapture", false)) return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  Graph *g = capturing(s);
  if (!g) return kIllegalState;
  g_capturing.erase(s);
  if (g->invalidated) {
    delete g;
    *graph = nullptr;
    return kCaptureInvalidated;
  }
  *graph = g;
  return 0;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long) {
  if (int r = enter("cuGraphInstantiateWithFlags", false)) return r;
  *exec = new Graph(*static_cast<Graph *>(graph));
  return 0;
}
// Runs the nodes in order; the stand-in runs everything at once.
int cuGraphLaunch(void *exec, void *stream) {
  if (int r = enter("cuGraphLaunch", false)) return r;
  std::unique_lock<std::mutex> lock(g_mutex);
  if (capturing(stream)) return kCaptureUnsupported;  // a child graph: not used by libsk's tests
  g_calls.push_back({"cuGraphLaunch", stream, 0, 0});
  for (const Node &n : static_cast<Graph *>(exec)->nodes) {
    const std::string name = n.name;
    if (name == "cuLaunchKernelEx") {
      Launch l = n.launch;
      l.stream = stream;
      if (!g_runner) {
        run_launch(l);
      } else if (!n.run.program) {
        return kNotSupported;  // a linked cubin's launch: SASS
      } else if (int r = run_on_runner(lock, l, n.run)) {
        return r;
      }
    } else if (name == "cuMemsetD8Async") {
      std::memset(reinterpret_cast<void *>(n.address), n.value, n.size);
    } else if (name == "cuMemcpyHtoDAsync") {
      std::memcpy(reinterpret_cast<void *>(n.address), n.source, n.size);
    }
  }
  return 0;
}
int cuGraphExecDestroy(void *exec) {
  delete static_cast<Graph *>(exec);
  return 0;
}
int cuGraphDestroy(void *graph) {
  delete static_cast<Graph *>(graph);
  return 0;
}
struct FakeNode {
  const char *name;
  FakeLaunch launch;  // a kernel launch's (epoch 0: set when it runs)
  uint64_t address, size;
};
// The nodes of a graph (from cuStreamEndCapture or cuGraphInstantiateWithFlags).
int fake_cuda_graph_nodes(void *graph, FakeNode *out, int cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (const Node &node : static_cast<Graph *>(graph)->nodes) {
    if (n < cap) {
      out[n] = {node.name, node.launch, node.address, node.size};
    }
    ++n;
  }
  return n;
}
// A tensor map is its parameters as text, which the tests compare ("t7 r2 a0x... d64,16 s256
// b64,16 e1,1 i0 w3 l2 f0": data type, rank, address, dims, strides, box, element strides,
// interleave, swizzle, L2 promotion, fill), zero-padded to 128 bytes. As the driver, it
// wants the map 64-byte aligned.
int cuTensorMapEncodeTiled(void *map, int type, uint32_t rank, void *address, const uint64_t *dims,
                           const uint64_t *strides, const uint32_t *box, const uint32_t *element_strides,
                           int interleave, int swizzle, int l2, int fill) {
  if (int r = enter("cuTensorMapEncodeTiled", false)) return r;
  if (reinterpret_cast<uintptr_t>(map) % 64 || rank < 1 || rank > 5) return 1;  // CUDA_ERROR_INVALID_VALUE
  std::string text = "t" + std::to_string(type) + " r" + std::to_string(rank) + " a";
  char hex[24];
  std::snprintf(hex, sizeof hex, "%#llx", (unsigned long long)reinterpret_cast<uintptr_t>(address));
  text += hex;
  auto list = [&](const char *tag, auto *values, uint32_t n) {
    text += std::string(" ") + tag;
    for (uint32_t i = 0; i < n; ++i) text += (i ? "," : "") + std::to_string(values[i]);
  };
  list("d", dims, rank);
  list("s", strides, rank - 1);
  list("b", box, rank);
  list("e", element_strides, rank);
  text += " i" + std::to_string(interleave) + " w" + std::to_string(swizzle) + " l" + std::to_string(l2) + " f" +
          std::to_string(fill);
  if (text.size() >= 128) return 1;
  std::memset(map, 0, 128);
  std::memcpy(map, text.data(), text.size());
  return 0;
}
int cuGetErrorName(int r, const char **s) {
  switch (r) {
    case 500: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case 218: *s = "CUDA_ERROR_INVALID_PTX"; break;
    case 200: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
    case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case 801: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
    case 900: *s = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
    default: *s = "CUDA_ERROR_FAKE";
  }
  return 0;
}
int cuGetErrorString(int, const char **s) {
  *s = "fake driver error";
  return 0;
}

}  // extern "C"
