// bench_cuda: what one step of a static chain of small kernels costs on one GPU, as a libsk super
// kernel and as what an inference engine runs today, measured side by side in one process
// (issues #22, #37), in three tables per block count:
//
// The dependent chain: every word a step writes mixes a word another block wrote in the step
// before (bench_chain_body), so every step needs a grid barrier.
//   stream       one launch per step, on one stream
//   graph        a CUDA Graph captured from those launches: one cudaGraphLaunch per chain
//   graph-pdl    a CUDA Graph captured from launches with programmatic dependent launch
//                (cudaLaunchAttributeProgrammaticStreamSerialization = 1): a step may be scheduled
//                while the one before still runs, and waits for it in
//                cudaGridDependencySynchronize() before it reads anything
//   super        one libsk super kernel per chain (sk_launch): the steps are calls of the
//                sub-kernel bench_chain_step of bench_chain.cubin, with libsk's barrier between two
//   grid-sync    one cooperative kernel per chain that runs every step, with a cooperative_groups
//                grid.sync() between two: the floor a fused step can reach
//   super-empty  super with bench_empty.cubin's empty sub-kernel: libsk's own cost alone
//   sync-empty   grid-sync with nothing between its grid.sync()s: the floor's own cost alone
// ratios super/graph, super/graph-pdl, super/grid-sync and super-empty/sync-empty.
//
// The block-local chain: a step's word mixes one another thread of the same block wrote
// (bench_chain_local_body), so block i of a step needs only block i of the step before.
//   graph, graph-pdl  as above, of that step
//   super        a super kernel of bench_chain_local_step with a barrier between two steps
//   super-bl     the same with SK_KERNEL_FLAG_BLOCK_LOCAL on every step but the first
//   block-sync   one kernel per chain, __syncthreads() between two steps: its floor
// ratios super-bl over graph, graph-pdl, block-sync and super.
//
// The two-branch step: two independent dependent chains a and b (q and k projections), then a
// join, a's last step, that reads what every block of b's last step wrote.
//   graph        b's K steps on a second stream forked from the first (an event) and joined back
//                to it (an event) before the join; a's K - 1 steps on the first
//   graph-pdl    the same, every launch with programmatic dependent launch
//   super        one super kernel with stream fusion (scope option stream-fusion=1): b on scope
//                stream 1, a and the join on stream 0 after an event recorded at b's end
//   grid-sync    one cooperative kernel on twice the blocks, a on one half and b on the other,
//                grid.sync() between two steps (not run when twice the blocks are not co-resident)
// ratios super over graph, graph-pdl and grid-sync.
//
// Then the per-run cost of 16 runs of a super kernel as 16 sk_launch against one
// sk_launch_repeat of 16 (one launch whose entry loops, with a stop flag nobody sets; host time,
// as the launches are what it compares), and with --triton a decode step of Triton kernels as
// they were compiled (issue #33), several ways over one set of buffers:
//
//   stream     each kernel's PTX JIT-compiled by the driver (cudaLibraryLoadData), six
//              cudaLaunchKernel per step with the grid, num_warps x 32 threads and dynamic shared
//              bytes of the fixture's Triton metadata
//   graph      a CUDA Graph captured from one step's launches, one cudaGraphLaunch per step
//   super      one libsk super kernel of the same kernels from the same PTX (sk_module_load,
//              sk_module_get_kernel_desc with the metadata's facts), one sk_launch per step:
//              one program the driver's JIT compiled, where it did (explain's "compiled")
//   linked     the same linked by nvJitLink (whole-program=0): each kernel a called function,
//              compiled on its own, with more registers than alone
//   cap64      the same with max-registers=64 and 32: fewer registers, more blocks per SM,
//   cap32      maybe spills
//
//   bench_cuda <bench_chain.cubin> [--rounds R] [--steps S] [--blocks B1,B2,...] [--triton DIR]
//
// bench_chain.cubin is tests/kernels/cuda/bench_chain.cu built with nvcc -dc -cubin for this GPU;
// bench_empty.cubin is read from the same directory (without it only super-empty fails). Every
// chain runs the steps of tests/kernels/cuda/bench_chain.cuh, one word per thread, 128 threads
// per block, each method on buffers of its own: a step that starts before the ones it depends on
// have ended, or a launch that is not ordered after them, gives wrong words. After its timed runs
// each method's buffers are compared, word for word, with a CPU reference that runs the same
// chain as many times (every method runs it from the same start, the same number of times); the
// empty methods write nothing and are not checked. A mismatch names the table, the method, the
// block count and the chain length, and makes the run exit 1 at the end. So does a CUDA or libsk
// error: it ends only the method it happens in (its line under the row says ERROR and why), or,
// outside every method, that configuration; the other methods and tables still come. A control
// (a kernel that runs the dependent chain with no grid barrier) shows that the check sees a
// missing barrier: "caught" when its words are wrong.
//
// Block counts: 1, 8, 32 and one per SM (--blocks overrides them), clipped to the blocks a
// cooperative launch of the grid-sync kernel can have co-resident. Chain lengths: 10, 100, 1000
// steps. Times are GPU time from cudaEvents on the one stream every method runs on (super
// through sk_stream_create_cuda over it): before each configuration every SM runs grid.sync()s
// for 0.5 s (the clocks of a busy GPU), then each method runs one chain; then in each of 5
// rounds (--rounds) the methods take turns, each running R chains between two events (the
// 'step' row: / (R x K); R = S / K, --steps S, 5000 by default) and then one chain alone between
// two events (the 'chain' row: its latency). Medians of the rounds.
//
// Budget: scripts/gpu-check runs this once and stops it after 150 s, so this aims at about a
// minute. Each method runs 1 + 5 x (R + 1) chains a configuration, about 25000-31000 steps: the
// 16 methods of the three tables on 4 block counts and 3 chain lengths run about 5 million steps,
// 5-15 s at 1-3 us a step (a stream launch, the slowest, costs a few us). The warm-ups are 36 x
// 0.5 s = 18 s. Every finalize links the entry with nvJitLink unless libsk's link cache has it,
// and the entry's PTX differs with the step count and the block count: 5 super kernels a
// configuration, 60 links of 0.15-0.2 s on a 2-CPU VM, 9-12 s. Captures and instantiations of
// graphs of up to 2000 nodes take milliseconds. The CPU reference: (1 + 8 + 32 + 132) x 128
// words x about 82000 steps over the 3 chain lengths, once for the dependent chain, once for the
// block-local one and twice for the two branches: 7.2 billion word updates, and the
// sk_launch_repeat table 0.7 billion more: at the 1.7 ns a word one core of that VM takes, 13 s.
// About a minute in all, and about 90 s if every step were three times slower than assumed. A
// hang of a super kernel costs the device deadline (2 s) once; after two, the super methods are
// not run.
//
// The Triton table (DIR: tests/kernels/triton/ptx, the .ptx and .json of each fixture) runs
// residual_add, rmsnorm, rope (one warp: it runs on the first of the super kernel's four),
// decode_attention, silu_mul and gemv (decode_step.py's shapes), each reading what an earlier one
// wrote. us per step: GPU time from cudaEvents around 200 steps queued
// back to back, median of R rounds after the methods took turns for half a second. Then each
// method runs one step from the same words (inputs, NaN in every output word): the others'
// outputs must equal stream's bit for bit, stream's a CPU reference within a relative bound (the
// GPU's exp, sqrt and division are approximate); a mismatch or an error fails the run as above.
// Its cost: six driver JITs, three links, 0.5 s of warm-up, 5 x R x 200 steps of about 10-30
// us: about 3 s.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <sk.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_chain.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr uint32_t kThreads = BENCH_CHAIN_THREADS;
constexpr uint32_t kChainSteps[] = {10, 100, 1000};
constexpr uint32_t kRepeatRuns = 16;
constexpr uint32_t kRepeatChainSteps[] = {2, 10, 100};

// ---- The baselines' kernels: bench_chain.cuh's bodies on blockIdx/gridDim ----------------------

// The dependent chain's step, for stream, graph and graph-pdl. Launched with programmatic stream
// serialization (graph-pdl), it waits until the step before has completed and its writes are
// visible (griddepcontrol.wait: the prerequisite grid completed and its memory operations were
// made visible), before it reads the words that step wrote or overwrites the ones it read. Then
// it lets the next step be scheduled at once (griddepcontrol.launch_dependents): that step's
// blocks start, and wait for this one to complete, while this one runs, which hides its launch
// latency. The trigger gives no memory visibility; the wait does. Launched without the
// attribute, both calls return at once. Before sm_90 they do not exist and graph-pdl is not run.
__device__ __forceinline__ void pdl_wait_and_trigger() {
#if __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

__global__ void step_kernel(uint32_t *buf, uint32_t n, uint32_t step) {
  pdl_wait_and_trigger();
  bench_chain_body(buf, n, step, blockIdx.x, gridDim.x);
}

// The block-local chain's step.
__global__ void local_step_kernel(uint32_t *buf, uint32_t n, uint32_t step) {
  pdl_wait_and_trigger();
  bench_chain_local_body(buf, n, step, blockIdx.x);
}

// The two-branch step's join.
__global__ void join_kernel(uint32_t *a, const uint32_t *b, uint32_t n, uint32_t step) {
  pdl_wait_and_trigger();
  bench_chain_join_body(a, b, n, step, blockIdx.x, gridDim.x);
}

// grid-sync: the whole chain in one cooperative launch, one grid barrier between two steps.
__global__ void chain_kernel_grid_sync(uint32_t *buf, uint32_t n, uint32_t steps) {
  cg::grid_group grid = cg::this_grid();
  for (uint32_t s = 0; s < steps; ++s) {
    if (s) grid.sync();
    bench_chain_body(buf, n, s, blockIdx.x, gridDim.x);
  }
}

// sync-empty: the grid barriers of grid-sync with nothing between them (the clock warm-up too).
__global__ void chain_kernel_grid_sync_empty(uint32_t steps) {
  cg::grid_group grid = cg::this_grid();
  for (uint32_t s = 1; s < steps; ++s) grid.sync();
}

// block-sync, the block-local chain's floor: the whole chain in one kernel, a block barrier
// between two steps.
__global__ void chain_kernel_block_sync(uint32_t *buf, uint32_t n, uint32_t steps) {
  for (uint32_t s = 0; s < steps; ++s) {
    if (s) __syncthreads();
    bench_chain_local_body(buf, n, s, blockIdx.x);
  }
}

// The two-branch step's floor on twice the blocks: the first half runs chain a, the second chain
// b, a grid barrier between two steps; a's last step, the join, after one more.
__global__ void two_branch_grid_sync(uint32_t *a, uint32_t *b, uint32_t n, uint32_t steps) {
  cg::grid_group grid = cg::this_grid();
  const uint32_t half = gridDim.x / 2, block = blockIdx.x % half;
  const bool on_b = blockIdx.x >= half;
  for (uint32_t s = 0; s < steps; ++s) {
    if (s) grid.sync();
    if (on_b)
      bench_chain_body(b, n, s, block, half);
    else if (s + 1 < steps)
      bench_chain_body(a, n, s, block, half);
  }
  grid.sync();
  if (!on_b) bench_chain_join_body(a, b, n, steps - 1, block, half);
}

// The control: the whole chain with a block barrier only, so on more than one block a step reads
// words other blocks have not written yet, or have already overwritten. Its words must differ.
__global__ void chain_kernel_no_grid_barrier(uint32_t *buf, uint32_t n, uint32_t steps) {
  for (uint32_t s = 0; s < steps; ++s) {
    if (s) __syncthreads();
    bench_chain_body(buf, n, s, blockIdx.x, gridDim.x);
  }
}

// ---- Errors ------------------------------------------------------------------------------------

char g_where[200] = "setup";  // what runs now (method, blocks, steps), for the error messages

void where(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_where, sizeof g_where, fmt, ap);
  va_end(ap);
}

