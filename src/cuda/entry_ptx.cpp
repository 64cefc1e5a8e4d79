#include "cuda/entry_ptx.hpp"

#include <sk.h>
#include <sk_kernel.h>

#include <algorithm>
#include <string_view>

#include "cuda/ptx_template.hpp"
#include "elf/fatbin.hpp"

namespace sk::cuda {

extern const char kSuperkernelPtx[];  // cuda/superkernel.ptx, embedded by the build

namespace {

// The step flags the device API reads (GM_FLUSH: sk_gm_load and sk_gm_store fence) or that are
// state bits (below); the step loop's branches (kStep*, entry_ptx.hpp) lie above them.
constexpr unsigned kGmFlush = 8, kNoDeps = 16, kArriveInKernel = 32;
static_assert(((kGmFlush | kNoDeps | kArriveInKernel) &
               (kStepWaitNow | kStepFenceBefore | kStepFenceAfter | kStepNoArrive)) == 0);
// The bits of a slot's S_STATE word. A fresh instance's are its record's flags under kFresh:
// waited if the step depends on nothing, arrived if nothing waits for it, the arrival left to
// sk_set_next_task_start where the plan put it there; thread 0 adds WAITED at a step's later
// block on its core where the first one waited, and LAST at the core's last block of the step;
// the device API adds WAITED and ARRIVED.
constexpr unsigned kWaited = kNoDeps, kArrived = kStepNoArrive, kMayArrive = kArriveInKernel, kLast = 4;
constexpr unsigned kFresh = kWaited | kArrived | kMayArrive;
static_assert((kLast & (kFresh | kGmFlush | kStepWaitNow | kStepFenceBefore | kStepFenceAfter)) == 0);
// A step's end leaves thread 0 nothing to do (the step loop's one-barrier end) where its flags
// have both: nothing waits for its arrival, and it waited at its start or depends on nothing.
constexpr unsigned kEndNoArrival = kStepNoArrive, kEndWaited = kNoDeps | kStepWaitNow;
constexpr bool ends_at_one_barrier(uint32_t flags) { return (flags & kEndNoArrival) && (flags & kEndWaited); }
// Thread 0 reads a record as two 16-byte vectors, {kernel, block_dim, cores, first} and
// {flags, arg_base, dep0_step, dep0_cores}, and an 8-byte one, {dep_begin, dep_end}; every
// other thread reads the (cores, first) pair as one 8-byte vector: the word order and
// alignment those loads name.
static_assert(kStepKernel == 0 && kStepBlockDim == 1 && kStepCores == 2 && kStepFirst == 3 && kStepFlags == 4 &&
              kStepArgBase == 5 && kStepDep0Step == 6 && kStepDep0Cores == 7 && kStepDepBegin == 8 &&
              kStepDepEnd == 9);
static_assert(kTableHeaderWords * 4 % 16 == 0 && kStepWords * 4 % 16 == 0);
// Relaxed polls of a dependency before the slow wait (sleeps, deadline, hang report) takes over.
constexpr unsigned kWaitSpins = 64;

constexpr unsigned kCrossCoreFlags = SK_CROSS_CORE_FLAGS;

// The per-block state in dynamic shared memory: the block's fields, then two slots of the
// running instance's fields (a step's block on this one), then a selector byte per thread.
// Thread 0 fills the slot the next instance reads while the block's other threads run the
// current one; a thread's selector (its slot's offset) says which slot it runs, and flips as it
// moves on, so the device API reads its own instance's slot wherever it is called. Each list is
// in its order of offsets (a field's offset is the sum of the sizes before it, which keeps every
// field aligned).
struct StateField {
  const char *placeholder;
  uint32_t bytes;
};
// S_EPOCH is the running run's epoch, S_FIRST_EPOCH the launch's first, S_LAST_EPOCH the one
// its run count allows; S_STOP the stop flag's address; S_GO __sk_next's decision (a u32).
constexpr StateField kBlockState[] = {
    {"S_SYNC", 8},
    {"S_EPOCH", 8},
    {"S_REPORT", 8},
    {"S_FIRST_EPOCH", 8},
    {"S_LAST_EPOCH", 8},
    {"S_STOP", 8},
    // The running sub-kernel's block shape, x, y and z, where it reads it (__sk_thread).
    {"S_BLOCK_SHAPE", 8},
    // A u64 per flag: the target of its wait.
    {"S_FLAG_TARGET", 8 * kCrossCoreFlags},
    {"S_GO", 4},
    // How many of the running sub-kernel's threads have returned early (__sk_leave).
    {"S_LEFT", 4},
};
// A slot starts with the record's first 32 bytes, word for word, which thread 0 stores as the
// two 16-byte vectors it loads; the step loop reads and writes the groups below as one vector
// each (their offsets asserted below).
constexpr StateField kSlotState[] = {
    // The call site (kStepEnd past a run's last instance), the step's blocks and cores, and its
    // first core (which the slot does not use).
    {"S_KERNEL", 4},
    {"S_BLOCKS", 4},
    {"S_CORES", 4},
    {"S_FIRST", 4},
    // Flags, first argument slot, and the first dependency pair, which the wait after a step's
    // barrier reads.
    {"S_FLAGS", 4},
    {"S_ARG_BASE", 4},
    {"S_DEP0", 8},
    // The step's dependency pairs in the step table, and their end.
    {"S_DEPS", 8},
    {"S_DEPS_END", 8},
    // The step and this block's part of it (the device API reads them), and the state bits.
    {"S_STEP", 4},
    {"S_BLOCK", 4},
    {"S_STATE", 4},
};
template <size_t N>
constexpr uint32_t fields_bytes(const StateField (&fields)[N]) {
  uint32_t bytes = 0;
  for (const StateField &f : fields) bytes += f.bytes;
  return bytes;
}
template <size_t N>
constexpr bool fields_aligned(const StateField (&fields)[N]) {
  uint32_t offset = 0;
  for (const StateField &f : fields) {
    if (offset % (f.bytes < 8 ? f.bytes : 8)) return false;
    offset += f.bytes;
  }
  return true;
}
static_assert(fields_aligned(kBlockState) && fields_aligned(kSlotState),
              "a block state field is not aligned to its size");
constexpr uint32_t kSlotsAt = (fields_bytes(kBlockState) + 15) / 16 * 16;
constexpr uint32_t kSlotBytes = (fields_bytes(kSlotState) + 15) / 16 * 16;
constexpr uint32_t kSelectorsAt = kSlotsAt + 2 * kSlotBytes;
static_assert(kSlotBytes < 256, "a selector byte holds its slot's offset");
// S_KERNEL of the slot after a run's last instance: no call site has that index.
constexpr uint32_t kStepEnd = 0xffffffff;

uint32_t block_state_base(const EntrySpec &spec) { return (spec.dynamic_shared + 15) / 16 * 16; }

// A field's offset in its list.
template <size_t N>
constexpr uint32_t field_offset(const StateField (&fields)[N], std::string_view field) {
  uint32_t offset = 0;
  for (const StateField &f : fields) {
    if (f.placeholder == field) return offset;
    offset += f.bytes;
  }
  return UINT32_MAX;
}
static_assert(field_offset(kSlotState, "S_KERNEL") == 4 * kStepKernel &&
                  field_offset(kSlotState, "S_BLOCKS") == 4 * kStepBlockDim &&
                  field_offset(kSlotState, "S_CORES") == 4 * kStepCores &&
                  field_offset(kSlotState, "S_FIRST") == 4 * kStepFirst &&
                  field_offset(kSlotState, "S_FLAGS") == 4 * kStepFlags &&
                  field_offset(kSlotState, "S_ARG_BASE") == 4 * kStepArgBase &&
                  field_offset(kSlotState, "S_DEP0") == 4 * kStepDep0Step,
              "a slot starts with the record's first 32 bytes");
static_assert(field_offset(kSlotState, "S_DEPS") % 16 == 0 &&
                  field_offset(kSlotState, "S_DEPS_END") == field_offset(kSlotState, "S_DEPS") + 8 &&
                  field_offset(kSlotState, "S_STEP") % 8 == 0 &&
                  field_offset(kSlotState, "S_BLOCK") == field_offset(kSlotState, "S_STEP") + 4,
              "the step loop's vectors: {S_DEPS, S_DEPS_END}, {S_STEP, S_BLOCK}");

// A block field's address in the entry's PTX: its offset in the dynamic shared memory.
std::string state_address(const EntrySpec &spec, std::string_view field) {
  return "__sk_dynamic_shared+" + std::to_string(block_state_base(spec) + field_offset(kBlockState, field));
}

// A slot field's address: past %sk_slot, the address of the dynamic shared memory plus the
// thread's slot times kSlotBytes (the `slot` part).
std::string slot_address(const EntrySpec &spec, std::string_view field) {
  return "%sk_slot+" + std::to_string(block_state_base(spec) + kSlotsAt + field_offset(kSlotState, field));
}

bool wide(ArgType t) { return t == ArgType::Ptr || t == ArgType::I64 || t == ArgType::U64 || t == ArgType::F64; }

const PtxTemplate &ptx_template() {
  static const PtxTemplate t(kSuperkernelPtx);
  return t;
}

std::string str(uint64_t v) { return std::to_string(v); }

// The values every part of the template uses: libsk's device ABI and this super kernel's.
PtxValues abi_values(const EntrySpec &spec) {
  PtxValues v;
  // The PTX reads and writes the epoch word, the first, at the report's own address.
  static_assert(kReportEpoch == 0);
  static const char *const report_words[kReportWords] = {nullptr,         "REPORT_ID",    "REPORT_STEP",
                                                         "REPORT_BLOCK",  "REPORT_POINT", "REPORT_SEEN",
                                                         "REPORT_TARGET", "REPORT_ABORT"};
  for (uint32_t w = kReportId; w < kReportWords; ++w) v[report_words[w]] = str(8 * w);
  v["REPORT_FLAG_ID"] = str(8 * kReportFlagId);
  v["REPORT_FLAG_CALL"] = str(8 * kReportFlagCall);
  const SyncLayout sync = sync_layout(spec.steps.size());
  v["SYNC_EPOCH"] = str(sync.epoch);
  v["SYNC_DONE"] = str(sync.done);
  v["SYNC_RUN"] = str(sync.run);
  v["SYNC_ARRIVALS"] = str(sync.arrivals);
  v["SYNC_SYNC_ALL"] = str(sync.sync_all);
  v["SYNC_GRID"] = str(sync.grid);
  v["SYNC_FLAGS"] = str(sync.flags);
  v["SYNC_STEPS"] = str(sync.table);
  v["TABLE_RECORDS"] = str(4 * kTableHeaderWords);
  static const char *const step_words[kStepWords] = {
      "STEP_KERNEL",    "STEP_BLOCK_DIM",  "STEP_CORES",     "STEP_FIRST",   "STEP_FLAGS",  "STEP_ARG_BASE",
      "STEP_DEP0_STEP", "STEP_DEP0_CORES", "STEP_DEP_BEGIN", "STEP_DEP_END", "STEP_GRID_X", "STEP_GRID_Y"};
  for (uint32_t w = 0; w < kStepWords; ++w) v[step_words[w]] = str(4 * w);
  v["STEP_BYTES"] = str(4 * kStepWords);
  v["STEP_WAIT_NOW"] = str(kStepWaitNow);
  v["STEP_FENCE_BEFORE"] = str(kStepFenceBefore);
  v["STEP_FENCE_AFTER"] = str(kStepFenceAfter);
  v["FLAG_GM_FLUSH"] = str(kGmFlush);
  v["WAIT_SPINS"] = str(kWaitSpins);
  for (const StateField &f : kBlockState) v[f.placeholder] = state_address(spec, f.placeholder);
  for (const StateField &f : kSlotState) v[f.placeholder] = slot_address(spec, f.placeholder);
  v["SLOT_BYTES"] = str(kSlotBytes);
  v["SELECTORS"] = str(block_state_base(spec) + kSelectorsAt);
  v["STEP_END"] = str(kStepEnd);
  v["STATE_WAITED"] = str(kWaited);
  v["STATE_ARRIVED"] = str(kArrived);
  v["STATE_LAST"] = str(kLast);
  v["STATE_FRESH"] = str(kFresh);
  v["FLAG_END_DONE_ARRIVE"] = str(kEndNoArrival);
  v["FLAG_END_DONE_WAIT"] = str(kEndWaited);
  // sk_set_next_task_start arrives in the core's last block, if the plan lets it, once.
  v["STATE_ARRIVAL_BITS"] = str(kLast | kArrived | kMayArrive);
  v["STATE_MAY_ARRIVE_NOW"] = str(kLast | kMayArrive);
  v["POINT_TASK_START"] = str((unsigned)SyncPoint::TaskStart);
  v["POINT_TASK_END"] = str((unsigned)SyncPoint::TaskEnd);
  v["POINT_WAIT_PRE_TASK_END"] = str((unsigned)SyncPoint::WaitPreTaskEnd);
  v["POINT_SYNC_ALL"] = str((unsigned)SyncPoint::SyncAll);
  v["POINT_WAIT_FLAG_ALL"] = str((unsigned)SyncPoint::WaitFlagAll);
  v["POINT_INVALID_FLAG"] = str((unsigned)SyncPoint::InvalidFlag);
  v["POINT_ITERATION"] = str((unsigned)SyncPoint::Iteration);
  v["POINT_DEPENDENT_WAIT"] = str((unsigned)SyncPoint::DependentWait);
  v["CALL_SET_FLAG"] = str((unsigned)FlagCall::Set);
  v["CALL_WAIT_FLAG"] = str((unsigned)FlagCall::Wait);
  v["CALL_SET_FLAG_ALL"] = str((unsigned)FlagCall::SetAll);
  v["CALL_WAIT_FLAG_ALL"] = str((unsigned)FlagCall::WaitAll);
  v["CROSS_CORE_FLAGS"] = str(kCrossCoreFlags);
  v["BLOCK_BARRIER"] = str(kBlockBarrier);
  v["SUPERKERNEL_ID"] = str(spec.id);
  v["TIMEOUT_NS"] = str(spec.timeout_ns);
  return v;
}

// TMA and its tensor-map proxy: sm_90 and later.
bool has_tensor_maps(const std::string &arch) {
  bool specific = false;
  return elf::arch_number(arch, &specific) >= 90;
}

bool by_address(const EntryStep &s, size_t j) {
  return std::find(s.by_address.begin(), s.by_address.end(), j) != s.by_address.end();
}

// A parameter's declaration as nvcc writes the callee's: scalars in 32- or 64-bit parameters,
// an aggregate as a byte array with its alignment (the PTX ABI passes it by value); one passed
// by its address, that generic address.
std::string param_decl(const EntryStep &s, size_t j, const char *prefix) {
  const ParamType &t = s.signature[j];
  if (by_address(s, j)) return ".param .b64 " + (prefix + str(j));
  if (t.is_struct()) return ".param .align " + str(t.align) + " .b8 " + prefix + str(j) + "[" + str(t.size) + "]";
  return std::string(".param .b") + (wide(t.type) ? "64 " : "32 ") + prefix + str(j);
}

std::string subkernel_declarations(const EntrySpec &spec) {
  std::string o;
  std::vector<std::string> declared;  // one declaration per function, whatever its call sites
  for (const EntryStep *s : distinct_kernels(spec)) {
    if (std::find(declared.begin(), declared.end(), s->symbol) != declared.end()) continue;
    declared.push_back(s->symbol);
    o += (o.empty() ? "" : "\n") + std::string(".extern .func ") + s->symbol + "(";
    for (size_t j = 0; j < s->signature.size(); ++j) o += (j ? ", " : "") + param_decl(*s, j, "p");
    o += ");";
  }
  return o;
}

// The load of a scalar read by reference, from the address in %a<j>: as wide as the type, and
// extended as a slot holds it (a generic load: the address is any memory the GPU can read, and
// not .nc, since a kernel of the same launch may write it).
std::string ref_load(ArgType t) {
  switch (t) {
    case ArgType::I8: return "ld.s8";
    case ArgType::U8: return "ld.u8";
    case ArgType::I16: return "ld.s16";
    case ArgType::U16: return "ld.u16";
    case ArgType::I32:
    case ArgType::U32:
    case ArgType::F32: return "ld.u32";
    default: return "ld.u64";
  }
}

// The sub-kernel's call: each argument loaded from its 8-byte slots at %t5 (the step's first
// slot), or for an argument read by reference from the address its slot holds, and passed.
// An aggregate is copied in pieces of its alignment (at most 8 bytes).
std::string subkernel_call(const EntrySpec &spec, const EntryStep &s) {
  const size_t n = s.signature.size();
  const std::vector<uint32_t> at = slot_offsets(s.signature);
  std::string o = "  {\n";
  if (s.threads && s.threads < spec.threads)  // whole warps: the branch is uniform in each
    o += "    .reg .pred %nt;\n    .reg .b32 %tt;\n    mov.u32 %tt, %tid.x;\n    setp.ge.u32 %nt, %tt, " +
         str(s.threads) + ";\n    @%nt bra.uni $called;\n";
  if (s.block_shape[0])  // x in the low word, y (at most 1024) and z (64) in the high word's halves
    o += "    .reg .b64 %bs;\n    mov.b64 %bs, " +
         str(uint64_t{s.block_shape[2] << 16 | s.block_shape[1]} << 32 | s.block_shape[0]) +
         ";\n    st.shared.u64 [" + state_address(spec, "S_BLOCK_SHAPE") + "], %bs;\n";
  if (n)
    o += "    .reg .b64 %x<" + str(n) + ">;\n    .reg .b32 %y<" + str(n) + ">;\n    .reg .b64 %a<" + str(n) + ">;\n";
  for (size_t j = 0; j < n; ++j) o += "    " + param_decl(s, j, "c") + ";\n";
  const std::string load = spec.args == ArgSource::Params ? "ld.param." : "ld.global.nc.";
  for (size_t j = 0; j < n; ++j) {
    const ParamType &t = s.signature[j];
    const std::string slot = "[%t5+" + str(8 * at[j]);
    const bool ref = s.is_ref(j);
    if (by_address(s, j)) {  // the generic address of its bytes
      const std::string x = "%x" + str(j);
      if (ref)
        o += "    " + load + "u64 " + x + ", " + slot + "];\n";
      else if (spec.args == ArgSource::Params)  // %t5: the parameter-space address of the step's first slot
        o += "    cvta.param.u64 " + x + ", %t5;\n    add.u64 " + x + ", " + x + ", " + str(8 * at[j]) + ";\n";
      else
        o += "    add.u64 " + x + ", %t5, " + str(8 * at[j]) + ";\n";
      // A tensor map in global memory, which the host or an earlier step wrote: TMA reads it
      // through the tensor-map proxy, which that acquire orders after those writes.
      if ((ref || spec.args == ArgSource::Buffer) && t.size == SK_TENSOR_MAP_BYTES && has_tensor_maps(spec.arch))
        o += "    fence.proxy.tensormap::generic.acquire.sys [" + x + "], " + str(SK_TENSOR_MAP_BYTES) + ";\n";
      o += "    st.param.b64 [c" + str(j) + "], " + x + ";\n";
      continue;
    }
    if (ref) o += "    " + load + "u64 %a" + str(j) + ", " + slot + "];\n";
    const std::string from = ref ? "[%a" + str(j) : slot;  // a value's first byte
    if (t.is_struct()) {
      const uint32_t piece = std::min<uint32_t>(t.align, 8);
      const std::string bits = str(8 * piece), reg = (piece == 8 ? "%x" : "%y") + str(j);
      for (uint32_t b = 0; b < t.size; b += piece) {
        o += "    " + (ref ? std::string("ld.") : load) + "u" + bits + " " + reg + ", " + from + "+" + str(b) +
             "];\n";
        o += "    st.param.b" + bits + " [c" + str(j) + "+" + str(b) + "], " + reg + ";\n";
      }
      continue;
    }
    const bool w = wide(t.type);
    const std::string reg = (w ? "%x" : "%y") + str(j);
    if (ref)
      o += "    " + ref_load(t.type) + " " + reg + ", " + from + "];\n";
    else
      o += "    " + load + (w ? "u64 " : "u32 ") + reg + ", " + slot + "];\n";
    o += std::string("    st.param.b") + (w ? "64" : "32") + " [c" + str(j) + "], " + reg + ";\n";
  }
  o += "    call " + s.symbol + ", (";
  for (size_t j = 0; j < n; ++j) o += (j ? ", c" : "c") + str(j);
  return o + ");\n  }";
}

// The step loop and its call sites, one per distinct sub-kernel.
std::string steps_code(const EntrySpec &spec, PtxValues v) {
  const std::vector<const EntryStep *> kernels = distinct_kernels(spec);
  std::string targets, sites;
  for (size_t k = 0; k < kernels.size(); ++k) {
    targets += (k ? ", $call_" : "$call_") + str(k);
    v["KERNEL"] = str(k);
    v["SYMBOL"] = kernels[k]->symbol;
    v["CALL"] = subkernel_call(spec, *kernels[k]);
    sites += ptx_template().expand("call_site", v);
  }
  while (!sites.empty() && sites.back() == '\n') sites.pop_back();
  v["CALL_TARGETS"] = targets;
  v["CALL_SITES"] = sites;
  v["ARGS_BASE"] = spec.args == ArgSource::Params ? "  mov.u64 %t6, sk_args;\n  add.u64 %t5, %t5, %t6;"
                                                  : "  ld.param.u64 %t6, [sk_args];\n  add.u64 %t5, %t5, %t6;";
  return ptx_template().expand("steps", v);
}

}  // namespace

uint32_t entry_dynamic_shared(const EntrySpec &spec) { return block_state_base(spec) + kSelectorsAt + spec.threads; }

SyncLayout sync_layout(size_t steps) {
  SyncLayout l;
  l.arrivals = kSyncRun + 8;
  l.sync_all = l.arrivals + 8 * steps;
  l.grid = l.sync_all + 8 * steps;
  l.flags = l.grid + 8 * steps;
  l.report = l.flags + 8 * kCrossCoreFlags;
  l.bytes = l.report + 8 * kReportWords;
  l.table = (l.bytes + 15) / 16 * 16;
  return l;
}

// Steps call at one site when they call one function with the same arguments read by reference
// and the same block shape and threads.
bool same_call_site(const EntryStep &a, const EntryStep &b) {
  return a.symbol == b.symbol && a.arg_refs == b.arg_refs &&
         std::equal(a.block_shape, a.block_shape + 3, b.block_shape) && a.threads == b.threads;
}

std::vector<const EntryStep *> distinct_kernels(const EntrySpec &spec) {
  std::vector<const EntryStep *> kernels;
  for (const EntryStep &s : spec.steps) {
    bool seen = false;
    for (const EntryStep *k : kernels) seen |= same_call_site(*k, s);
    if (!seen) kernels.push_back(&s);
  }
  return kernels;
}

std::vector<uint32_t> step_table(const EntrySpec &spec) {
  const std::vector<const EntryStep *> kernels = distinct_kernels(spec);
  const size_t records = kTableHeaderWords, deps = records + kStepWords * spec.steps.size();
  std::vector<uint32_t> t(deps, 0);
  t[0] = (uint32_t)spec.steps.size();
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    const EntryStep &s = spec.steps[i];
    uint32_t *r = &t[records + kStepWords * i];
    for (uint32_t k = 0; k < kernels.size(); ++k)
      if (same_call_site(*kernels[k], s)) r[kStepKernel] = k;
    r[kStepBlockDim] = s.block_dim;
    r[kStepCores] = s.cores;
    r[kStepFirst] = s.first;
    r[kStepFlags] =
        (s.gm_flush ? kGmFlush : 0) | (s.deps.empty() ? kNoDeps : 0) | (s.arrive_in_kernel ? kArriveInKernel : 0) |
        (!s.deps.empty() && !s.wait_in_kernel ? kStepWaitNow : 0) | (s.dcci_before ? kStepFenceBefore : 0) |
        (s.dcci_after ? kStepFenceAfter : 0) | (s.arrives ? 0 : kStepNoArrive);
    r[kStepArgBase] = s.arg_base;
    const GridShape grid = launch_grid(s.block_dim, s.grid);
    r[kStepGridX] = grid[0];
    r[kStepGridY] = grid[1];
    r[kStepDepBegin] = (uint32_t)t.size();
    for (uint32_t d : s.deps) {
      t.push_back(d);
      t.push_back(d < spec.steps.size() ? spec.steps[d].cores : 0);
    }
    r = &t[records + kStepWords * i];  // push_back may have moved the table
    r[kStepDepEnd] = (uint32_t)t.size();
    if (r[kStepDepEnd] > r[kStepDepBegin]) {
      r[kStepDep0Step] = t[r[kStepDepBegin]];
      r[kStepDep0Cores] = t[r[kStepDepBegin] + 1];
    }
  }
  return t;
}

