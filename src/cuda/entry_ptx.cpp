#include "cuda/entry_ptx.hpp"

#include <cstdio>
#include <sstream>

namespace sk::cuda {
namespace {

// __sk_s_state bits (per block, in shared memory; the block's thread 0 owns them).
constexpr unsigned kWaited = 1, kArrived = 2, kLast = 4, kMayArrive = 8;
// __sk_begin flag bits.
constexpr unsigned kFirst = 1, kLastBlock = 2, kWaitNow = 4, kGmFlush = 8, kNoDeps = 16, kArriveInKernel = 32;

bool wide(ArgType t) { return t == ArgType::Ptr || t == ArgType::I64 || t == ArgType::U64 || t == ArgType::F64; }

// The shared state, the wait loop, the step prologue/epilogue and the device API. `steps`
// and the deadline are baked in: the library is generated per super kernel.
void emit_library(std::ostringstream &o, const EntrySpec &spec) {
  const size_t S = spec.steps.size();
  const unsigned long long syncall_base = 8ull * S, flags_base = 16ull * S;
  o << R"(
// Per-block state: written by thread 0 between barriers, read by the device API.
.shared .align 8 .u64 __sk_s_sync;
.shared .align 8 .u64 __sk_s_epoch;
.shared .align 8 .u64 __sk_s_report;
.shared .align 4 .u32 __sk_s_step;
.shared .align 4 .u32 __sk_s_block;
.shared .align 4 .u32 __sk_s_blocks;
.shared .align 4 .u32 __sk_s_cores;
.shared .align 4 .u32 __sk_s_state;
.shared .align 4 .u32 __sk_s_gm_flush;
.shared .align 8 .u64 __sk_s_flag_target[16];

// Thread 0 of a block waits until *addr >= target (acquire), spinning with nanosleep; past
// the deadline it records a hang report and raises the abort flag, which ends every wait.
.func __sk_wait(.param .b64 w_addr, .param .b64 w_target, .param .b32 w_point)
{
  .reg .pred %p<4>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [w_addr];
  ld.param.u64 %rd2, [w_target];
  ld.acquire.gpu.global.u64 %rd3, [%rd1];
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra $W_done;
  ld.shared.u64 %rd4, [__sk_s_report];
  mov.u64 %rd5, %globaltimer;
$W_spin:
  nanosleep.u32 32;
  ld.acquire.gpu.global.u64 %rd3, [%rd1];
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra $W_done;
  ld.relaxed.gpu.global.u64 %rd6, [%rd4];
  setp.ne.u64 %p2, %rd6, 0;
  @%p2 bra $W_done;
  mov.u64 %rd7, %globaltimer;
  sub.u64 %rd7, %rd7, %rd5;
  setp.lt.u64 %p3, %rd7, )" << spec.timeout_ns << R"(;
  @%p3 bra $W_spin;
  mov.u64 %rd8, 0;
  mov.u64 %rd9, 1;
  atom.relaxed.gpu.global.cas.b64 %rd10, [%rd4], %rd8, %rd9;
  setp.ne.u64 %p2, %rd10, 0;
  @%p2 bra $W_done;
  mov.u64 %rd11, )" << spec.id << R"(;
  st.relaxed.gpu.global.u64 [%rd4+8], %rd11;
  ld.shared.u32 %r1, [__sk_s_step];
  cvt.u64.u32 %rd11, %r1;
  st.relaxed.gpu.global.u64 [%rd4+16], %rd11;
  mov.u32 %r2, %ctaid.x;
  cvt.u64.u32 %rd11, %r2;
  st.relaxed.gpu.global.u64 [%rd4+24], %rd11;
  ld.param.u32 %r3, [w_point];
  cvt.u64.u32 %rd11, %r3;
  st.relaxed.gpu.global.u64 [%rd4+32], %rd11;
  st.relaxed.gpu.global.u64 [%rd4+40], %rd3;
  st.relaxed.gpu.global.u64 [%rd4+48], %rd2;
$W_done:
  fence.acq_rel.gpu;
  ret;
}

// Thread 0: waits for the steps the current one depends on (epoch * their cores arrivals).
.func __sk_wait_previous(.param .b32 q_point)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<10>;
  ld.shared.u32 %r1, [__sk_s_step];
  mul.wide.u32 %rd1, %r1, 4;
  mov.u64 %rd2, __sk_dep_first;
  add.u64 %rd2, %rd2, %rd1;
  ld.const.u32 %r2, [%rd2];
  ld.const.u32 %r3, [%rd2+4];
  ld.shared.u64 %rd3, [__sk_s_sync];
  ld.shared.u64 %rd4, [__sk_s_epoch];
  ld.param.u32 %r4, [q_point];
$Q_loop:
  setp.ge.u32 %p1, %r2, %r3;
  @%p1 bra $Q_done;
  mul.wide.u32 %rd5, %r2, 8;
  mov.u64 %rd6, __sk_dep_list;
  add.u64 %rd6, %rd6, %rd5;
  ld.const.u32 %r5, [%rd6];
  ld.const.u32 %r6, [%rd6+4];
  mul.wide.u32 %rd7, %r5, 8;
  add.u64 %rd7, %rd7, %rd3;
  cvt.u64.u32 %rd8, %r6;
  mul.lo.u64 %rd8, %rd8, %rd4;
  {
    .param .b64 a0;
    .param .b64 a1;
    .param .b32 a2;
    st.param.b64 [a0], %rd7;
    st.param.b64 [a1], %rd8;
    st.param.b32 [a2], %r4;
    call __sk_wait, (a0, a1, a2);
  }
  add.u32 %r2, %r2, 1;
  bra $Q_loop;
$Q_done:
  ld.shared.u32 %r7, [__sk_s_state];
  or.b32 %r7, %r7, )" << kWaited << R"(;
  st.shared.u32 [__sk_s_state], %r7;
  ret;
}

// Thread 0: one arrival of this block at the current step (release).
.func __sk_arrive()
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.shared.u32 %r1, [__sk_s_step];
  mul.wide.u32 %rd1, %r1, 8;
  ld.shared.u64 %rd2, [__sk_s_sync];
  add.u64 %rd1, %rd1, %rd2;
  fence.acq_rel.gpu;
  red.release.gpu.global.add.u64 [%rd1], 1;
  ld.shared.u32 %r2, [__sk_s_state];
  or.b32 %r2, %r2, )" << kArrived << R"(;
  st.shared.u32 [__sk_s_state], %r2;
  ret;
}

// Start of one block of a step: the block's place, and the wait for the previous step.
.func __sk_begin(.param .b32 b_step, .param .b32 b_block, .param .b32 b_blocks,
                 .param .b32 b_cores, .param .b32 b_flags)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $B_sync;
  ld.param.u32 %r2, [b_step];
  st.shared.u32 [__sk_s_step], %r2;
  ld.param.u32 %r3, [b_block];
  st.shared.u32 [__sk_s_block], %r3;
  ld.param.u32 %r4, [b_blocks];
  st.shared.u32 [__sk_s_blocks], %r4;
  ld.param.u32 %r5, [b_cores];
  st.shared.u32 [__sk_s_cores], %r5;
  ld.param.u32 %r7, [b_flags];
  and.b32 %r8, %r7, )" << kGmFlush << R"(;
  st.shared.u32 [__sk_s_gm_flush], %r8;
  // First block of the step on this core: fresh state (waited already if the step depends
  // on nothing); later blocks keep waited/arrived.
  ld.shared.u32 %r9, [__sk_s_state];
  and.b32 %r9, %r9, )" << (kWaited | kArrived) << R"(;
  and.b32 %r10, %r7, )" << kFirst << R"(;
  setp.ne.u32 %p2, %r10, 0;
  and.b32 %r6, %r7, )" << kNoDeps << R"(;
  setp.ne.u32 %p3, %r6, 0;
  selp.u32 %r11, )" << kWaited << R"(, 0, %p3;
  @%p2 mov.u32 %r9, %r11;
  and.b32 %r10, %r7, )" << kLastBlock << R"(;
  setp.ne.u32 %p2, %r10, 0;
  selp.u32 %r11, )" << kLast << R"(, 0, %p2;
  or.b32 %r9, %r9, %r11;
  // sk_set_next_task_start arrives only where the plan put the arrival (early-start=1).
  and.b32 %r10, %r7, )" << kArriveInKernel << R"(;
  setp.ne.u32 %p2, %r10, 0;
  selp.u32 %r11, )" << kMayArrive << R"(, 0, %p2;
  or.b32 %r9, %r9, %r11;
  st.shared.u32 [__sk_s_state], %r9;
  and.b32 %r10, %r7, )" << kWaitNow << R"(;
  setp.eq.u32 %p2, %r10, 0;
  @%p2 bra $B_sync;
  and.b32 %r10, %r9, )" << kWaited << R"(;
  setp.ne.u32 %p2, %r10, 0;
  @%p2 bra $B_sync;
  {
    .param .b32 q0;
    st.param.b32 [q0], )" << (unsigned)SyncPoint::TaskStart << R"(;
    call __sk_wait_previous, (q0);
  }
$B_sync:
  bar.sync 0;
  ret;
}