// A CUDA or libsk error ends the configuration (block count and chain length) it happens in: the
// run goes on with the next one, and exits 1 at the end. An error of the setup ends the run.
struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void raise_error(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "bench_cuda: %s\n", msg);
  throw BenchError(msg);
}

#define CHECK_CUDA(call)                                                                                   \
  do {                                                                                                     \
    cudaError_t e_ = (call);                                                                               \
    if (e_ != cudaSuccess)                                                                                 \
      raise_error("%s: %s failed: %s (%s)", g_where, #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); \
  } while (0)
#define CHECK_SK(call)                                                                                          \
  do {                                                                                                          \
    sk_status s_ = (call);                                                                                      \
    if (s_ != SK_OK) raise_error("%s: %s failed: %s: %s", g_where, #call, sk_status_name(s_), sk_last_error()); \
  } while (0)

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- The CPU reference -------------------------------------------------------------------------

// The words every method starts from (both halves: a step that read the half the step before
// had not written yet would read these).
std::vector<uint32_t> initial_words(uint32_t n) {
  std::vector<uint32_t> w(2 * size_t{n});
  for (size_t i = 0; i < w.size(); ++i) w[i] = uint32_t(i) * 0x27D4EB2Fu + 0x165667B1u;
  return w;
}

// Step s on w (2n words), as bench_chain_body does (bench_chain_local_body when `local`), with
// the word from elsewhere read in `other` (w's own half s & 1 but for a join).
void reference_step(uint32_t *w, const uint32_t *other, uint32_t blocks, uint32_t s, bool local) {
  const uint32_t n = blocks * kThreads;
  const uint32_t *__restrict__ in = w + (s & 1u) * size_t{n}, *__restrict__ far = other;
  uint32_t *__restrict__ out = w + ((s & 1u) ^ 1u) * size_t{n};
  if (local) {
    const uint32_t shift = bench_chain_local_shift(s, kThreads), split = kThreads - shift;
    for (uint32_t base = 0; base < n; base += kThreads) {
      for (uint32_t t = 0; t < split; ++t) out[base + t] = bench_chain_mix(in[base + t], far[base + t + shift], s);
      for (uint32_t t = split; t < kThreads; ++t)
        out[base + t] = bench_chain_mix(in[base + t], far[base + t - split], s);
    }
    return;
  }
  const uint32_t shift = bench_chain_shift(s, blocks, kThreads), split = n - shift;
  for (uint32_t i = 0; i < split; ++i) out[i] = bench_chain_mix(in[i], far[i + shift], s);
  for (uint32_t i = split; i < n; ++i) out[i] = bench_chain_mix(in[i], far[i - split], s);
}

// Runs the chain of `steps` steps `chains` times on w (2n words).
void reference_chains(std::vector<uint32_t> &w, uint32_t blocks, uint32_t steps, uint64_t chains, bool local) {
  const size_t n = w.size() / 2;
  for (uint64_t c = 0; c < chains; ++c)
    for (uint32_t s = 0; s < steps; ++s) reference_step(w.data(), w.data() + (s & 1u) * n, blocks, s, local);
}

// Runs the two-branch step `chains` times on a and b: b's chain of `steps` steps, a's of
// steps - 1, then the join as a's last step.
void reference_two_branch(std::vector<uint32_t> &a, std::vector<uint32_t> &b, uint32_t blocks, uint32_t steps,
                          uint64_t chains) {
  const size_t n = a.size() / 2;
  for (uint64_t c = 0; c < chains; ++c) {
    reference_chains(b, blocks, steps, 1, false);
    for (uint32_t s = 0; s + 1 < steps; ++s) reference_step(a.data(), a.data() + (s & 1u) * n, blocks, s, false);
    reference_step(a.data(), b.data() + (steps & 1u) * n, blocks, steps - 1, false);
  }
}

struct Diff {
  size_t count = 0, first = 0;
  uint32_t got = 0, expected = 0;
};

Diff compare(sk_device *dev, const uint32_t *device_words, const std::vector<uint32_t> &expected) {
  std::vector<uint32_t> got(expected.size());
  CHECK_SK(sk_memcpy(dev, got.data(), device_words, got.size() * sizeof(uint32_t)));
  Diff d;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected[i] && d.count++ == 0) {
      d.first = i;
      d.got = got[i];
      d.expected = expected[i];
    }
  return d;
}

// ---- The benchmark -----------------------------------------------------------------------------

constexpr double kWarmupUs = 500000;  // every SM busy this long before each configuration's runs

struct Bench {
  sk_device *dev = nullptr;
  sk_kernel *step = nullptr, *local = nullptr, *join = nullptr;  // bench_chain.cubin's sub-kernels
  sk_kernel *empty = nullptr;                                    // bench_empty.cubin's
  std::string empty_error;                                       // why there is none
  cudaStream_t stream = nullptr, side = nullptr;                 // side: the two-branch graphs' second stream
  sk_stream *sks = nullptr;                                      // libsk's stream over `stream`
  cudaEvent_t timing[2] = {}, fork = nullptr, join_event = nullptr;
  int rounds = 5;
  uint32_t steps_per_sample = 5000;
  uint32_t sms = 0, co_resident_branch = 0;  // co_resident_branch: blocks of two_branch_grid_sync at once
  bool pdl = true;                           // sm_90 and later
  std::vector<std::string> failures;
  int checks = 0;
  int hangs = 0;  // super kernels that hung: after two, the super columns are not run
};

// Every wait inside a super kernel gives up after this (the device's timeout_ms): a step here
// takes microseconds, and a hang costs this once per way before the way is left out.
constexpr int kDeadlineMs = 2000;

enum LaunchKind { kPlain, kPdl, kCooperative };

// One launch of `kernel` on `blocks` blocks of kThreads, on `stream`, plain, with programmatic
// stream serialization, or cooperative.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), uint32_t blocks, cudaStream_t stream, LaunchKind kind, Args... args) {
  cudaLaunchAttribute attr;
  std::memset(&attr, 0, sizeof attr);
  if (kind == kPdl) {
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
  } else {
    attr.id = cudaLaunchAttributeCooperative;
    attr.val.cooperative = 1;
  }
  cudaLaunchConfig_t config;
  std::memset(&config, 0, sizeof config);
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = kind == kPlain ? 0 : 1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, kernel, args...));
}

// Waits for what was queued on the bench's stream: through libsk first (its deadline turns a
// hang of a super kernel into an error, and a failure inside one is reported there).
void wait(Bench &b) {
  CHECK_SK(sk_stream_synchronize(b.sks));
  CHECK_CUDA(cudaStreamSynchronize(b.stream));
}

// Keeps every SM busy for kWarmupUs, so that the timed runs start at the clocks of a busy GPU.
void warm_clocks(Bench &b) {
  where("clock warm-up");
  const double t0 = now_us();
  while (now_us() - t0 < kWarmupUs) {
    for (int i = 0; i < 4; ++i) launch(chain_kernel_grid_sync_empty, b.sms, b.stream, kCooperative, uint32_t{1000});
    CHECK_CUDA(cudaStreamSynchronize(b.stream));
  }
}

// A capture an error left open is ended (errors here are not reported: the one that ended it was).
void end_open_capture(Bench &b) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(b.stream, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone) {
    cudaGraph_t open = nullptr;
    if (cudaStreamEndCapture(b.stream, &open) == cudaSuccess && open) cudaGraphDestroy(open);
  }
  (void)cudaGetLastError();  // a non-sticky error must not fail the next call
}

// What one configuration made, released on every path, errors too.
struct Owned {
  Bench &b;
  void *memory = nullptr;
  std::vector<cudaGraphExec_t> execs;
  std::vector<sk_superkernel *> supers;
  explicit Owned(Bench &bench) : b(bench) {}
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  ~Owned() {
    end_open_capture(b);
    sk_stream_synchronize(b.sks);
    cudaStreamSynchronize(b.stream);
    cudaStreamSynchronize(b.side);
    for (sk_superkernel *s : supers) sk_superkernel_destroy(s);
    for (cudaGraphExec_t e : execs) cudaGraphExecDestroy(e);
    if (memory) sk_mem_free(b.dev, memory);
    (void)cudaGetLastError();
  }
  // `count` buffers of `words` words each, from one allocation (one call per configuration).
  std::vector<uint32_t *> buffers(int count, size_t words) {
    CHECK_SK(sk_mem_alloc(b.dev, count * words * sizeof(uint32_t), &memory));
    std::vector<uint32_t *> out;
    for (int i = 0; i < count; ++i) out.push_back(static_cast<uint32_t *>(memory) + i * words);
    return out;
  }
  // Captures what `queue` launches on the bench's stream into a graph, instantiated; *ms: the
  // capture and the instantiation.
  template <class F>
  cudaGraphExec_t graph(F &&queue, double *ms, std::string *pdl_edges = nullptr) {
    const double t0 = now_us();
    cudaGraph_t graph = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(b.stream, cudaStreamCaptureModeThreadLocal));
    queue();
    CHECK_CUDA(cudaStreamEndCapture(b.stream, &graph));
    if (pdl_edges) *pdl_edges = programmatic_edges(graph);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    CHECK_CUDA(e);
    execs.push_back(exec);
    if (ms) *ms = (now_us() - t0) / 1000;
    return exec;
  }
  // A super kernel of the kernels `add` adds to a scope with `options`; *ms: sk_finalize.
  template <class F>
  sk_superkernel *super(const char *name, const char *options, F &&add, double *ms) {
    sk_scope *scope = nullptr;
    CHECK_SK(sk_scope_begin(b.dev, name, options, &scope));
    try {
      add(scope);
    } catch (const BenchError &) {
      sk_scope_abort(scope);
      throw;
    }
    sk_superkernel *sk = nullptr;
    const double t0 = now_us();
    CHECK_SK(sk_finalize(scope, &sk));
    if (ms) *ms = (now_us() - t0) / 1000;
    supers.push_back(sk);
    return sk;
  }

  // How many of a captured graph's edges are programmatic (PDL kept by the capture), of all.
  static std::string programmatic_edges(cudaGraph_t graph) {
    size_t count = 0;
    if (cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count) != cudaSuccess) {
      (void)cudaGetLastError();  // informational only
      return "?";
    }
    std::vector<cudaGraphNode_t> from(count), to(count);
    std::vector<cudaGraphEdgeData> data(count);
    if (count && cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &count) != cudaSuccess) {
      (void)cudaGetLastError();
      return "?";
    }
    size_t programmatic = 0;
    for (size_t i = 0; i < count; ++i) programmatic += data[i].type == cudaGraphDependencyTypeProgrammatic;
    return std::to_string(programmatic) + "/" + std::to_string(count);
  }
};

// The number after "key": in explain's JSON, or -1.
long json_number(const std::string &json, const char *key) {
  size_t at = json.find(std::string("\"") + key + "\"");
  if (at == std::string::npos) return -1;
  at += std::strlen(key) + 2;
  while (at < json.size() && (json[at] == ':' || json[at] == ' ')) ++at;
  return std::strtol(json.c_str() + at, nullptr, 10);
}

// A super kernel's explain JSON, or "" (context only: the tables do not depend on it).
std::string explain(sk_superkernel *sk) {
  size_t needed = 0;
  if (sk_superkernel_explain(sk, nullptr, 0, &needed) != SK_OK || needed == 0) return "";
  std::string json(needed, '\0');
  if (sk_superkernel_explain(sk, json.data(), json.size(), nullptr) != SK_OK) return "";
  json.resize(needed - 1);
  return json;
}