uint32_t one_barrier_steps(const std::vector<uint32_t> &table) {
  if (table.size() < kTableHeaderWords) return 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < table[0] && kTableHeaderWords + kStepWords * (i + 1) <= table.size(); ++i) {
    n += ends_at_one_barrier(table[kTableHeaderWords + kStepWords * i + kStepFlags]);
  }
  return n;
}

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
    case SyncPoint::Iteration: return "the barrier between two runs of sk_launch_repeat";
    case SyncPoint::DependentWait: return "griddepcontrol.wait (programmatic dependent launch)";
  }
  return "an unknown sync point";
}

StepLoopCode step_loop_code(const std::string &ptx) {
  StepLoopCode c;
  const size_t begin = ptx.find("\n$steps:\n"), end = ptx.find("\n$steps_done:", begin);
  if (begin == std::string::npos || end == std::string::npos) return c;
  bool call_sites = false;
  int depth = 0;  // inside `{ }`: a call's parameter block (the slow wait's, the sub-kernels')
  size_t at = begin + 1;
  while (at < end) {
    size_t eol = ptx.find('\n', at);
    if (eol == std::string::npos || eol > end) eol = end;
    std::string line = ptx.substr(at, eol - at);
    at = eol + 1;
    line.erase(0, line.find_first_not_of(' '));
    if (line.rfind("$sk_calls:", 0) == 0) call_sites = true;
    if (line.rfind("$called:", 0) == 0) call_sites = false;
    if (line == "{") ++depth;
    if (line == "}") --depth;
    if (call_sites || depth > 0) continue;
    if (line.rfind("@%", 0) == 0) line.erase(0, line.find(' ') + 1);  // a predicate
    auto starts = [&line](const char *op) { return line.rfind(op, 0) == 0; };
    if (starts("barrier.sync") || starts("barrier.red")) ++c.block_barriers;
    if (starts("red.release") || starts("atom.release") || starts("st.release")) ++c.releases;
    if (starts("fence.acquire")) ++c.acquires;
    if (starts("fence.acq_rel") || starts("fence.sc")) ++c.full_fences;
    if (starts("ld.relaxed")) ++c.polls;
    if (starts("ld.global")) ++c.table_loads;
  }
  return c;
}

