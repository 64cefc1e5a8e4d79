// A kernel whose threads may return while others of their block go on to a block-wide barrier
// (`if (i >= n) return; ... __syncthreads();`). Launched alone, a returned thread exits and the
// barrier stops waiting for it; fused, it returns into the super kernel, and the others would
// wait at barrier 0 for it forever. Such a kernel is rewritten so that a returned thread keeps
// step with barrier 0 until the block's last thread has returned (__sk_leave, in the super
// kernel's library): each barrier 0 it and its helpers reach runs in two phases, a sync and a
// counting reduction to which a returned thread adds nothing, and between the two every
// returned thread reads how many have returned. Only kernels where a return may come first on a
// branch the block's threads can take apart are rewritten; the others keep their barriers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda/ptx_statement.hpp"

namespace sk::cuda {

// The barrier a `bar` / `barrier` statement's tokens (opcode first) name, as written ("" for
// none: bar.warp.sync, barrier.cluster): the first operand, the second of bar.red's.
std::string_view barrier_named(const std::vector<std::string_view> &toks);

// The barrier id token of a `bar` / `barrier` statement that waits for every thread of the block
// (sync or red without a thread count: `bar.sync 0`, `__syncthreads_count`'s bar.red), "" for
// any other statement. Where its kernel runs fewer threads than the super kernel's block, the
// count goes right after it (ptx_prune.hpp).
std::string_view barrier_of_block(const std::vector<std::string_view> &toks);

// How a statement uses the block's barrier 0, which `__syncthreads()` (Sync) and
// `__syncthreads_count/and/or` (Reduce) compile to, waiting for every thread of the block.
// Counted: barrier 0 (or one in a register) for a thread count, which threads that returned do
// not hold up (`bar.sync 0, 128`, `bar.arrive`: a warpgroup's own barrier). Unknown: one the
// rewrite cannot pair and that may wait for every thread (guarded, or an id in a register).
enum class BarrierZero { None, Sync, Reduce, Counted, Unknown };
BarrierZero barrier_zero(const PtxStatement &s);

// A function body as the analysis reads it: its statements; its labels, each with the index of
// the statement it stands before; the `{ }` scope each statement stands in (0: the body's), and
// each scope's enclosing one, for the registers an inner scope declares.
struct PtxBody {
  const std::vector<PtxStatement> *statements = nullptr;
  const std::vector<std::pair<size_t, std::string_view>> *labels = nullptr;
  const std::vector<uint32_t> *scope_of = nullptr;
  const std::vector<uint32_t> *scope_parent = nullptr;
};

// Whether a thread may return on a branch its block's threads can take apart while another goes
// on to a barrier before the two sides meet again. A predicate may differ between a block's
// threads when it derives, along the flow, from the thread index, a shuffle, a vote, an atomic,
// a call, a thread's own or a volatile load, or a load at an address that differs, or from a
// value either side of such a branch wrote, past where they meet. `barrier[i]`: statement i is
// one (a barrier of the block, or a call of a function that reaches one). `uniform_params`: the
// kernel's parameters, whose loads read the same in every thread.
bool returns_before_barrier(const PtxBody &body, const std::vector<std::string> &uniform_params,
                            const std::vector<bool> &barrier);

// The two-phase text that replaces a Sync or Reduce statement of barrier 0. Its barriers count
// the threads the kernel runs, which it reads with thread_count_read().
std::string two_phase_barrier(const PtxStatement &s);

// Where the two-phase barriers and the returned threads' wait read the kernel's thread count:
// the block's, or a narrower kernel's once its `%ntid.x` reads become that count (ptx_prune.hpp).
constexpr char kThreadCountRegister[] = "%sk_nt";
std::string thread_count_read();  // "mov.u32 %sk_nt, %ntid.x;"

// The label a rewritten kernel's returns branch to, and what stands there: the wait of a returned
// thread (for the kernel's thread count), then the return.
constexpr char kLeaveFunction[] = "__sk_leave";
constexpr char kLeaveLabel[] = "$__sk_left";
std::string leave_block();
std::string leave_declaration();

}  // namespace sk::cuda