// How often `needle` occurs in `text`.
size_t occurrences(const std::string &text, const char *needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// One method of a table in one configuration (block count, chain length): what it queues, the
// buffers it writes (compared with the CPU reference's, in order), what it measured, or why it
// failed. A method that fails is left out from then on; its line under the row says why.
struct Way {
  std::string name;
  bool run = true;                 // false: not on this GPU or at this size; the cell says "-"
  std::function<void(int)> queue;  // queues `count` chains on the bench's stream
  std::vector<const uint32_t *> writes;
  std::string error, mismatch;
  std::vector<double> step_us, chain_us;
};

struct Ratio {
  const char *label;
  int num, den;  // indexes of the ways
};

// One table: its ways and ratios, the same for every chain length of a block count.
struct Table {
  const char *title;
  std::vector<std::string> names;
  std::vector<Ratio> ratios;
};

struct Config {
  const char *table;
  uint32_t blocks, steps;
  int reps;         // chains between the two events of a per-step sample
  uint64_t chains;  // every way runs the chain this many times from the start words
};

Config config(const Bench &b, const char *table, uint32_t blocks, uint32_t steps) {
  const int reps = (int)std::max<uint32_t>(1, b.steps_per_sample / steps);
  // The warm-up chain, then per round `reps` chains and one alone.
  return {table, blocks, steps, reps, 1 + uint64_t(b.rounds) * (uint64_t(reps) + 1)};
}

// Runs `body` for way w unless it failed before; an error is w's, and what it left queued or
// open is ended, so the next way starts clean. Once two super kernels hung, the super ways are
// not run: each hang costs the deadline, and the run must end within its budget.
template <class F>
void attempt(Bench &b, Way &w, const Config &c, const char *what, F &&body) {
  if (!w.run || !w.error.empty()) return;
  if (b.hangs >= 2 && w.name.compare(0, 5, "super") == 0) {
    w.error = "not run: two super kernels hung before (above)";
    return;
  }
  where("%s, %s, %u blocks, %u steps: %s", c.table, w.name.c_str(), c.blocks, c.steps, what);
  try {
    body();
  } catch (const BenchError &e) {
    w.error = e.what();
    b.hangs += w.error.find("SK_ERR_HANG") != std::string::npos;
    end_open_capture(b);
    sk_stream_synchronize(b.sks);
    cudaStreamSynchronize(b.stream);
    cudaStreamSynchronize(b.side);
    (void)cudaGetLastError();
  }
}

// GPU us of what `queue` queues between two events.
template <class F>
double event_us(Bench &b, F &&queue) {
  CHECK_CUDA(cudaEventRecord(b.timing[0], b.stream));
  queue();
  CHECK_CUDA(cudaEventRecord(b.timing[1], b.stream));
  wait(b);
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, b.timing[0], b.timing[1]));
  return ms * 1000.0;
}

// The clock warm-up, one chain of each way (loads, caches), then per round and way: R chains
// between two events (us per step) and one chain alone (its latency). The ways take turns.
void measure(Bench &b, const Config &c, std::vector<Way> &ways) {
  warm_clocks(b);
  for (Way &w : ways)
    attempt(b, w, c, "warm-up", [&] {
      w.queue(1);
      wait(b);
    });
  for (int r = 0; r < b.rounds; ++r)
    for (Way &w : ways)
      attempt(b, w, c, "timed runs", [&] {
        w.step_us.push_back(event_us(b, [&] { w.queue(c.reps); }) / (c.reps * double(c.steps)));
        w.chain_us.push_back(event_us(b, [&] { w.queue(1); }));
      });
}

// Compares each way's buffers with the reference's (`expected`, in the order of its writes).
void check(Bench &b, const Config &c, std::vector<Way> &ways, const std::vector<std::vector<uint32_t>> &expected) {
  for (Way &w : ways) {
    if (w.writes.empty()) continue;
    attempt(b, w, c, "check", [&] {
      ++b.checks;
      for (size_t k = 0; k < w.writes.size(); ++k) {
        const Diff d = compare(b.dev, w.writes[k], expected[k]);
        if (!d.count) continue;
        const size_t n = expected[k].size() / 2;
        char msg[480];
        std::snprintf(msg, sizeof msg,
                      "%s, %s, %u blocks, %u-step chain (run %llu times): buffer %zu, word %zu (half %zu, index "
                      "%zu) is 0x%08x, expected 0x%08x; %zu of %zu words differ",
                      c.table, w.name.c_str(), c.blocks, c.steps, (unsigned long long)c.chains, k, d.first,
                      d.first / n, d.first % n, d.got, d.expected, d.count, expected[k].size());
        std::fprintf(stderr, "bench_cuda: MISMATCH: %s\n", msg);
        b.failures.push_back(msg);
        w.mismatch = msg;
        return;
      }
    });
  }
}

size_t column_width(const std::string &label) { return std::max<size_t>(9, label.size()); }

void print_header(const Table &t) {
  std::printf("%6s %-5s |", "steps", "");
  for (const std::string &name : t.names) std::printf(" %*s", (int)column_width(name), name.c_str());
  std::printf(" |");
  for (const Ratio &r : t.ratios) std::printf(" %*s", (int)column_width(r.label), r.label);
  std::printf(" | notes\n");
  std::fflush(stdout);
}

// The two rows of a configuration (us per step, us of one chain), then a line per way that
// failed or differs. `notes` ends the first row.
void print_rows(Bench &b, const Table &t, const Config &c, const std::vector<Way> &ways, const std::string &notes) {
  for (int row = 0; row < 2; ++row) {
    double v[16] = {};
    std::printf("%6u %-5s |", c.steps, row ? "chain" : "step");
    for (size_t i = 0; i < ways.size(); ++i) {
      const Way &w = ways[i];
      const std::vector<double> &samples = row ? w.chain_us : w.step_us;
      char cell[32] = "-";
      if (!w.error.empty())
        std::snprintf(cell, sizeof cell, "ERROR");
      else if (w.run && samples.size() == size_t(b.rounds))
        std::snprintf(cell, sizeof cell, "%.3f", v[i] = median(samples));
      std::printf(" %*s", (int)column_width(t.names[i]), cell);
    }
    std::printf(" |");
    for (const Ratio &r : t.ratios) {
      char cell[32] = "-";
      if (v[r.num] > 0 && v[r.den] > 0) std::snprintf(cell, sizeof cell, "%.2f", v[r.num] / v[r.den]);
      std::printf(" %*s", (int)column_width(r.label), cell);
    }
    bool bad = false;
    for (const Way &w : ways) bad = bad || !w.error.empty() || !w.mismatch.empty();
    std::printf(" | %s%s\n", row ? "" : notes.c_str(), !row && bad ? "  FAILED (below)" : "");
  }
  for (const Way &w : ways) {
    if (!w.error.empty()) {
      std::printf("    %s: ERROR: %s\n", w.name.c_str(), w.error.c_str());
      b.failures.push_back("error: " + w.error);
    }
    if (!w.mismatch.empty()) std::printf("    %s: MISMATCH: %s\n", w.name.c_str(), w.mismatch.c_str());
  }
  std::fflush(stdout);
}

// ---- The dependent chain -----------------------------------------------------------------------

enum { kStream, kGraph, kGraphPdl, kSuper, kGridSync, kSuperEmpty, kSyncEmpty };
const Table kChainTable = {"dependent chain",
                           {"stream", "graph", "graph-pdl", "super", "grid-sync", "super-empty", "sync-empty"},
                           {{"super/graph", kSuper, kGraph},
                            {"super/pdl", kSuper, kGraphPdl},
                            {"super/floor", kSuper, kGridSync},
                            {"empty/floor", kSuperEmpty, kSyncEmpty}}};

void chain_config(Bench &b, uint32_t blocks, uint32_t steps, bool first) {
  const Config c = config(b, kChainTable.title, blocks, steps);
  const uint32_t n = blocks * kThreads;
  const size_t words = 2 * size_t{n};
  const std::vector<uint32_t> start = initial_words(n);
  Owned own(b);
  where("%s, %u blocks, %u steps: buffers", c.table, blocks, steps);
  const std::vector<uint32_t *> buf = own.buffers(5, words);
  for (uint32_t *p : buf) CHECK_SK(sk_memcpy(b.dev, p, start.data(), words * sizeof(uint32_t)));

  std::vector<Way> ways(kChainTable.names.size());
  for (size_t i = 0; i < ways.size(); ++i) ways[i].name = kChainTable.names[i];
  for (int m : {kStream, kGraph, kGraphPdl, kSuper, kGridSync}) ways[m].writes = {buf[m]};
  double graph_ms = 0, finalize_ms = 0;
  std::string pdl_edges = "-", registers;
  auto queue_steps = [&b, n, blocks, steps](uint32_t *p, LaunchKind kind) {
    for (uint32_t s = 0; s < steps; ++s) launch(step_kernel, blocks, b.stream, kind, p, n, s);
  };
  ways[kStream].queue = [&, p = buf[kStream]](int count) {
    for (int r = 0; r < count; ++r) queue_steps(p, kPlain);
  };
  attempt(b, ways[kGraph], c, "capture", [&] {
    cudaGraphExec_t exec = own.graph([&] { queue_steps(buf[kGraph], kPlain); }, &graph_ms);
    ways[kGraph].queue = [&b, exec](int count) {
      for (int r = 0; r < count; ++r) CHECK_CUDA(cudaGraphLaunch(exec, b.stream));
    };
  });
  ways[kGraphPdl].run = b.pdl;
  attempt(b, ways[kGraphPdl], c, "capture", [&] {
    cudaGraphExec_t exec = own.graph([&] { queue_steps(buf[kGraphPdl], kPdl); }, nullptr, &pdl_edges);
    ways[kGraphPdl].queue = [&b, exec](int count) {
      for (int r = 0; r < count; ++r) CHECK_CUDA(cudaGraphLaunch(exec, b.stream));
    };
  });
  auto super_queue = [&b](sk_superkernel *sk) {
    return [&b, sk](int count) {
      for (int r = 0; r < count; ++r) CHECK_SK(sk_launch(sk, b.sks));
    };
  };
  attempt(b, ways[kSuper], c, "finalize", [&] {
    sk_superkernel *sk = own.super(
        "bench_chain", nullptr,
        [&](sk_scope *scope) {
      uint32_t *p = buf[kSuper];
      uint32_t nn = n;
      for (uint32_t s = 0; s < steps; ++s) {
        void *args[] = {&p, &nn, &s};
        CHECK_SK(sk_add_kernel(scope, b.step, blocks, args, nullptr));
      }
        },
        &finalize_ms);
    ways[kSuper].queue = super_queue(sk);
    if (first) {
      const std::string json = explain(sk);
      if (!json.empty())
        registers = ", super entry " + std::to_string(json_number(json, "registers")) + " registers, " +
                    std::to_string(json_number(json, "blocks_per_sm")) + " blocks/SM, a step " +
                    std::to_string(json_number(json, "block_barriers")) + " barriers " +
                    std::to_string(json_number(json, "releases")) + " release " +
                    std::to_string(json_number(json, "acquires")) + " acquire";
    }
  });
  ways[kGridSync].queue = [&, p = buf[kGridSync]](int count) {
    for (int r = 0; r < count; ++r) launch(chain_kernel_grid_sync, blocks, b.stream, kCooperative, p, n, steps);
  };
  attempt(b, ways[kSuperEmpty], c, "finalize", [&] {
    if (!b.empty) raise_error("%s: %s", g_where, b.empty_error.c_str());
    sk_superkernel *sk = own.super(
        "bench_empty", nullptr,
        [&](sk_scope *scope) {
      for (uint32_t s = 0; s < steps; ++s) CHECK_SK(sk_add_kernel(scope, b.empty, blocks, nullptr, nullptr));
        },
        nullptr);
    ways[kSuperEmpty].queue = super_queue(sk);
  });
  ways[kSyncEmpty].queue = [&](int count) {
    for (int r = 0; r < count; ++r) launch(chain_kernel_grid_sync_empty, blocks, b.stream, kCooperative, steps);
  };

  where("%s, %u blocks, %u steps: reference", c.table, blocks, steps);
  std::vector<uint32_t> once = start;
  reference_chains(once, blocks, steps, 1, false);
  std::vector<uint32_t> expected = once;
  reference_chains(expected, blocks, steps, c.chains - 1, false);
  measure(b, c, ways);
  check(b, c, ways, {expected});

  // The control, on the grid-sync buffer (checked above): one chain with no grid barrier.
  const char *control = "-";
  if (blocks > 1 && ways[kGridSync].error.empty()) {
    where("control, %u blocks, %u steps", blocks, steps);
    CHECK_SK(sk_memcpy(b.dev, buf[kGridSync], start.data(), words * sizeof(uint32_t)));
    launch(chain_kernel_no_grid_barrier, blocks, b.stream, kPlain, buf[kGridSync], n, steps);
    CHECK_CUDA(cudaStreamSynchronize(b.stream));
    control = compare(b.dev, buf[kGridSync], once).count ? "caught" : "MISSED";
  }
  char notes[320];
  std::snprintf(notes, sizeof notes, "finalize %.1f ms, graph %.1f ms, pdl edges %s, control %s%s", finalize_ms,
                graph_ms, pdl_edges.c_str(), control, registers.c_str());
  print_rows(b, kChainTable, c, ways, notes);
}