// End of a step on this core: wait (if the kernel never did) and arrive (if it never did).
.func __sk_end()
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $E_done;
  ld.shared.u32 %r2, [__sk_s_state];
  and.b32 %r3, %r2, )" << kWaited << R"(;
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bra $E_arrive;
  {
    .param .b32 q0;
    st.param.b32 [q0], )" << (unsigned)SyncPoint::TaskEnd << R"(;
    call __sk_wait_previous, (q0);
  }
$E_arrive:
  ld.shared.u32 %r2, [__sk_s_state];
  and.b32 %r3, %r2, )" << kArrived << R"(;
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bra $E_done;
  call __sk_arrive, ();
$E_done:
  ret;
}

// ---- sk_kernel.h's device API -------------------------------------------------------------

.visible .func (.param .b32 r) sk_block_idx()
{
  .reg .b32 %r<2>;
  ld.shared.u32 %r1, [__sk_s_block];
  st.param.b32 [r], %r1;
  ret;
}

.visible .func (.param .b32 r) sk_block_num()
{
  .reg .b32 %r<2>;
  ld.shared.u32 %r1, [__sk_s_blocks];
  st.param.b32 [r], %r1;
  ret;
}

// CUDA devices have one core type: every block is a vector core of a one-core group.
.visible .func (.param .b32 r) sk_core_type()
{
  st.param.b32 [r], 0;
  ret;
}