std::string generate_entry_ptx(const EntrySpec &spec) {
  PtxValues v = abi_values(spec);
  v["ENTRY_NAME"] = spec.entry_name;
  v["STEP_COUNT"] = str(spec.steps.size());
  v["KERNEL_COUNT"] = str(distinct_kernels(spec).size());
  v["THREADS"] = str(spec.threads);
  v["ARCH"] = spec.arch;
  v["SUBKERNEL_DECLARATIONS"] = subkernel_declarations(spec);
  v["SHARED_OVERLAY"] = kSharedOverlaySymbol;
  v["SHARED_OVERLAY_ALIGN"] = str(spec.shared_overlay_align);
  // At least one byte: the linked modules' other functions may address it even when no
  // sub-kernel does (no code the entry reaches does then, and the linker allocates nothing).
  v["SHARED_OVERLAY_BYTES"] = str(spec.shared_overlay_bytes ? spec.shared_overlay_bytes : 1);
  // The linker keeps a shared variable only where code the entry reaches addresses it.
  v["SHARED_PAD_DECLARATION"] =
      spec.shared_pad_bytes ? ".shared .align 1 .b8 __sk_shared_pad[" + str(spec.shared_pad_bytes) + "];" : "";
  v["SHARED_PAD_KEEP"] = spec.shared_pad_bytes ? "  st.shared.u8 [__sk_shared_pad], %r2;" : "";
  const uint32_t slots = spec.arg_slots ? spec.arg_slots : 1;
  // Aligned as the most aligned parameter (each step's slots start on its alignment).
  size_t align = 8;
  for (const EntryStep &s : spec.steps) align = std::max(align, 8 * signature_slot_align(s.signature));
  v["ARGS_PARAM"] = spec.args == ArgSource::Params
                        ? "  .param .align " + str(align) + " .b8 sk_args[" + str(8ull * slots) + "],"
                        : "  .param .u64 sk_args,";
  v["STEPS"] = steps_code(spec, v);
  return ptx_template().expand("superkernel", v);
}

}  // namespace sk::cuda