// ---- The block-local chain ---------------------------------------------------------------------

enum { kLGraph, kLGraphPdl, kLSuper, kLSuperLocal, kLBlockSync };
const Table kLocalTable = {"block-local chain",
                           {"graph", "graph-pdl", "super", "super-bl", "block-sync"},
                           {{"bl/graph", kLSuperLocal, kLGraph},
                            {"bl/pdl", kLSuperLocal, kLGraphPdl},
                            {"bl/floor", kLSuperLocal, kLBlockSync},
                            {"bl/super", kLSuperLocal, kLSuper}}};

void local_config(Bench &b, uint32_t blocks, uint32_t steps) {
  const Config c = config(b, kLocalTable.title, blocks, steps);
  const uint32_t n = blocks * kThreads;
  const size_t words = 2 * size_t{n};
  const std::vector<uint32_t> start = initial_words(n);
  Owned own(b);
  where("%s, %u blocks, %u steps: buffers", c.table, blocks, steps);
  const std::vector<uint32_t *> buf = own.buffers(5, words);
  for (uint32_t *p : buf) CHECK_SK(sk_memcpy(b.dev, p, start.data(), words * sizeof(uint32_t)));

  std::vector<Way> ways(kLocalTable.names.size());
  for (size_t i = 0; i < ways.size(); ++i) {
    ways[i].name = kLocalTable.names[i];
    ways[i].writes = {buf[i]};
  }
  auto queue_steps = [&b, n, blocks, steps](uint32_t *p, LaunchKind kind) {
    for (uint32_t s = 0; s < steps; ++s) launch(local_step_kernel, blocks, b.stream, kind, p, n, s);
  };
  std::string pdl_edges = "-", local_edges = "?";
  for (int m : {kLGraph, kLGraphPdl}) {
    ways[m].run = m == kLGraph || b.pdl;
    attempt(b, ways[m], c, "capture", [&] {
      cudaGraphExec_t exec = own.graph([&] { queue_steps(buf[m], m == kLGraph ? kPlain : kPdl); }, nullptr,
                                       m == kLGraph ? nullptr : &pdl_edges);
      ways[m].queue = [&b, exec](int count) {
        for (int r = 0; r < count; ++r) CHECK_CUDA(cudaGraphLaunch(exec, b.stream));
      };
    });
  }
  for (int m : {kLSuper, kLSuperLocal})
    attempt(b, ways[m], c, "finalize", [&] {
      sk_superkernel *sk = own.super(
          m == kLSuper ? "bench_local_barriers" : "bench_local", nullptr,
          [&](sk_scope *scope) {
        uint32_t *p = buf[m];
        uint32_t nn = n;
        sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
        for (uint32_t s = 0; s < steps; ++s) {
          void *args[] = {&p, &nn, &s};
          opts.flags = m == kLSuperLocal && s > 0 ? SK_KERNEL_FLAG_BLOCK_LOCAL : 0;
          CHECK_SK(sk_add_kernel(scope, b.local, blocks, args, &opts));
        }
          },
          nullptr);
      if (m == kLSuperLocal) {
        const std::string json = explain(sk);
        if (!json.empty()) local_edges = std::to_string(occurrences(json, "\"block-local\""));
      }
      ways[m].queue = [&b, sk](int count) {
        for (int r = 0; r < count; ++r) CHECK_SK(sk_launch(sk, b.sks));
      };
    });
  ways[kLBlockSync].queue = [&, p = buf[kLBlockSync]](int count) {
    for (int r = 0; r < count; ++r) launch(chain_kernel_block_sync, blocks, b.stream, kPlain, p, n, steps);
  };

  where("%s, %u blocks, %u steps: reference", c.table, blocks, steps);
  std::vector<uint32_t> expected = start;
  reference_chains(expected, blocks, steps, c.chains, true);
  measure(b, c, ways);
  check(b, c, ways, {expected});
  char notes[160];
  std::snprintf(notes, sizeof notes, "block-local edges %s/%u (explain), pdl edges %s", local_edges.c_str(),
                steps - 1, pdl_edges.c_str());
  print_rows(b, kLocalTable, c, ways, notes);
}

// ---- The two-branch step -----------------------------------------------------------------------

enum { kBGraph, kBGraphPdl, kBSuper, kBGridSync };
const Table kBranchTable = {
    "two-branch step",
    {"graph", "graph-pdl", "super", "grid-sync"},
    {{"super/graph", kBSuper, kBGraph}, {"super/pdl", kBSuper, kBGraphPdl}, {"super/floor", kBSuper, kBGridSync}}};

void branch_config(Bench &b, uint32_t blocks, uint32_t steps) {
  const Config c = config(b, kBranchTable.title, blocks, steps);
  const uint32_t n = blocks * kThreads;
  const size_t words = 2 * size_t{n};
  const std::vector<uint32_t> start = initial_words(n);
  Owned own(b);
  where("%s, %u blocks, %u steps: buffers", c.table, blocks, steps);
  const std::vector<uint32_t *> buf = own.buffers(8, words);  // a and b of each way
  for (uint32_t *p : buf) CHECK_SK(sk_memcpy(b.dev, p, start.data(), words * sizeof(uint32_t)));

  std::vector<Way> ways(kBranchTable.names.size());
  for (size_t i = 0; i < ways.size(); ++i) {
    ways[i].name = kBranchTable.names[i];
    ways[i].writes = {buf[2 * i], buf[2 * i + 1]};
  }
  // The graphs: b's chain on the side stream, forked from and joined back to the bench's stream.
  std::string pdl_edges = "-";
  for (int m : {kBGraph, kBGraphPdl}) {
    ways[m].run = m == kBGraph || b.pdl;
    attempt(b, ways[m], c, "capture", [&] {
      uint32_t *pa = buf[2 * m], *pb = buf[2 * m + 1];
      const LaunchKind kind = m == kBGraph ? kPlain : kPdl;
      cudaGraphExec_t exec = own.graph(
          [&] {
        CHECK_CUDA(cudaEventRecord(b.fork, b.stream));
        CHECK_CUDA(cudaStreamWaitEvent(b.side, b.fork, 0));
        for (uint32_t s = 0; s < steps; ++s) launch(step_kernel, blocks, b.side, kind, pb, n, s);
        for (uint32_t s = 0; s + 1 < steps; ++s) launch(step_kernel, blocks, b.stream, kind, pa, n, s);
        CHECK_CUDA(cudaEventRecord(b.join_event, b.side));
        CHECK_CUDA(cudaStreamWaitEvent(b.stream, b.join_event, 0));
        launch(join_kernel, blocks, b.stream, kind, pa, (const uint32_t *)pb, n, steps - 1);
          },
          nullptr, m == kBGraph ? nullptr : &pdl_edges);
      ways[m].queue = [&b, exec](int count) {
        for (int r = 0; r < count; ++r) CHECK_CUDA(cudaGraphLaunch(exec, b.stream));
      };
    });
  }
  // The super kernel: the two chains on scope streams 1 (b) and 0 (a), stream fusion, the join
  // on stream 0 after an event recorded at the end of stream 1.
  std::string cores = "?";
  attempt(b, ways[kBSuper], c, "finalize", [&] {
    sk_superkernel *sk = own.super(
        "bench_two_branch", "stream-fusion=1",
        [&](sk_scope *scope) {
      uint32_t *pa = buf[2 * kBSuper], *pb = buf[2 * kBSuper + 1];
      uint32_t nn = n;
      sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
      opts.stream = 1;
      for (uint32_t s = 0; s < steps; ++s) {
        void *args[] = {&pb, &nn, &s};
        CHECK_SK(sk_add_kernel(scope, b.step, blocks, args, &opts));
      }
      CHECK_SK(sk_scope_record_event(scope, 1, 0));
      opts.stream = 0;
      for (uint32_t s = 0; s + 1 < steps; ++s) {
        void *args[] = {&pa, &nn, &s};
        CHECK_SK(sk_add_kernel(scope, b.step, blocks, args, &opts));
      }
      CHECK_SK(sk_scope_wait_event(scope, 0, 0));
      uint32_t last = steps - 1;
      void *args[] = {&pa, &pb, &nn, &last};
      CHECK_SK(sk_add_kernel(scope, b.join, blocks, args, &opts));
        },
        nullptr);
    const std::string json = explain(sk);
    if (!json.empty()) cores = std::to_string(json_number(json, "cores"));
    ways[kBSuper].queue = [&b, sk](int count) {
      for (int r = 0; r < count; ++r) CHECK_SK(sk_launch(sk, b.sks));
    };
  });
  ways[kBGridSync].run = 2 * blocks <= b.co_resident_branch;
  ways[kBGridSync].queue = [&, pa = buf[2 * kBGridSync], pb = buf[2 * kBGridSync + 1]](int count) {
    for (int r = 0; r < count; ++r)
      launch(two_branch_grid_sync, 2 * blocks, b.stream, kCooperative, pa, pb, n, steps);
  };

  where("%s, %u blocks, %u steps: reference", c.table, blocks, steps);
  std::vector<uint32_t> expected_a = start, expected_b = start;
  reference_two_branch(expected_a, expected_b, blocks, steps, c.chains);
  measure(b, c, ways);
  check(b, c, ways, {expected_a, expected_b});
  char notes[160];
  std::snprintf(notes, sizeof notes, "super on %s cores (explain), pdl edges %s%s", cores.c_str(), pdl_edges.c_str(),
                ways[kBGridSync].run ? "" : ", grid-sync: 2 x blocks not co-resident");
  print_rows(b, kBranchTable, c, ways, notes);
}

// One block count: the three tables, a row pair per chain length. An error outside a way (the
// buffers, the reference, the warm-up) ends that configuration only.
void bench_blocks(Bench &b, uint32_t blocks, bool first) {
  struct Part {
    const Table *table;
    void (*run)(Bench &, uint32_t, uint32_t, bool);
  };
  const Part parts[] = {
      {&kChainTable, [](Bench &bb, uint32_t bl, uint32_t st, bool f) { chain_config(bb, bl, st, f); }},
      {&kLocalTable, [](Bench &bb, uint32_t bl, uint32_t st, bool) { local_config(bb, bl, st); }},
      {&kBranchTable, [](Bench &bb, uint32_t bl, uint32_t st, bool) { branch_config(bb, bl, st); }},
  };
  for (const Part &p : parts) {
    std::printf(
        "\n%s, %u block%s x %u threads: GPU us per step (R chains between events) and of one chain alone,\n"
        "median of %d rounds\n",
        p.table->title, blocks, blocks == 1 ? "" : "s", kThreads, b.rounds);
    print_header(*p.table);
    for (uint32_t steps : kChainSteps) try {
        p.run(b, blocks, steps, first && steps == kChainSteps[0]);
      } catch (const BenchError &e) {
        std::printf("%6u %-5s | ERROR: %s\n", steps, "", e.what());
        std::fflush(stdout);
        b.failures.push_back(std::string("error: ") + e.what());
      }
  }
}

// ---- sk_launch_repeat --------------------------------------------------------------------------