.visible .func (.param .b32 r) sk_sub_block_idx()
{
  st.param.b32 [r], 0;
  ret;
}

.visible .func (.param .b32 r) sk_sub_block_num()
{
  st.param.b32 [r], 1;
  ret;
}

// Barrier over the sub-kernel's own blocks: a block that reads `old` at its arrival waits
// for the next multiple of the sub-kernel's cores.
.visible .func sk_sync_all()
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<10>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $S_done;
  ld.shared.u32 %r2, [__sk_s_step];
  mul.wide.u32 %rd1, %r2, 8;
  ld.shared.u64 %rd2, [__sk_s_sync];
  add.u64 %rd1, %rd1, %rd2;
  add.u64 %rd1, %rd1, )" << syncall_base << R"(;
  fence.acq_rel.gpu;
  atom.acq_rel.gpu.global.add.u64 %rd3, [%rd1], 1;
  ld.shared.u32 %r3, [__sk_s_cores];
  cvt.u64.u32 %rd4, %r3;
  div.u64 %rd5, %rd3, %rd4;
  add.u64 %rd5, %rd5, 1;
  mul.lo.u64 %rd5, %rd5, %rd4;
  {
    .param .b64 a0;
    .param .b64 a1;
    .param .b32 a2;
    st.param.b64 [a0], %rd1;
    st.param.b64 [a1], %rd5;
    st.param.b32 [a2], )" << (unsigned)SyncPoint::SyncAll << R"(;
    call __sk_wait, (a0, a1, a2);
  }
$S_done:
  bar.sync 0;
  ret;
}

.visible .func sk_set_next_task_start()
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $N_done;
  ld.shared.u32 %r2, [__sk_s_state];
  // Only the core's last block of the step arrives, only once, and only where the plan
  // placed the arrival in the kernel.
  and.b32 %r3, %r2, )" << (kLast | kArrived | kMayArrive) << R"(;
  setp.ne.u32 %p2, %r3, )" << (kLast | kMayArrive) << R"(;
  @%p2 bra $N_done;
  and.b32 %r3, %r2, )" << kWaited << R"(;
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bra $N_arrive;
  {
    .param .b32 q0;
    st.param.b32 [q0], )" << (unsigned)SyncPoint::WaitPreTaskEnd << R"(;
    call __sk_wait_previous, (q0);
  }
$N_arrive:
  call __sk_arrive, ();
$N_done:
  ret;
}

