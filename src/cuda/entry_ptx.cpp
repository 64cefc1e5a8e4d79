#include "cuda/entry_ptx.hpp"

#include <sk_kernel.h>

#include <cctype>
#include <cstdio>
#include <sstream>

namespace sk::cuda {
namespace {

// __sk_s_state bits (per block, in shared memory; the block's thread 0 owns them).
constexpr unsigned kWaited = 1, kArrived = 2, kLast = 4, kMayArrive = 8;
// __sk_begin flag bits.
constexpr unsigned kFirst = 1, kLastBlock = 2, kWaitNow = 4, kGmFlush = 8, kNoDeps = 16, kArriveInKernel = 32;

bool wide(ArgType t) { return t == ArgType::Ptr || t == ArgType::I64 || t == ArgType::U64 || t == ArgType::F64; }

constexpr unsigned kCrossCoreFlags = SK_CROSS_CORE_FLAGS;

// Thread 0, flag id in %r2: an id past the last reports call `call` (0..3: set, wait,
// set_all, wait_all) and leaves through $<label>_done; a valid one falls through.
std::string flag_check(const char *label, unsigned call) {
  std::ostringstream o;
  o << "  setp.lt.u32 %p2, %r2, " << kCrossCoreFlags << ";\n"
    << "  @%p2 bra $" << label << "_ok;\n"
    << "  {\n    .param .b32 b0;\n    .param .b32 b1;\n    st.param.b32 [b0], %r2;\n"
    << "    st.param.b32 [b1], " << call << ";\n    call __sk_bad_flag, (b0, b1);\n  }\n"
    << "  bra.uni $" << label << "_done;\n$" << label << "_ok:";
  return o.str();
}

// A group flag call: nothing to signal on CUDA but the id check (thread 0).
std::string group_flag_func(const char *name, unsigned call, const char *label) {
  std::ostringstream o;
  o << ".visible .func " << name << "(.param .b32 f)\n{\n  .reg .pred %p<3>;\n  .reg .b32 %r<3>;\n"
    << "  mov.u32 %r1, %tid.x;\n  setp.ne.u32 %p1, %r1, 0;\n  @%p1 bra $" << label << "_done;\n"
    << "  ld.param.u32 %r2, [f];\n" << flag_check(label, call) << "\n$" << label << "_done:\n  ret;\n}\n";
  return o.str();
}

// The shared state, the wait loop, the step prologue/epilogue and the device API. `steps`
// and the deadline are baked in: the library is generated per super kernel.
void emit_library(std::ostringstream &o, const EntrySpec &spec) {
  const size_t S = spec.steps.size();
  const unsigned long long syncall_base = 8ull * S, flags_base = 16ull * S;
  o << R"(
// Per-block state: written by thread 0 between barriers, read by the device API. Its
// __sk_s_* names become offsets past the sub-kernels' part of this array (place_block_state).
.extern .shared .align 16 .b8 __sk_dynamic_shared[];

// Thread 0 of a block waits until *addr >= target, spinning with relaxed loads and nanosleep
// (an acquire load per iteration would invalidate the L1 each time), then acquires with one
// fence; past the deadline it raises the launch's abort word, which ends its every wait, and
// records a hang report unless an unread one is there.
.func __sk_wait(.param .b64 w_addr, .param .b64 w_target, .param .b32 w_point)
{
  .reg .pred %p<4>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<13>;
  ld.param.u64 %rd1, [w_addr];
  ld.param.u64 %rd2, [w_target];
  ld.relaxed.gpu.global.u64 %rd3, [%rd1];
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra $W_done;
  ld.shared.u64 %rd4, [__sk_s_report];
  ld.shared.u64 %rd12, [__sk_s_epoch];
  mov.u64 %rd5, %globaltimer;
$W_spin:
  nanosleep.u32 32;
  ld.relaxed.gpu.global.u64 %rd3, [%rd1];
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra $W_done;
  // Only this launch's abort ends the wait: a hang of an earlier launch that no sync has
  // read yet leaves the abort word at that launch's epoch.
  ld.relaxed.gpu.global.u64 %rd6, [%rd4+)" << 8 * kReportAbortWord << R"(];
  setp.eq.u64 %p2, %rd6, %rd12;
  @%p2 bra $W_done;
  mov.u64 %rd7, %globaltimer;
  sub.u64 %rd7, %rd7, %rd5;
  setp.lt.u64 %p3, %rd7, )" << spec.timeout_ns << R"(;
  @%p3 bra $W_spin;
  st.relaxed.gpu.global.u64 [%rd4+)" << 8 * kReportAbortWord << R"(], %rd12;
  mov.u64 %rd8, 0;
  atom.relaxed.gpu.global.cas.b64 %rd10, [%rd4], %rd8, %rd12;
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

// Thread 0 of a block: a cross-core flag id past the last one. Records the call and the id
// in the hang report (point InvalidFlag) and raises the abort word: the launch fails with
// SK_ERR_INVALID_ARGUMENT rather than the id wrapping onto another flag's counter.
.func __sk_bad_flag(.param .b32 b_flag, .param .b32 b_call)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.shared.u64 %rd1, [__sk_s_report];
  ld.shared.u64 %rd3, [__sk_s_epoch];
  st.relaxed.gpu.global.u64 [%rd1+)" << 8 * kReportAbortWord << R"(], %rd3;
  mov.u64 %rd2, 0;
  atom.relaxed.gpu.global.cas.b64 %rd4, [%rd1], %rd2, %rd3;
  setp.ne.u64 %p1, %rd4, 0;
  @%p1 bra $B_done;
  mov.u64 %rd5, )" << spec.id << R"(;
  st.relaxed.gpu.global.u64 [%rd1+8], %rd5;
  ld.shared.u32 %r1, [__sk_s_step];
  cvt.u64.u32 %rd5, %r1;
  st.relaxed.gpu.global.u64 [%rd1+16], %rd5;
  mov.u32 %r2, %ctaid.x;
  cvt.u64.u32 %rd5, %r2;
  st.relaxed.gpu.global.u64 [%rd1+24], %rd5;
  mov.u64 %rd5, )" << (unsigned)SyncPoint::InvalidFlag << R"(;
  st.relaxed.gpu.global.u64 [%rd1+32], %rd5;
  ld.param.u32 %r3, [b_flag];
  cvt.u64.u32 %rd5, %r3;
  st.relaxed.gpu.global.u64 [%rd1+40], %rd5;
  ld.param.u32 %r3, [b_call];
  cvt.u64.u32 %rd5, %r3;
  st.relaxed.gpu.global.u64 [%rd1+48], %rd5;
$B_done:
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

// Thread 0: one arrival of this block at the current step, a release (after the block's
// barrier, it publishes every thread's writes: no fence of its own).
.func __sk_arrive()
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.shared.u32 %r1, [__sk_s_step];
  mul.wide.u32 %rd1, %r1, 8;
  ld.shared.u64 %rd2, [__sk_s_sync];
  add.u64 %rd1, %rd1, %rd2;
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
  atom.release.gpu.global.add.u64 %rd3, [%rd1], 1;
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
// group-internal flags have nothing to wait for; their ids are checked all the same.
)" << group_flag_func("sk_cross_core_set_flag", 0, "GS") << group_flag_func("sk_cross_core_wait_flag", 1, "GW") << R"(

// Across the sub-kernel's blocks (the planner gives a kernel with hard sync the core count of
// its segment): a split barrier per flag id.
.visible .func sk_cross_core_set_flag_all(.param .b32 f)
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $F_done;
  ld.param.u32 %r2, [f];
)" << flag_check("F", 2) << R"(
  mul.wide.u32 %rd1, %r2, 8;
  ld.shared.u64 %rd2, [__sk_s_sync];
  add.u64 %rd2, %rd2, %rd1;
  add.u64 %rd2, %rd2, )" << flags_base << R"(;
  atom.release.gpu.global.add.u64 %rd3, [%rd2], 1;
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
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  bar.sync 0;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $G_done;
  ld.param.u32 %r2, [f];
)" << flag_check("G", 3) << R"(
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

namespace {

// Offsets of the per-block state in its part of dynamic shared memory.
struct StateVar {
  const char *name;
  uint32_t offset;
};
constexpr StateVar kBlockState[] = {
    {"__sk_s_sync", 0},   {"__sk_s_epoch", 8},  {"__sk_s_report", 16},   {"__sk_s_step", 24},
    {"__sk_s_block", 28}, {"__sk_s_blocks", 32}, {"__sk_s_cores", 36},   {"__sk_s_state", 40},
    {"__sk_s_gm_flush", 44}, {"__sk_s_flag_target", 48},  // u64[kCrossCoreFlags]
};
constexpr uint32_t kBlockStateBytes = 48 + 8 * kCrossCoreFlags;

uint32_t block_state_base(const EntrySpec &spec) { return (spec.dynamic_shared + 15) / 16 * 16; }

// Replaces each __sk_s_* name of `ptx` with `__sk_dynamic_shared+OFFSET` (PTX has no symbolic
// constants; an address expression is valid wherever the variable's name was).
std::string place_block_state(const std::string &ptx, uint32_t base) {
  std::string out;
  out.reserve(ptx.size() + ptx.size() / 8);
  const std::string prefix = "__sk_s_";
  size_t at = 0;
  for (size_t hit = ptx.find(prefix); hit != std::string::npos; hit = ptx.find(prefix, at)) {
    size_t end = hit + prefix.size();
    while (end < ptx.size() && (std::isalnum((unsigned char)ptx[end]) || ptx[end] == '_')) ++end;
    const std::string name = ptx.substr(hit, end - hit);
    out.append(ptx, at, hit - at);
    bool known = false;
    for (const StateVar &v : kBlockState)
      if (name == v.name) {
        out += "__sk_dynamic_shared+" + std::to_string(base + v.offset);
        known = true;
      }
    if (!known) out += name;
    at = end;
  }
  out.append(ptx, at, std::string::npos);
  return out;
}

}  // namespace

uint32_t entry_dynamic_shared(const EntrySpec &spec) { return block_state_base(spec) + kBlockStateBytes; }

size_t sync_buffer_bytes(size_t steps) { return 8 * (2 * steps + kCrossCoreFlags); }

const char *flag_call_name(uint64_t call) {
  static const char *const names[] = {"sk_cross_core_set_flag", "sk_cross_core_wait_flag",
                                      "sk_cross_core_set_flag_all", "sk_cross_core_wait_flag_all"};
  return call < sizeof names / sizeof names[0] ? names[call] : "a cross-core flag call";
}

const char *sync_point_name(uint32_t point) {
  switch ((SyncPoint)point) {
    case SyncPoint::TaskStart: return "the wait for the previous sub-kernel at its start";
    case SyncPoint::TaskEnd: return "the wait for the previous sub-kernel at its end";
    case SyncPoint::WaitPreTaskEnd: return "sk_wait_pre_task_end";
    case SyncPoint::SyncAll: return "sk_sync_all";
    case SyncPoint::WaitFlagAll: return "sk_cross_core_wait_flag_all";
    case SyncPoint::InvalidFlag: return "a cross-core flag call";
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
  return place_block_state(o.str(), block_state_base(spec));
}

}  // namespace sk::cuda