// The dependent chain's super kernel on buf, for the sk_launch_repeat table.
sk_superkernel *chain_super(Bench &b, uint32_t *buf, uint32_t n, uint32_t blocks, uint32_t steps) {
  sk_scope *scope = nullptr;
  CHECK_SK(sk_scope_begin(b.dev, "bench_chain", nullptr, &scope));
  for (uint32_t s = 0; s < steps; ++s) {
    void *args[] = {&buf, &n, &s};
    if (sk_add_kernel(scope, b.step, blocks, args, nullptr) != SK_OK) {
      const std::string error = sk_last_error();
      sk_scope_abort(scope);
      raise_error("%s: sk_add_kernel(bench_chain_step) failed: %s", g_where, error.c_str());
    }
  }
  sk_superkernel *sk = nullptr;
  CHECK_SK(sk_finalize(scope, &sk));
  return sk;
}

// Records a mismatch of `what`'s words with the reference.
void check_words(Bench &b, const char *what, uint32_t blocks, uint32_t steps, uint64_t chains, const uint32_t *words,
                 const std::vector<uint32_t> &expected) {
  ++b.checks;
  const Diff d = compare(b.dev, words, expected);
  if (!d.count) return;
  const size_t n = expected.size() / 2;
  char msg[400];
  std::snprintf(msg, sizeof msg,
                "%s, %u blocks, %u-step chain (run %llu times): word %zu (half %zu, index %zu) is 0x%08x, "
                "expected 0x%08x; %zu of %zu words differ",
                what, blocks, steps, (unsigned long long)chains, d.first, d.first / n, d.first % n, d.got,
                d.expected, d.count, expected.size());
  std::fprintf(stderr, "bench_cuda: MISMATCH: %s\n", msg);
  b.failures.push_back(msg);
}

// 16 sk_launch against one sk_launch_repeat of 16, each on a super kernel and buffer of its own.
void bench_repeat(Bench &b, uint32_t blocks) {
  const uint32_t n = blocks * kThreads;
  const std::vector<uint32_t> start = initial_words(n);
  const size_t words = 2 * size_t{n};
  void *raw = nullptr, *flag = nullptr;
  where("sk_launch_repeat, %u blocks: sk_mem_alloc", blocks);
  CHECK_SK(sk_mem_alloc(b.dev, 2 * words * sizeof(uint32_t), &raw));
  CHECK_SK(sk_mem_alloc(b.dev, sizeof(uint32_t), &flag));
  const uint32_t zero = 0;
  CHECK_SK(sk_memcpy(b.dev, flag, &zero, sizeof zero));
  const uint32_t *stop = static_cast<const uint32_t *>(flag);
  uint32_t *buf_launches = static_cast<uint32_t *>(raw), *buf_repeat = buf_launches + words;
  const uint32_t steps_per_sample = std::max<uint32_t>(1, b.steps_per_sample / 2);

  std::printf(
      "\nsk_launch_repeat on %u blocks: %u runs of a chain as %u sk_launch or one sk_launch_repeat, "
      "us per run, median of %d rounds\n",
      blocks, kRepeatRuns, kRepeatRuns, b.rounds);
  std::printf("%6s | %12s %12s | %15s\n", "steps", "launches us", "repeat us", "launches/repeat");
  for (uint32_t steps : kRepeatChainSteps) {
    sk_superkernel *launches = nullptr, *repeat = nullptr;
    try {
      const int reps = (int)std::max<uint32_t>(1, steps_per_sample / (steps * kRepeatRuns));
      const uint64_t runs = kRepeatRuns * (1 + uint64_t(b.rounds) * reps);
      where("sk_launch_repeat, %u blocks, %u steps: setup", blocks, steps);
      CHECK_SK(sk_memcpy(b.dev, buf_launches, start.data(), words * sizeof(uint32_t)));
      CHECK_SK(sk_memcpy(b.dev, buf_repeat, start.data(), words * sizeof(uint32_t)));
      launches = chain_super(b, buf_launches, n, blocks, steps);
      repeat = chain_super(b, buf_repeat, n, blocks, steps);
      std::vector<double> launches_t, repeat_t;
      for (int r = -1; r < b.rounds; ++r) {  // round -1: the warm-up
        const int count = r < 0 ? 1 : reps;
        where("sk_launch, %u blocks, %u steps: %s", blocks, steps, r < 0 ? "warm-up" : "timed runs");
        double t0 = now_us();
        for (int i = 0; i < count; ++i)
          for (uint32_t k = 0; k < kRepeatRuns; ++k) CHECK_SK(sk_launch(launches, nullptr));
        CHECK_SK(sk_stream_synchronize(nullptr));
        if (r >= 0) launches_t.push_back((now_us() - t0) / (count * double(kRepeatRuns)));
        where("sk_launch_repeat, %u blocks, %u steps: %s", blocks, steps, r < 0 ? "warm-up" : "timed runs");
        t0 = now_us();
        for (int i = 0; i < count; ++i) CHECK_SK(sk_launch_repeat(repeat, kRepeatRuns, stop, nullptr));
        CHECK_SK(sk_stream_synchronize(nullptr));
        if (r >= 0) repeat_t.push_back((now_us() - t0) / (count * double(kRepeatRuns)));
      }
      where("sk_launch_repeat, %u blocks, %u steps: check", blocks, steps);
      std::vector<uint32_t> expected = start;
      reference_chains(expected, blocks, steps, runs, false);
      const size_t before = b.failures.size();
      check_words(b, "sk_launch x16", blocks, steps, runs, buf_launches, expected);
      check_words(b, "sk_launch_repeat(16)", blocks, steps, runs, buf_repeat, expected);
      const double l = median(launches_t), rp = median(repeat_t);
      std::printf("%6u | %12.3f %12.3f | %15.2f%s\n", steps, l, rp, l / rp,
                  b.failures.size() == before ? "" : "  MISMATCH (see below)");
      std::fflush(stdout);
    } catch (const BenchError &e) {
      std::printf("%6u | ERROR: %s\n", steps, e.what());
      std::fflush(stdout);
      b.failures.push_back(std::string("error: ") + e.what());
    }
    sk_superkernel_destroy(launches);
    sk_superkernel_destroy(repeat);
  }
  sk_mem_free(b.dev, flag);
  sk_mem_free(b.dev, raw);
}

// ---- The Triton decode step --------------------------------------------------------------------

// The decode shape tests/kernels/triton/decode_step.py compiled its fixtures for (BATCH, HIDDEN,
// HEADS, HEAD_DIM, KV_LEN, GEMV_OUT): the PTX is specialised for it, the .json grids follow it.
constexpr uint32_t kBatch = 4, kHidden = 1024, kHeads = 8, kHeadDim = 128, kKvLen = 256, kGemvOut = 1024;
static_assert(kHidden == kHeads * kHeadDim, "the attention's queries are the normalised rows");
// Valid cache entries: not a multiple of BLOCK_L (32), so the last block of entries is masked.
constexpr uint32_t kSeqLen = 200;
constexpr float kEps = 1e-6f;
constexpr int kTritonReplays = 200;         // decode steps between the two events of a sample
constexpr double kTritonWarmupUs = 500000;  // the methods take turns for this long first
// The CPU reference's bound: |gpu - cpu| <= kTritonTolerance x (|cpu| + the buffer's rms). The
// GPU's exp, sqrt and division are approximate and its sums run in another order; a word that
// was never written (NaN) or one computed from a wrong input is far outside it.
constexpr double kTritonTolerance = 1e-3;

// One set of buffers for the whole step: inputs first, then what the kernels write.
enum DecodeBuffer {
  kX, kResidual, kNormW, kCos, kSin, kKCache, kVCache, kGemvW, kH, kHn, kQ, kAttn, kY, kOut, kDecodeBuffers
};
constexpr int kFirstOutput = kH;
struct DecodeBufferSpec {
  const char *name;
  size_t count;  // floats
  float lo, hi;  // an input's values are drawn from [lo, hi)
};
constexpr size_t kTokens = size_t{kBatch} * kHidden, kCache = size_t{kBatch} * kKvLen * kHeads * kHeadDim;
const DecodeBufferSpec kDecodeBuffer[kDecodeBuffers] = {
    {"x", kTokens, -1, 1},
    {"residual", kTokens, -1, 1},
    {"norm_w", kHidden, 0.5f, 1.5f},
    {"cos", size_t{kBatch} * kHeadDim / 2, -1, 1},
    {"sin", size_t{kBatch} * kHeadDim / 2, -1, 1},
    {"k_cache", kCache, -2, 2},
    {"v_cache", kCache, -1, 1},
    {"gemv_w", size_t{kGemvOut} * kHidden, -1.0f / 32, 1.0f / 32},
    {"h", kTokens, 0, 0},
    {"hn", kTokens, 0, 0},
    {"q", kTokens, 0, 0},
    {"attn", kTokens, 0, 0},
    {"y", kTokens, 0, 0},
    {"out", kGemvOut, 0, 0},
};

// One argument of a step: the Triton parameter it is (checked against the fixture's .json) and
// its value.
struct StepArg {
  enum Kind { kBuffer, kNull, kU32, kF32 } kind;
  const char *param;
  int buffer;
  uint32_t u;
  float f;
};
StepArg arg_buffer(const char *param, DecodeBuffer b) { return {StepArg::kBuffer, param, b, 0, 0}; }
StepArg arg_u32(const char *param, uint32_t v) { return {StepArg::kU32, param, -1, v, 0}; }
StepArg arg_f32(const char *param, float v) { return {StepArg::kF32, param, -1, 0, v}; }
StepArg arg_null(const char *param) { return {StepArg::kNull, param, -1, 0, 0}; }

struct DecodeStepSpec {
  const char *fixture;  // <fixture>.ptx and <fixture>.json in the --triton directory
  std::vector<StepArg> args;
};

// The step, in order: each kernel reads what an earlier one wrote (the GEMV takes the first row).
// Triton appends two scratch pointers to every kernel's parameters; these kernels use neither.
const std::vector<DecodeStepSpec> &decode_steps() {
  static const std::vector<DecodeStepSpec> steps = [] {
    const StepArg scratch[] = {arg_null("global_scratch"), arg_null("profile_scratch")};
    std::vector<DecodeStepSpec> s = {
        {"residual_add",
         {arg_buffer("x_ptr", kX), arg_buffer("res_ptr", kResidual), arg_buffer("out_ptr", kH),
          arg_u32("n", uint32_t(kTokens))}},
        {"rmsnorm",
         {arg_buffer("x_ptr", kH), arg_buffer("w_ptr", kNormW), arg_buffer("out_ptr", kHn),
          arg_u32("n_cols", kHidden), arg_f32("eps", kEps)}},
        {"rope",
         {arg_buffer("x_ptr", kHn), arg_buffer("cos_ptr", kCos), arg_buffer("sin_ptr", kSin), arg_buffer("out_ptr", kQ),
          arg_u32("n_heads", kHeads), arg_u32("head_dim", kHeadDim)}},
        {"decode_attention",
         {arg_buffer("q_ptr", kQ), arg_buffer("k_ptr", kKCache), arg_buffer("v_ptr", kVCache),
          arg_buffer("out_ptr", kAttn), arg_u32("seq_len", kSeqLen), arg_u32("n_heads", kHeads),
          arg_u32("head_dim", kHeadDim), arg_u32("kv_len", kKvLen),
          arg_f32("scale", 1.0f / std::sqrt(float(kHeadDim)))}},
        {"silu_mul",
         {arg_buffer("gate_ptr", kAttn), arg_buffer("up_ptr", kH), arg_buffer("out_ptr", kY),
          arg_u32("n", uint32_t(kTokens))}},
        {"gemv",
         {arg_buffer("w_ptr", kGemvW), arg_buffer("x_ptr", kY), arg_buffer("out_ptr", kOut),
          arg_u32("n_rows", kGemvOut), arg_u32("n_cols", kHidden)}},
    };
    for (DecodeStepSpec &d : s) d.args.insert(d.args.end(), std::begin(scratch), std::end(scratch));
    return s;
  }();
  return steps;
}