.visible .func sk_wait_pre_task_end()
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $P_done;
  ld.shared.u32 %r2, [__sk_s_state];
  and.b32 %r3, %r2, )" << kWaited << R"(;
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bra $P_done;
  {
    .param .b32 q0;
    st.param.b32 [q0], )" << (unsigned)SyncPoint::WaitPreTaskEnd << R"(;
    call __sk_wait_previous, (q0);
  }
$P_done:
  bar.sync 0;
  ret;
}

// Inside a group: CUDA has no cube core to signal, so a group is one block and the
// group-internal flags have nothing to wait for.
.visible .func sk_cross_core_set_flag(.param .b32 f)
{
  ret;
}

.visible .func sk_cross_core_wait_flag(.param .b32 f)
{
  ret;
}

// Across the sub-kernel's blocks (the planner gives a kernel with hard sync the core count of
// its segment): a split barrier per flag id.
.visible .func sk_cross_core_set_flag_all(.param .b32 f)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $F_done;
  ld.param.u32 %r2, [f];
  and.b32 %r2, %r2, 15;
  mul.wide.u32 %rd1, %r2, 8;
  ld.shared.u64 %rd2, [__sk_s_sync];
  add.u64 %rd2, %rd2, %rd1;
  add.u64 %rd2, %rd2, )" << flags_base << R"(;
  fence.acq_rel.gpu;
  atom.acq_rel.gpu.global.add.u64 %rd3, [%rd2], 1;
  ld.shared.u32 %r3, [__sk_s_cores];
  cvt.u64.u32 %rd4, %r3;
  div.u64 %rd5, %rd3, %rd4;
  add.u64 %rd5, %rd5, 1;
  mul.lo.u64 %rd5, %rd5, %rd4;
  mov.u64 %rd6, __sk_s_flag_target;
  add.u64 %rd6, %rd6, %rd1;
  st.shared.u64 [%rd6], %rd5;
$F_done:
  ret;
}

.visible .func sk_cross_core_wait_flag_all(.param .b32 f)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $G_done;
  ld.param.u32 %r2, [f];
  and.b32 %r2, %r2, 15;
  mul.wide.u32 %rd1, %r2, 8;
  ld.shared.u64 %rd2, [__sk_s_sync];
  add.u64 %rd2, %rd2, %rd1;
  add.u64 %rd2, %rd2, )" << flags_base << R"(;
  mov.u64 %rd6, __sk_s_flag_target;
  add.u64 %rd6, %rd6, %rd1;
  ld.shared.u64 %rd5, [%rd6];
  {
    .param .b64 a0;
    .param .b64 a1;
    .param .b32 a2;
    st.param.b64 [a0], %rd2;
    st.param.b64 [a1], %rd5;
    st.param.b32 [a2], )" << (unsigned)SyncPoint::WaitFlagAll << R"(;
    call __sk_wait, (a0, a1, a2);
  }
$G_done:
  bar.sync 0;
  ret;
}

// Cache calls: a GPU-scope fence makes this thread's writes visible to, and other blocks'
// released writes visible from, the whole device (the L1 is not coherent; the fence orders
// through L2).
.visible .func sk_dcci_line(.param .b64 a)
{
  fence.acq_rel.gpu;
  ret;
}

.visible .func sk_dcci_all()
{
  fence.acq_rel.gpu;
  ret;
}

// Scalar global-memory accesses: volatile (L1-bypassing) byte copies, fenced unless the
// scope options turn this kernel's per-access flushes off.
.visible .func sk_gm_load(.param .b64 d, .param .b64 s, .param .b32 n)
{
  .reg .pred %p<3>;
  .reg .b16 %h<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.shared.u32 %r1, [__sk_s_gm_flush];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 fence.acq_rel.gpu;
  ld.param.u64 %rd1, [d];
  ld.param.u64 %rd2, [s];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, 0;
$L_loop:
  setp.ge.u32 %p2, %r3, %r2;
  @%p2 bra $L_done;
  cvt.u64.u32 %rd3, %r3;
  add.u64 %rd4, %rd2, %rd3;
  ld.volatile.u8 %h1, [%rd4];
  add.u64 %rd5, %rd1, %rd3;
  st.u8 [%rd5], %h1;
  add.u32 %r3, %r3, 1;
  bra $L_loop;
$L_done:
  ret;
}

