// What is in a CUDA binary (ELF machine EM_CUDA = 190): relocatable cubins as `nvcc -dc -cubin`
// writes them, and the linked cubins nvJitLink returns. Read with the object reader
// (elf/elf_object.hpp), which checks the ELF structure, then CUDA's parts: functions and their
// `.nv.info*` attributes (register count, stack, parameter bytes, the extern functions each
// calls), static shared variables and the `extern __shared__` references of each function's
// code (its relocations), the call graph (`.nv.callgraph`), and the sk_kernel.h metadata
// strings of CUDA mode.
#pragma once
#include <sk.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/reach_path.hpp"
#include "elf/elf_object.hpp"

namespace sk::elf {

constexpr uint16_t kMachineCuda = 190;  // EM_CUDA
// CUDA's section types: SHT_CUDA_NOBITS sections (shared memory) occupy no file bytes, and
// .nv.callgraph holds { caller, callee } symbol index pairs, in parts that a { 0, marker }
// pair opens (parse_cubin says what each holds).
constexpr uint32_t kShtCudaNobits = 0x7000000a;
constexpr uint32_t kShtCudaCallgraph = 0x70000001;
constexpr int32_t kCallgraphCalls = -1, kCallgraphAddressTaken = -2, kCallgraphIndirect = -3, kCallgraphTakes = -4;
// The symbol type of CUDA's variables (STT_LOPROC) and the st_other bit of shared-memory
// symbols (static variables and `extern __shared__` arrays).
constexpr uint8_t kSttCudaObject = 13;
constexpr uint8_t kStoCudaShared = 0x40;
// A static __shared__ variable's size and alignment are at most this: more than any GPU's
// shared memory, and far from overflowing a layout's offsets.
constexpr uint64_t kMaxSharedVarBytes = 1u << 24;
// How parse_object reads a cubin: relocatable or linked, REL sections too, and CUDA's NOBITS.
constexpr ParseOptions kCubinParseOptions{.executable = true, .rel_sections = true, .nobits_type = kShtCudaNobits};

// A kernel parameter as EIATTR_KPARAM_INFO records it: where its bytes go in the parameter
// space. A linked kernel launched as compiled (cuda/plain_launch.hpp) is passed by these alone.
struct CubinParam {
  uint32_t ordinal = 0, offset = 0, size = 0;
};

struct CubinFunction {
  std::string name;
  bool entry = false;       // a kernel (.entry) rather than a device function
  bool local = false;       // STB_LOCAL: other objects cannot call it
  bool weak = false;        // STB_WEAK: a link keeps one of the same name (inline, template)
  uint32_t registers = 0;   // EIATTR_REGCOUNT (or the .text section's sh_info high byte)
  uint32_t frame_size = 0;  // EIATTR_FRAME_SIZE: per-thread local memory
  // Per-thread call stack: EIATTR_MIN_STACK_SIZE (what ptxas computed over the call graph, the
  // driver's reservation), or EIATTR_MAX_STACK_SIZE where larger.
  uint32_t stack_size = 0;
  // Static __shared__ bytes: the size of .nv.shared.<name> (linked cubins), else the variables
  // of `.nv_debug.shared` / `.nv.shared.*` that its own code's relocations reference.
  uint32_t shared_bytes = 0;
  bool dynamic_shared = false;  // its code references an `extern __shared__` array
  uint32_t param_bytes = 0;     // EIATTR_CBANK_PARAM_SIZE (entries only)
  // EIATTR_NUM_BARRIERS: one past the highest barrier its code names (16 when an id is in a
  // register), 0 when it names none.
  uint32_t barriers = 0;
  // EIATTR_MAXREG_COUNT: an entry's .maxnreg (0: none recorded; 255 where it had none).
  uint32_t max_registers = 0;
  // EIATTR_KPARAM_INFO (or the record of more than 4 KiB of parameters) of an entry, by
  // ordinal; EIATTR_MAX_THREADS (__launch_bounds__'s
  // .maxntid) and EIATTR_REQNTID (.reqntid) as x, y, z, zeros where not recorded.
  std::vector<CubinParam> params;
  uint32_t max_threads[3] = {0, 0, 0};
  uint32_t reqntid[3] = {0, 0, 0};
  // EIATTR_CTA_PER_CLUSTER: __cluster_dims__ (.reqnctapercluster), zeros where not recorded;
  // EIATTR_EXPLICIT_CLUSTER (.explicitcluster): it runs only in a cluster, compiled in or its
  // launch's.
  uint32_t cluster_dims[3] = {0, 0, 0};
  bool explicit_cluster = false;
  // EIATTR_COOP_GROUP_INSTR_OFFSETS: its code uses cooperative groups (a block's, a warp's, a
  // cluster's or the grid's sync alike).
  bool cooperative_groups = false;
  // A kernel whose code, or code it calls, syncs the grid (cooperative groups' grid.sync()),
  // which only a cooperative launch makes safe: cooperative groups and the SASS of a grid sync
  // (elf/cubin_sass.hpp). False for device functions.
  bool grid_sync = false;
  uint32_t code_bytes = 0;            // size of .text.<name>
  std::vector<std::string> externs;   // functions it calls that are undefined in this object
  std::vector<std::string> callees;   // functions it calls (.nv.callgraph), defined or not
  bool indirect_calls = false;        // it calls through a pointer (.nv.callgraph)
  std::vector<uint32_t> shared_vars;  // indexes into Cubin::shared_vars its code references
};

// A global variable a cubin defines.
struct CubinVariable {
  std::string name;
  bool weak = false;  // STB_WEAK: a link keeps one of the same name, or the strong one
};

// A static __shared__ variable of a relocatable cubin.
struct CubinSharedVar {
  std::string name;
  uint32_t size = 0, align = 1;
  uint32_t symbol = 0;  // its symbol index
  // It may move into the shared overlay (cubin_shared_overlay.hpp): a local variable of
  // `.nv_debug.shared`, whose st_value is its alignment, referenced only through relocations
  // with explicit addends. Others (globals, which other objects may reference by name; older
  // `.nv.shared.<function>` layouts) stay where the linker places them.
  bool overlay = false;
};

// What a function and every function it reaches through the call graph use together. A call
// through a pointer reaches Cubin::pointer_targets, but only what the direct calls do not reach
// already is said to be reached that way.
struct CubinReach {
  std::vector<std::string> functions;                   // defined functions reached, `name` first
  std::vector<std::string> externs;                     // undefined functions any of them calls
  std::map<std::string, std::vector<ReachStep>> paths;  // how each extern is reached
  uint32_t shared_bytes = 0;                            // distinct static __shared__ variables, each aligned
  std::vector<uint32_t> shared_vars;                    // those variables: indexes into Cubin::shared_vars
  bool dynamic_shared = false;
};

struct Cubin {
  std::string label;
  uint16_t type = 0;  // ET_REL (relocatable, nvcc -dc) or ET_EXEC (linked)
  uint32_t sm = 0;    // SASS architecture, 90 for sm_90
  std::vector<CubinFunction> functions;
  std::vector<std::string> undefined;  // undefined function symbols
  // Its data symbols for other objects: the variables it defines, not local (`__device__`,
  // `__constant__`; weak: an inline or template variable), and those it uses undefined (another
  // object's; weak references left out): what a module of several objects resolves between them.
  std::vector<CubinVariable> variables;
  std::vector<std::string> undefined_variables;
  // What a call through a pointer may reach: the functions whose address the code takes
  // (.nv.callgraph), or every function where the cubin does not say.
  std::vector<std::string> pointer_targets;
  // Strings of the `sk_kernel_meta_*` device constants sk_kernel.h's SK_KERNEL writes in CUDA
  // mode ("sk1;kernel=...;sig=...;type=...;threads=..."): a device compiler keeps no custom
  // section, so the records live in variables with a known name prefix.
  std::vector<std::string> metadata_records;
  std::vector<CubinSharedVar> shared_vars;

  const CubinFunction *find(std::string_view name) const;
  // Walks the call graph from defined function `name` (which must exist).
  CubinReach reach(std::string_view name) const;
};

// True if the bytes start like an ELF object for EM_CUDA.
bool looks_like_cubin(const void *bytes, size_t size);

// Parses a cubin. Malformed bytes are SK_ERR_BAD_BINARY naming `label` and the bad field;
// another machine is SK_ERR_UNSUPPORTED.
sk_status parse_cubin(const void *bytes, size_t size, std::string_view label, Cubin *out);

}  // namespace sk::elf