// Each buffer's offset in floats in the one allocation (256-byte aligned: Triton's launcher
// specialised the pointers as 16-byte aligned), and the total.
struct DecodeLayout {
  size_t offset[kDecodeBuffers + 1];
  DecodeLayout() {
    size_t at = 0;
    for (int i = 0; i < kDecodeBuffers; ++i) {
      offset[i] = at;
      at = (at + kDecodeBuffer[i].count + 63) / 64 * 64;
    }
    offset[kDecodeBuffers] = at;
  }
};
const DecodeLayout kLayout;

// The words every method starts from: the inputs, and NaN in every output word (one a kernel
// does not write, or reads before it is written, shows).
std::vector<float> decode_image() {
  std::vector<float> w(kLayout.offset[kDecodeBuffers]);
  uint32_t poison = 0xFFFFFFFFu;
  for (int b = 0; b < kDecodeBuffers; ++b)
    for (size_t i = 0; i < kDecodeBuffer[b].count; ++i) {
      float &v = w[kLayout.offset[b] + i];
      if (b >= kFirstOutput) {
        std::memcpy(&v, &poison, sizeof v);
        continue;
      }
      uint32_t h = uint32_t(i) * 0x9E3779B1u ^ uint32_t(b + 1) * 0x85EBCA77u;
      h ^= h >> 15;
      h *= 0x2C1B3C6Du;
      h ^= h >> 12;
      const DecodeBufferSpec &s = kDecodeBuffer[b];
      v = s.lo + (s.hi - s.lo) * float(h >> 8) / float(1u << 24);
    }
  return w;
}

// What the step computes, in double where it sums (the NumPy references of decode_step.py): the
// outputs of `w` (decode_image's layout) from its inputs.
void decode_reference(std::vector<float> &w) {
  auto at = [&w](DecodeBuffer b) { return w.data() + kLayout.offset[b]; };
  const float *x = at(kX), *res = at(kResidual), *norm_w = at(kNormW), *cos = at(kCos), *sin = at(kSin),
              *k = at(kKCache), *v = at(kVCache), *gemv_w = at(kGemvW);
  float *h = at(kH), *hn = at(kHn), *qr = at(kQ), *attn = at(kAttn), *y = at(kY), *out = at(kOut);
  for (size_t i = 0; i < kTokens; ++i) h[i] = x[i] + res[i];
  for (uint32_t r = 0; r < kBatch; ++r) {
    double sum = 0;
    for (uint32_t c = 0; c < kHidden; ++c) sum += double(h[r * kHidden + c]) * h[r * kHidden + c];
    const double rms = std::sqrt(sum / kHidden + double(kEps));
    for (uint32_t c = 0; c < kHidden; ++c) hn[r * kHidden + c] = float(h[r * kHidden + c] / rms * norm_w[c]);
  }
  // Rotate-half RoPE of each (token, head) row, the token's cos/sin rows holding head_dim / 2.
  const uint32_t half = kHeadDim / 2;
  for (uint32_t r = 0; r < kBatch * kHeads; ++r)
    for (uint32_t i = 0; i < half; ++i) {
      const double x1 = hn[r * kHeadDim + i], x2 = hn[r * kHeadDim + half + i];
      const double c = cos[r / kHeads * half + i], sn = sin[r / kHeads * half + i];
      qr[r * kHeadDim + i] = float(x1 * c - x2 * sn);
      qr[r * kHeadDim + half + i] = float(x2 * c + x1 * sn);
    }
  const double scale = 1.0 / std::sqrt(double(kHeadDim));
  const size_t row = size_t{kHeads} * kHeadDim;
  std::vector<double> score(kSeqLen), acc(kHeadDim);
  for (uint32_t s = 0; s < kBatch; ++s)
    for (uint32_t head = 0; head < kHeads; ++head) {
      const float *q = qr + (s * kHeads + head) * kHeadDim;
      const size_t cache = s * kKvLen * row + head * kHeadDim;
      double top = -INFINITY;
      for (uint32_t l = 0; l < kSeqLen; ++l) {
        double dot = 0;
        for (uint32_t d = 0; d < kHeadDim; ++d) dot += double(q[d]) * k[cache + l * row + d];
        score[l] = dot * scale;
        top = std::max(top, score[l]);
      }
      double denom = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (uint32_t l = 0; l < kSeqLen; ++l) {
        const double p = std::exp(score[l] - top);
        denom += p;
        for (uint32_t d = 0; d < kHeadDim; ++d) acc[d] += p * v[cache + l * row + d];
      }
      for (uint32_t d = 0; d < kHeadDim; ++d) attn[(s * kHeads + head) * kHeadDim + d] = float(acc[d] / denom);
    }
  for (size_t i = 0; i < kTokens; ++i) {
    const double g = attn[i];
    y[i] = float(g / (1.0 + std::exp(-g)) * h[i]);
  }
  for (uint32_t r = 0; r < kGemvOut; ++r) {
    double sum = 0;
    for (uint32_t c = 0; c < kHidden; ++c) sum += double(gemv_w[size_t{r} * kHidden + c]) * y[c];
    out[r] = float(sum);
  }
}

// ---- Fixture files -----------------------------------------------------------------------------

std::string read_text(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) raise_error("%s: cannot open %s: %s", g_where, path.c_str(), std::strerror(errno));
  std::string text;
  char chunk[65536];
  for (size_t got; (got = std::fread(chunk, 1, sizeof chunk, f)) > 0;) text.append(chunk, got);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed || text.empty()) raise_error("%s: cannot read %s", g_where, path.c_str());
  return text;
}

// The items of the array "key": [...] in JSON text (strings unquoted; no nested arrays), or an
// error naming the file and the key.
std::vector<std::string> json_list(const std::string &json, const char *key, const std::string &file) {
  const size_t at = json.find(std::string("\"") + key + "\"");
  const size_t open = at == std::string::npos ? at : json.find('[', at);
  const size_t close = open == std::string::npos ? open : json.find(']', open);
  if (close == std::string::npos) raise_error("%s: %s has no array \"%s\"", g_where, file.c_str(), key);
  std::vector<std::string> items;
  std::string item;
  for (size_t i = open + 1; i <= close; ++i) {
    const char c = json[i];
    if (c == ',' || c == ']') {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else if (c != '"' && !std::isspace((unsigned char)c)) {
      item += c;
    }
  }
  return items;
}

// The string after "key": in JSON text, or an error naming the file and the key.
std::string json_string(const std::string &json, const char *key, const std::string &file) {
  const size_t at = json.find(std::string("\"") + key + "\"");
  const size_t open = at == std::string::npos ? at : json.find('"', json.find(':', at));
  const size_t close = open == std::string::npos ? open : json.find('"', open + 1);
  if (close == std::string::npos) raise_error("%s: %s has no string \"%s\"", g_where, file.c_str(), key);
  return json.substr(open + 1, close - open - 1);
}

// A PTX ISA version "9.4" as 904.
int ptx_version_number(const std::string &v) {
  unsigned major = 0, minor = 0;
  return std::sscanf(v.c_str(), "%u.%u", &major, &minor) == 2 ? int(major * 100 + minor) : -1;
}

// The newest PTX ISA version the driver's JIT compiles, from cudaDriverGetVersion's number (13000:
// CUDA 13.0), as libsk maps nvJitLink's version (src/cuda/ptx_module.cpp, ptx_isa_of_nvjitlink):
// CUDA 12.x compiles PTX ISA 8.x (12.6 stayed at 8.5, 12.8 and 12.9 are 8.7 and 8.8), 13.x 9.x.
std::string driver_ptx_isa(int driver) {
  const int major = driver / 1000, minor = driver % 1000 / 10;
  if (major < 12) return "";
  if (major == 12) {
    static const int isa12[] = {0, 1, 2, 3, 4, 5, 5, 6, 7, 8};
    return "8." + std::to_string(isa12[std::min(minor, 9)]);
  }
  return std::to_string(major - 4) + "." + std::to_string(minor);
}

// The text of the `.version` directive's operand, and where it is in the PTX.
bool find_ptx_version(const std::string &ptx, size_t *begin, size_t *end) {
  for (size_t at = ptx.find(".version"); at != std::string::npos; at = ptx.find(".version", at + 1))
    if (at == 0 || ptx[at - 1] == '\n') {
      *begin = ptx.find_first_not_of(" \t", at + 8);
      *end = *begin == std::string::npos ? *begin : ptx.find_first_of(" \t\r\n", *begin);
      return *end != std::string::npos && *end > *begin;
    }
  return false;
}

// ---- The three methods -------------------------------------------------------------------------

enum TritonMethod { kTStream, kTGraph, kTSuper, kTSuperLinked, kTSuperCap64, kTSuperCap32, kTritonMethods };
const char *const kTritonMethodName[kTritonMethods] = {"stream", "graph", "super", "linked", "cap64", "cap32"};
// The super kernels' scope options, from kTSuper on: the same step linked rather than compiled
// as one program, and under register caps (max-registers).
constexpr int kTritonSupers = kTritonMethods - kTSuper;
const char *const kTritonSuperOptions[kTritonSupers] = {nullptr, "whole-program=0", "max-registers=64",
                                                        "max-registers=32"};

// One kernel of the step: its launch facts from the fixture's .json, its arguments, and the kernel
// twice: from the driver's JIT (stream, graph) and from libsk (super).
struct TritonStep {
  std::string fixture, kernel;
  uint32_t grid = 0, threads = 0, shared = 0;
  std::vector<uint64_t> values;  // an argument per slot, in its first bytes
  std::vector<void *> args;      // args[i] = &values[i]
  cudaLibrary_t library = nullptr;
  cudaKernel_t jit = nullptr;
  sk_module *module = nullptr;
  sk_kernel *fused = nullptr;
};

// Everything one run of the table made, released by the destructor on every path (an error's
// too: a capture it left open is ended, and errors while releasing are not reported again).
struct TritonRun {
  Bench &b;
  std::vector<TritonStep> steps;
  void *memory = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  sk_superkernel *super[kTritonSupers] = {};  // per kTritonSuperOptions
  sk_stream *stream = nullptr;  // libsk's stream over b.stream: the super kernel runs in order there
  cudaEvent_t events[2] = {};
  explicit TritonRun(Bench &bench) : b(bench) {}
  TritonRun(const TritonRun &) = delete;
  TritonRun &operator=(const TritonRun &) = delete;
  ~TritonRun() {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(b.stream, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone) {
      cudaGraph_t open = nullptr;
      if (cudaStreamEndCapture(b.stream, &open) == cudaSuccess && open) cudaGraphDestroy(open);
    }
    if (stream) sk_stream_destroy(stream);  // waits for its launches
    cudaStreamSynchronize(b.stream);
    for (sk_superkernel *k : super)
      if (k) sk_superkernel_destroy(k);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    for (TritonStep &s : steps) {
      if (s.library) cudaLibraryUnload(s.library);
      if (s.module) sk_module_unload(s.module);
    }
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
    if (memory) sk_mem_free(b.dev, memory);
    (void)cudaGetLastError();  // a non-sticky error must not fail the next call
  }
  float *buffer(int i) const { return static_cast<float *>(memory) + kLayout.offset[i]; }
};

// Reads a fixture's .json and .ptx, checks the parameters the bench passes against the .json's,
// and loads the PTX twice: through the CUDA runtime (the driver JIT-compiles it, its `.version`
// lowered to the driver's when newer: *note says so) and into libsk.
void load_triton_step(const Bench &b, const std::string &dir, const DecodeStepSpec &spec, int driver,
                      std::string *note, TritonStep &s) {
  s.fixture = spec.fixture;
  const std::string json_path = dir + "/" + spec.fixture + ".json", ptx_path = dir + "/" + spec.fixture + ".ptx";
  where("Triton decode step, %s: metadata", spec.fixture);
  const std::string json = read_text(json_path);
  s.kernel = json_string(json, "name", json_path);
  const std::vector<std::string> grid = json_list(json, "grid", json_path),
                                 params = json_list(json, "params", json_path);
  const long warps = json_number(json, "num_warps"), shared = json_number(json, "shared");
  if (grid.size() != 1 || std::atol(grid[0].c_str()) < 1)
    raise_error("%s: %s: the grid is not one dimension of at least 1 program", g_where, json_path.c_str());
  if (warps < 1 || warps > 32 || shared < 0)
    raise_error("%s: %s: num_warps %ld or shared %ld out of range", g_where, json_path.c_str(), warps, shared);
  // Above 48 KiB a launch needs an opt-in attribute on each kernel; no decode kernel asks that much.
  if (shared > 48 * 1024)
    raise_error("%s: %s: %ld bytes of dynamic shared memory need an opt-in this benchmark does not make", g_where,
                json_path.c_str(), shared);
  s.grid = uint32_t(std::atol(grid[0].c_str()));
  s.threads = uint32_t(warps) * 32;
  s.shared = uint32_t(shared);
  if (params.size() != spec.args.size())
    raise_error("%s: %s lists %zu parameters, the benchmark passes %zu", g_where, json_path.c_str(), params.size(),
                spec.args.size());
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] != spec.args[i].param)
      raise_error("%s: %s: parameter %zu is '%s', the benchmark passes '%s' there", g_where, json_path.c_str(), i,
                  params[i].c_str(), spec.args[i].param);

  where("Triton decode step, %s: the driver's JIT", spec.fixture);
  std::string ptx = read_text(ptx_path);
  size_t begin = 0, end = 0;
  if (!find_ptx_version(ptx, &begin, &end))
    raise_error("%s: %s has no .version directive", g_where, ptx_path.c_str());
  const std::string version = ptx.substr(begin, end - begin), isa = driver_ptx_isa(driver);
  if (!isa.empty() && ptx_version_number(version) > ptx_version_number(isa)) {
    ptx.replace(begin, end - begin, isa);
    char line[200];
    std::snprintf(line, sizeof line, "PTX .version %s lowered to %s for the JIT of driver %d.%d", version.c_str(),
                  isa.c_str(), driver / 1000, driver % 1000 / 10);
    if (note->find(line) == std::string::npos) *note += (note->empty() ? "" : "; ") + std::string(line);
  }
  CHECK_CUDA(cudaLibraryLoadData(&s.library, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CHECK_CUDA(cudaLibraryGetKernel(&s.jit, s.library, s.kernel.c_str()));

  where("Triton decode step, %s: libsk", spec.fixture);
  CHECK_SK(sk_module_load_file(b.dev, ptx_path.c_str(), &s.module));
  sk_kernel_desc desc;
  std::memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.threads = s.threads;
  desc.dynamic_shared = s.shared;
  CHECK_SK(sk_module_get_kernel_desc(s.module, s.kernel.c_str(), &desc, &s.fused));
}

// The arguments' slots, once the buffers exist.
void bind_args(TritonRun &t, TritonStep &s, const DecodeStepSpec &spec) {
  s.values.assign(spec.args.size(), 0);
  s.args.resize(spec.args.size());
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const StepArg &a = spec.args[i];
    void *slot = &s.values[i];
    if (a.kind == StepArg::kBuffer) {
      float *p = t.buffer(a.buffer);
      std::memcpy(slot, &p, sizeof p);
    } else if (a.kind == StepArg::kU32) {
      std::memcpy(slot, &a.u, sizeof a.u);
    } else if (a.kind == StepArg::kF32) {
      std::memcpy(slot, &a.f, sizeof a.f);
    }  // kNull: the slot's zeros, a NULL pointer
    s.args[i] = slot;
  }
}