.visible .func sk_gm_store(.param .b64 d, .param .b64 s, .param .b32 n)
{
  .reg .pred %p<3>;
  .reg .b16 %h<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [d];
  ld.param.u64 %rd2, [s];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, 0;
$T_loop:
  setp.ge.u32 %p2, %r3, %r2;
  @%p2 bra $T_done;
  cvt.u64.u32 %rd3, %r3;
  add.u64 %rd4, %rd2, %rd3;
  ld.u8 %h1, [%rd4];
  add.u64 %rd5, %rd1, %rd3;
  st.volatile.u8 [%rd5], %h1;
  add.u32 %r3, %r3, 1;
  bra $T_loop;
$T_done:
  ld.shared.u32 %r1, [__sk_s_gm_flush];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 fence.acq_rel.gpu;
  ret;
}
)";
}

// Per step, the steps it waits for and their core counts: __sk_dep_first[i] ..
// __sk_dep_first[i+1] index (step, cores) pairs of __sk_dep_list.
void emit_dependencies(std::ostringstream &o, const EntrySpec &spec) {
  std::vector<uint32_t> first{0}, list;
  for (const EntryStep &s : spec.steps) {
    for (uint32_t d : s.deps) {
      list.push_back(d);
      list.push_back(d < spec.steps.size() ? spec.steps[d].cores : 0);
    }
    first.push_back((uint32_t)(list.size() / 2));
  }
  if (list.empty()) list = {0, 0};
  auto table = [&](const char *name, const std::vector<uint32_t> &v) {
    o << ".const .align 4 .u32 " << name << "[" << v.size() << "] = {";
    for (size_t k = 0; k < v.size(); ++k) o << (k ? (k % 16 ? ", " : ",\n  ") : "") << v[k];
    o << "};\n";
  };
  o << "\n// Inter-step dependencies: step i waits for the (step, cores) pairs\n"
       "// __sk_dep_list[__sk_dep_first[i] .. __sk_dep_first[i+1]).\n";
  table("__sk_dep_first", first);
  table("__sk_dep_list", list);
}

void emit_extern(std::ostringstream &o, const EntryStep &s) {
  o << ".extern .func " << s.symbol << "(";
  for (size_t j = 0; j < s.signature.size(); ++j)
    o << (j ? ", " : "") << ".param .b" << (wide(s.signature[j]) ? 64 : 32) << " p" << j;
  o << ");\n";
}

void emit_step(std::ostringstream &o, const EntrySpec &spec, size_t i) {
  const EntryStep &s = spec.steps[i];
  const bool wait_now = !s.deps.empty() && !s.wait_in_kernel;
  const unsigned first_flags = kFirst | (wait_now ? kWaitNow : 0);
  const unsigned flags =
      (s.gm_flush ? kGmFlush : 0) | (s.deps.empty() ? kNoDeps : 0) | (s.arrive_in_kernel ? kArriveInKernel : 0);
  o << "  // step " << i << ": " << s.symbol << ", " << s.block_dim << " blocks on " << s.cores << " cores\n";
  o << "  setp.ge.u32 %p2, %r3, " << s.cores << ";\n";
  o << "  @%p2 bra $skip_" << i << ";\n";
  o << "  mov.u32 %r5, %r3;\n";
  o << "$loop_" << i << ":\n";
  o << "  add.u32 %r6, %r5, %r4;\n";
  o << "  setp.ge.u32 %p3, %r6, " << s.block_dim << ";\n";
  o << "  setp.eq.u32 %p2, %r5, %r3;\n";
  o << "  selp.u32 %r7, " << first_flags << ", 0, %p2;\n";
  o << "  selp.u32 %r8, " << kLastBlock << ", 0, %p3;\n";
  o << "  or.b32 %r7, %r7, %r8;\n";
  o << "  or.b32 %r7, %r7, " << flags << ";\n";
  o << "  {\n"
       "    .param .b32 b0;\n    .param .b32 b1;\n    .param .b32 b2;\n"
       "    .param .b32 b3;\n    .param .b32 b4;\n";
  o << "    st.param.b32 [b0], " << i << ";\n";
  o << "    st.param.b32 [b1], %r5;\n";
  o << "    st.param.b32 [b2], " << s.block_dim << ";\n";
  o << "    st.param.b32 [b3], " << s.cores << ";\n";
  o << "    st.param.b32 [b4], %r7;\n";
  o << "    call __sk_begin, (b0, b1, b2, b3, b4);\n  }\n";
  if (s.dcci_before) o << "  fence.acq_rel.gpu;\n";
  const size_t n = s.signature.size();
  o << "  {\n";
  if (n) o << "    .reg .b64 %x<" << n << ">;\n    .reg .b32 %y<" << n << ">;\n";
  for (size_t j = 0; j < n; ++j)
    o << "    .param .b" << (wide(s.signature[j]) ? 64 : 32) << " c" << j << ";\n";
  for (size_t j = 0; j < n; ++j) {
    const size_t slot = 8ull * (s.arg_base + j);
    const bool w = wide(s.signature[j]);
    // Slots hold the value in their low bytes (little-endian), narrow integers extended.
    if (spec.args == ArgSource::Params)
      o << "    ld.param." << (w ? "u64 %x" : "u32 %y") << j << ", [sk_args+" << slot << "];\n";
    else
      o << "    ld.global.nc." << (w ? "u64 %x" : "u32 %y") << j << ", [%rd2+" << slot << "];\n";
    o << "    st.param.b" << (w ? "64" : "32") << " [c" << j << "], " << (w ? "%x" : "%y") << j << ";\n";
  }
  o << "    call " << s.symbol << ", (";
  for (size_t j = 0; j < n; ++j) o << (j ? ", " : "") << "c" << j;
  o << ");\n  }\n";
  if (s.dcci_after) o << "  fence.acq_rel.gpu;\n";
  o << "  mov.u32 %r5, %r6;\n";
  o << "  @!%p3 bra $loop_" << i << ";\n";
  o << "  call __sk_end, ();\n";
  o << "$skip_" << i << ":\n";
}

}  // namespace