// One decode step as launches of the JIT-compiled kernels on the bench's stream.
void launch_triton_step(TritonRun &t) {
  for (TritonStep &s : t.steps)
    CHECK_CUDA(
        cudaLaunchKernel((const void *)s.jit, dim3(s.grid), dim3(s.threads), s.args.data(), s.shared, t.b.stream));
}

// Queues `count` decode steps of method m.
void queue_triton(TritonRun &t, int m, int count) {
  for (int i = 0; i < count; ++i) {
    if (m == kTStream)
      launch_triton_step(t);
    else if (m == kTGraph)
      CHECK_CUDA(cudaGraphLaunch(t.exec, t.b.stream));
    else
      CHECK_SK(sk_launch(t.super[m - kTSuper], t.stream));
  }
}

// Waits for what was queued: through libsk for the super kernel first (its deadline turns a hang
// into an error, and a failure inside it is reported there).
void wait_triton(TritonRun &t, int m) {
  if (m >= kTSuper) CHECK_SK(sk_stream_synchronize(t.stream));
  CHECK_CUDA(cudaStreamSynchronize(t.b.stream));
}

// GPU us per step: cudaEvents around kTritonReplays steps queued back to back.
double sample_triton(TritonRun &t, int m) {
  CHECK_CUDA(cudaEventRecord(t.events[0], t.b.stream));
  queue_triton(t, m, kTritonReplays);
  CHECK_CUDA(cudaEventRecord(t.events[1], t.b.stream));
  wait_triton(t, m);
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, t.events[0], t.events[1]));
  return ms * 1000.0 / kTritonReplays;
}

// One step of method m from the initial words; the whole allocation's words after it.
std::vector<float> run_triton_once(TritonRun &t, int m, const std::vector<float> &image) {
  CHECK_CUDA(cudaStreamSynchronize(t.b.stream));  // sk_memcpy is not ordered with the stream
  CHECK_SK(sk_memcpy(t.b.dev, t.memory, image.data(), image.size() * sizeof(float)));
  queue_triton(t, m, 1);
  wait_triton(t, m);
  std::vector<float> words(image.size());
  CHECK_SK(sk_memcpy(t.b.dev, words.data(), t.memory, words.size() * sizeof(float)));
  return words;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// "" when every output word of `got` equals `want`'s bit for bit; else the first differing word
// and how many differ.
std::string compare_bits(const std::vector<float> &got, const std::vector<float> &want, const char *want_name) {
  size_t differ = 0, total = 0;
  char first[240] = "";
  for (int b = kFirstOutput; b < kDecodeBuffers; ++b)
    for (size_t i = 0; i < kDecodeBuffer[b].count; ++i, ++total) {
      const size_t at = kLayout.offset[b] + i;
      if (bits(got[at]) == bits(want[at]) || differ++) continue;
      std::snprintf(first, sizeof first, "%s[%zu] is %.9g (0x%08x), %s's %.9g (0x%08x)", kDecodeBuffer[b].name, i,
                    got[at], bits(got[at]), want_name, want[at], bits(want[at]));
    }
  if (!differ) return "";
  return std::string(first) + "; " + std::to_string(differ) + " of " + std::to_string(total) + " words differ";
}

// The largest |gpu - cpu| / (|cpu| + the buffer's rms) over the outputs (infinity for a NaN), and
// where it is.
double reference_error(const std::vector<float> &got, const std::vector<float> &cpu, std::string *where_worst) {
  double worst = 0;
  for (int b = kFirstOutput; b < kDecodeBuffers; ++b) {
    const float *c = cpu.data() + kLayout.offset[b], *g = got.data() + kLayout.offset[b];
    double sum = 0;
    for (size_t i = 0; i < kDecodeBuffer[b].count; ++i) sum += double(c[i]) * c[i];
    const double rms = std::sqrt(sum / double(kDecodeBuffer[b].count));
    for (size_t i = 0; i < kDecodeBuffer[b].count; ++i) {
      double e = std::fabs(double(g[i]) - c[i]) / (std::fabs(double(c[i])) + rms);
      if (!(e == e) || std::isinf(e)) e = INFINITY;
      if (e > worst || (worst == 0 && where_worst->empty())) {
        worst = e;
        char at[200];
        std::snprintf(at, sizeof at, "%s[%zu]: %.9g, CPU %.9g", kDecodeBuffer[b].name, i, g[i], c[i]);
        *where_worst = at;
      }
    }
  }
  return worst;
}

// Links the decode step into t.super[i], under kTritonSuperOptions[i]; the ms sk_finalize took.
double finalize_triton(TritonRun &t, int i) {
  where("Triton decode step, %s: finalize", kTritonMethodName[kTSuper + i]);
  sk_scope *scope = nullptr;
  CHECK_SK(sk_scope_begin(t.b.dev, "triton_decode_step", kTritonSuperOptions[i], &scope));
  for (TritonStep &s : t.steps)
    if (sk_add_kernel(scope, s.fused, s.grid, s.args.data(), nullptr) != SK_OK) {
      const std::string error = sk_last_error();
      sk_scope_abort(scope);
      raise_error("%s: sk_add_kernel(%s) failed: %s", g_where, s.kernel.c_str(), error.c_str());
    }
  const double f0 = now_us();
  CHECK_SK(sk_finalize(scope, &t.super[i]));
  return (now_us() - f0) / 1000;
}

// The Triton decode step, six ways (the super kernel under four options), as one table
// (docs/cuda.md, "The benchmark").
void bench_triton(Bench &b, const char *dir, int driver) {
  if (!dir) {
    std::printf("\nTriton decode step: skipped (no --triton DIR, the directory of tests/kernels/triton/ptx)\n");
    std::fflush(stdout);
    return;
  }
  const std::vector<DecodeStepSpec> &specs = decode_steps();
  std::printf("\nTriton decode step: ");
  for (size_t i = 0; i < specs.size(); ++i) std::printf("%s%s", i ? ", " : "", specs[i].fixture);
  std::printf(" (Triton's PTX from %s)\n", dir);
  std::fflush(stdout);
  TritonRun t(b);
  std::string note;
  double finalize_ms = 0;
  const std::vector<float> image = decode_image();
  try {
    t.steps.resize(specs.size());  // filled in place: what a failed load made is released
    for (size_t i = 0; i < specs.size(); ++i) load_triton_step(b, dir, specs[i], driver, &note, t.steps[i]);
    where("Triton decode step: buffers");
    CHECK_SK(sk_mem_alloc(b.dev, image.size() * sizeof(float), &t.memory));
    for (size_t i = 0; i < specs.size(); ++i) bind_args(t, t.steps[i], specs[i]);
    CHECK_CUDA(cudaEventCreate(&t.events[0]));
    CHECK_CUDA(cudaEventCreate(&t.events[1]));
    CHECK_SK(sk_stream_create_cuda(b.dev, b.stream, &t.stream));
    CHECK_SK(sk_memcpy(b.dev, t.memory, image.data(), image.size() * sizeof(float)));
    // Once before the capture, so that lazily loaded kernels are loaded outside it.
    where("Triton decode step, stream: first launches");
    launch_triton_step(t);
    CHECK_CUDA(cudaStreamSynchronize(b.stream));
    where("Triton decode step, graph: capture");
    CHECK_CUDA(cudaStreamBeginCapture(b.stream, cudaStreamCaptureModeThreadLocal));
    launch_triton_step(t);
    CHECK_CUDA(cudaStreamEndCapture(b.stream, &t.graph));
    CHECK_CUDA(cudaGraphInstantiate(&t.exec, t.graph, 0));
    finalize_ms = finalize_triton(t, 0);
  } catch (const BenchError &e) {
    std::printf("ERROR: %s\n", e.what());
    std::fflush(stdout);
    b.failures.push_back(std::string("error: Triton decode step: ") + e.what());
    return;
  }
  // A method that fails is left out from then on; its row says why.
  std::string error[kTritonMethods];
  auto attempt = [&](int m, const char *what, auto &&body) {
    if (!error[m].empty()) return;
    where("Triton decode step, %s: %s", kTritonMethodName[m], what);
    try {
      body();
    } catch (const BenchError &e) {
      error[m] = e.what();
    }
  };
  for (int m = kTSuper + 1; m < kTritonMethods; ++m)  // a cap an instruction cannot take fails its row only
    attempt(m, "finalize", [&] { finalize_triton(t, m - kTSuper); });
  for (const TritonStep &s : t.steps)
    std::printf("  %-17s %-24s %3u blocks x %u threads, %u bytes of dynamic shared memory\n", s.fixture.c_str(),
                s.kernel.c_str(), s.grid, s.threads, s.shared);
  std::printf("stream: each kernel JIT-compiled by the driver from its PTX%s%s; super: sk_finalize %.1f ms\n",
              note.empty() ? "" : ", ", note.c_str(), finalize_ms);
  for (int m = kTSuper; m < kTritonMethods; ++m)
    if (t.super[m - kTSuper]) {
      const std::string json = explain(t.super[m - kTSuper]);
      const bool whole = json.find("\"compiled\":\"whole program\"") != std::string::npos;
      std::printf("%s: scope options \"%s\", %s, entry %ld registers, %ld bytes of call stack, %ld blocks/SM\n",
                  kTritonMethodName[m], kTritonSuperOptions[m - kTSuper] ? kTritonSuperOptions[m - kTSuper] : "",
                  whole ? "one program" : "linked", json_number(json, "registers"), json_number(json, "stack_bytes"),
                  json_number(json, "blocks_per_sm"));
    }
  std::printf("GPU us per step (cudaEvents around %d steps), median of %d rounds after a %.1f s warm-up\n",
              kTritonReplays, b.rounds, kTritonWarmupUs / 1e6);
  std::printf("%-6s | %9s %12s | %s\n", "method", "us/step", "method/super", "check (one step from the same words)");
  std::fflush(stdout);
  auto any_left = [&] {
    for (const std::string &e : error)
      if (e.empty()) return true;
    return false;
  };
  const double w0 = now_us();
  while (any_left() && now_us() - w0 < kTritonWarmupUs)
    for (int m = 0; m < kTritonMethods; ++m)
      attempt(m, "warm-up", [&] {
        queue_triton(t, m, 20);
        wait_triton(t, m);
      });
  std::vector<double> per_step[kTritonMethods];
  for (int r = 0; r < b.rounds; ++r)
    for (int m = 0; m < kTritonMethods; ++m)
      attempt(m, "timed runs", [&] { per_step[m].push_back(sample_triton(t, m)); });

  // The check: one step of each from the same words; stream's against the CPU reference, the
  // others' against stream's, bit for bit (against the CPU reference when stream failed).
  std::vector<float> words[kTritonMethods];
  for (int m = 0; m < kTritonMethods; ++m) attempt(m, "check run", [&] { words[m] = run_triton_once(t, m, image); });
  std::vector<float> cpu = image;
  decode_reference(cpu);
  std::string verdict[kTritonMethods];
  for (int m = 0; m < kTritonMethods; ++m) {
    if (!error[m].empty()) continue;
    ++b.checks;
    std::string worst_at;
    const double worst = reference_error(words[m], cpu, &worst_at);
    char cpu_line[320];
    std::snprintf(cpu_line, sizeof cpu_line, "CPU reference: max error %.2g (bound %.0e) at %s", worst,
                  kTritonTolerance, worst_at.c_str());
    bool bad = false;
    if (m == kTStream || !error[kTStream].empty()) {
      verdict[m] = cpu_line;
      bad = !(worst <= kTritonTolerance);
    } else {
      const std::string diff = compare_bits(words[m], words[kTStream], "stream");
      bad = !diff.empty();
      verdict[m] = bad ? "differs from stream: " + diff + "; " + cpu_line : "= stream, bit for bit";
    }
    if (bad) {
      std::fprintf(stderr, "bench_cuda: MISMATCH: Triton decode step, %s: %s\n", kTritonMethodName[m],
                   verdict[m].c_str());
      b.failures.push_back(std::string("Triton decode step, ") + kTritonMethodName[m] + ": " + verdict[m]);
      verdict[m] = "MISMATCH: " + verdict[m];
    }
  }
  const double super_t = per_step[kTSuper].size() == size_t(b.rounds) ? median(per_step[kTSuper]) : 0;
  for (int m = 0; m < kTritonMethods; ++m) {
    if (!error[m].empty()) {
      std::printf("%-6s | ERROR: %s\n", kTritonMethodName[m], error[m].c_str());
      b.failures.push_back(std::string("error: Triton decode step, ") + kTritonMethodName[m] + ": " + error[m]);
      continue;
    }
    const double us = median(per_step[m]);
    char ratio[16] = "-";
    if (super_t > 0) std::snprintf(ratio, sizeof ratio, "%.2f", us / super_t);
    std::printf("%-6s | %9.3f %12s | %s\n", kTritonMethodName[m], us, ratio, verdict[m].c_str());
  }
  std::fflush(stdout);
}

std::vector<uint32_t> parse_blocks(const char *list) {
  std::vector<uint32_t> out;
  for (const char *p = list; *p;) {
    char *end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1) return {};
    out.push_back((uint32_t)v);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return {};
  }
  return out;
}

}  // namespace

int bench_main(int argc, char **argv) {
  const char *usage =
      "usage: bench_cuda <bench_chain.cubin> [--rounds R] [--steps S] [--blocks B1,B2,...] [--triton DIR]\n";
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  Bench b;
  const char *cubin = argv[1], *triton = nullptr;
  std::vector<uint32_t> blocks;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_cuda: %s needs a value\n%s", argv[i], usage);
      return 2;
    }
    if (!std::strcmp(argv[i], "--rounds")) {
      b.rounds = std::max(1, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "--steps")) {
      b.steps_per_sample = (uint32_t)std::max(1, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "--triton")) {
      triton = argv[i + 1];
    } else if (!std::strcmp(argv[i], "--blocks")) {
      blocks = parse_blocks(argv[i + 1]);
      if (blocks.empty()) {
        std::fprintf(stderr, "bench_cuda: --blocks takes counts like 1,8,32, not '%s'\n", argv[i + 1]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "bench_cuda: unknown option %s\n%s", argv[i], usage);
      return 2;
    }
  }

  const std::string spec = "cuda:0,timeout_ms=" + std::to_string(kDeadlineMs);
  CHECK_SK(sk_device_open(spec.c_str(), &b.dev));
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int driver = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  b.pdl = prop.major >= 9;
  sk_module *mod = nullptr;
  where("loading %s", cubin);
  CHECK_SK(sk_module_load_file(b.dev, cubin, &mod));
  CHECK_SK(sk_module_get_kernel(mod, "bench_chain_step", &b.step));
  CHECK_SK(sk_module_get_kernel(mod, "bench_chain_local_step", &b.local));
  CHECK_SK(sk_module_get_kernel(mod, "bench_chain_join", &b.join));
  // The empty step, from bench_empty.cubin beside bench_chain.cubin. Without it only the
  // super-empty column fails (its rows say why).
  const std::string cubin_path = cubin, slash = cubin_path.substr(0, cubin_path.find_last_of('/') + 1),
                    empty_path = slash + "bench_empty.cubin";
  sk_module *empty_mod = nullptr;
  if (sk_module_load_file(b.dev, empty_path.c_str(), &empty_mod) != SK_OK ||
      sk_module_get_kernel(empty_mod, "bench_empty_step", &b.empty) != SK_OK)
    b.empty_error = "no empty step: " + std::string(sk_last_error());
  CHECK_CUDA(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b.side, cudaStreamNonBlocking));
  CHECK_SK(sk_stream_create_cuda(b.dev, b.stream, &b.sks));
  for (cudaEvent_t &e : b.timing) CHECK_CUDA(cudaEventCreate(&e));
  CHECK_CUDA(cudaEventCreateWithFlags(&b.fork, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&b.join_event, cudaEventDisableTiming));

  // Block counts: 1, 8, 32 and one per SM, clipped to what the grid-sync kernel can have
  // co-resident (its cooperative launch needs them all at once).
  const uint32_t sms = (uint32_t)prop.multiProcessorCount;
  b.sms = sms;
  int per_sm = 0, per_sm_branch = 0;
  where("setup");
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, chain_kernel_grid_sync, (int)kThreads, 0));
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_branch, two_branch_grid_sync, (int)kThreads, 0));
  const uint32_t co_resident = (uint32_t)per_sm * sms;
  b.co_resident_branch = (uint32_t)per_sm_branch * sms;
  if (co_resident == 0) {
    std::fprintf(stderr, "bench_cuda: the grid-sync kernel cannot run a block of %u threads here\n", kThreads);
    return 1;
  }
  if (blocks.empty()) blocks = {1, 8, 32, sms};
  for (uint32_t &x : blocks) x = std::min(x, co_resident);
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());

  std::printf("bench_cuda: %s (sm_%d%d, %u SMs), driver %d.%d, libsk %s\n", prop.name, prop.major, prop.minor, sms,
              driver / 1000, driver % 1000 / 10, sk_version_string());
  std::printf(
      "Chains of K steps, each a kernel of B blocks x %u threads, every method from the same words, checked\n"
      "against a CPU reference after its runs. GPU time from cudaEvents, after %.1f s of busy SMs: 'step' rows,\n"
      "us per step of R chains queued back to back (R x K ~ %u); 'chain' rows, us of one chain alone (its\n"
      "latency). Median of %d rounds in which the methods take turns. A ratio below 1: super costs less.\n",
      kThreads, kWarmupUs / 1e6, b.steps_per_sample, b.rounds);
  std::printf("  stream       one launch per step, on one stream\n");
  std::printf("  graph        a CUDA Graph of those launches, one cudaGraphLaunch per chain\n");
  std::printf("  graph-pdl    a CUDA Graph of launches with programmatic dependent launch (pdl edges:\n");
  std::printf("               programmatic edges / all edges of the captured graph)%s\n",
              b.pdl ? "" : ": not run, needs sm_90");
  std::printf("  super        a libsk super kernel, one sk_launch per chain (finalize: sk_finalize)\n");
  std::printf("  grid-sync    one cooperative kernel per chain, grid.sync() between two steps: the floor\n");
  std::printf("  super-empty  a super kernel of an empty sub-kernel: libsk's step loop and barriers alone\n");
  std::printf("  sync-empty   grid-sync with nothing between the grid.sync()s (empty/floor: super-empty over it)\n");
  std::printf("  super-bl     the block-local chain's super kernel with SK_KERNEL_FLAG_BLOCK_LOCAL edges\n");
  std::printf("  block-sync   one kernel per block-local chain, __syncthreads() between two steps: its floor\n");
  std::printf("  control      one kernel running the chain with no grid barrier: 'caught' when the check finds\n");
  std::printf("               it wrong\n");
  std::printf("block counts clipped to %u, the blocks of the grid-sync kernel that fit at once (%d per SM)\n",
              co_resident, per_sm);
  if (!b.empty_error.empty()) std::printf("%s: the super-empty column fails\n", b.empty_error.c_str());
  std::fflush(stdout);

  // A block count whose buffers cannot even be made is one failed configuration too.
  for (size_t i = 0; i <= blocks.size(); ++i) {
    try {
      if (i < blocks.size())
        bench_blocks(b, blocks[i], i == 0);
      else
        bench_repeat(b, blocks.back());
    } catch (const BenchError &e) {
      b.failures.push_back(std::string("error: ") + e.what());
    }
  }
  bench_triton(b, triton, driver);

  where("teardown");
  sk_stream_destroy(b.sks);  // waits for its launches
  for (cudaEvent_t e : {b.timing[0], b.timing[1], b.fork, b.join_event}) CHECK_CUDA(cudaEventDestroy(e));
  CHECK_CUDA(cudaStreamDestroy(b.side));
  CHECK_CUDA(cudaStreamDestroy(b.stream));
  if (empty_mod) sk_module_unload(empty_mod);
  sk_module_unload(mod);
  sk_device_close(b.dev);
  if (!b.failures.empty()) {
    std::printf("\ncheck: FAILED: %zu configurations failed or differ from the CPU reference (of %d checks):\n",
                b.failures.size(), b.checks);
    for (const std::string &f : b.failures) std::printf("  %s\n", f.c_str());
    return 1;
  }
  std::printf("\ncheck: every method's words equal the CPU reference's (%d checks)\n", b.checks);
  return 0;
}

int main(int argc, char **argv) {
  try {
    return bench_main(argc, argv);
  } catch (const BenchError &) {
    return 1;  // the setup failed; raise_error said where
  }
}