size_t sync_buffer_bytes(size_t steps) { return 8 * (2 * steps + 16); }

const char *sync_point_name(uint32_t point) {
  switch ((SyncPoint)point) {
    case SyncPoint::TaskStart: return "the wait for the previous sub-kernel at its start";
    case SyncPoint::TaskEnd: return "the wait for the previous sub-kernel at its end";
    case SyncPoint::WaitPreTaskEnd: return "sk_wait_pre_task_end";
    case SyncPoint::SyncAll: return "sk_sync_all";
    case SyncPoint::WaitFlagAll: return "sk_cross_core_wait_flag_all";
  }
  return "an unknown sync point";
}

std::string generate_entry_ptx(const EntrySpec &spec) {
  std::ostringstream o;
  o << "// Generated by libsk: the super kernel '" << spec.entry_name << "', " << spec.steps.size()
    << " steps, " << spec.threads << " threads per block.\n";
  o << ".version 9.0\n.target " << spec.arch << "\n.address_size 64\n";
  emit_dependencies(o, spec);
  emit_library(o, spec);
  o << "\n// ---- sub-kernels ----\n";
  std::vector<std::string> declared;
  for (const EntryStep &s : spec.steps) {
    bool seen = false;
    for (const std::string &d : declared) seen |= d == s.symbol;
    if (seen) continue;
    declared.push_back(s.symbol);
    emit_extern(o, s);
  }
  const uint32_t slots = spec.arg_slots ? spec.arg_slots : 1;
  o << "\n.visible .entry " << spec.entry_name << "(\n";
  if (spec.args == ArgSource::Params)
    o << "  .param .align 8 .b8 sk_args[" << 8ull * slots << "],\n";
  else
    o << "  .param .u64 sk_args,\n";
  o << "  .param .u64 sk_sync,\n  .param .u64 sk_epoch,\n  .param .u64 sk_report)\n";
  o << "  .reqntid " << spec.threads << ", 1, 1\n{\n";
  o << "  .reg .pred %p<4>;\n  .reg .b32 %r<10>;\n  .reg .b64 %rd<4>;\n";
  o << R"(  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $init_done;
  ld.param.u64 %rd1, [sk_sync];
  st.shared.u64 [__sk_s_sync], %rd1;
  ld.param.u64 %rd1, [sk_epoch];
  st.shared.u64 [__sk_s_epoch], %rd1;
  ld.param.u64 %rd1, [sk_report];
  st.shared.u64 [__sk_s_report], %rd1;
  mov.u32 %r2, 0;
  st.shared.u32 [__sk_s_state], %r2;
$init_done:
)";
  if (spec.args == ArgSource::Buffer) o << "  ld.param.u64 %rd2, [sk_args];\n";
  o << "  mov.u32 %r3, %ctaid.x;\n  mov.u32 %r4, %nctaid.x;\n";
  for (size_t i = 0; i < spec.steps.size(); ++i) emit_step(o, spec, i);
  o << "  ret;\n}\n";
  return o.str();
}

}  // namespace sk::cuda
