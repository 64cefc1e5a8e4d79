// How the host calls a kernel, decided once per kernel from its signature (kernels return
// void; the return value, if any, is dropped): a direct call for the shapes the step loop can
// call by itself, a libffi call interface for the rest (aggregates passed by value among them:
// libffi classifies them as the SysV x86-64 and AAPCS64 conventions say).
#pragma once
#include <ffi.h>
#include <sk.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/signature.hpp"

namespace sk::host {

// Kernels whose parameters are all pointers and integers, at most kDirectArgs of them, are
// called directly with kDirectArgs 64-bit register arguments (the SysV x86-64 and AAPCS64
// conventions pass them in x/r registers; a callee ignores the ones it does not take):
// no libffi on the launch path for the common shapes.
constexpr size_t kDirectArgs = 6;
using DirectFn = void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

// Other signatures (floating-point parameters, more integer ones) are called directly too,
// through a register map, where the convention allows: SysV x86-64 and AAPCS64 give integer
// and floating-point parameters registers of their own class, in order (kIntRegs, kFpRegs),
// and pass what does not fit as 8-byte stack words in parameter order. A mapped call passes
// every register of both classes (and kStackWords stack words when the kernel has stack
// parameters); map[r] is the argument slot that register or word carries. A slot holds an
// f32 in its low 4 bytes, which is where a callee reads a float from an FP register or a
// stack word. Unused registers carry slot 0: the callee does not read them. A mapped call
// costs a few ns more than a direct one, libffi about ten times that (docs/benchmarks.md,
// "Kernel calls").
#if defined(__aarch64__)
constexpr size_t kIntRegs = 8;
#else
constexpr size_t kIntRegs = 6;
#endif
constexpr size_t kFpRegs = 8;
constexpr size_t kStackWords = 8;
constexpr size_t kCallMapEntries = kIntRegs + kFpRegs + kStackWords;

enum class CallKind : uint8_t { Direct, Mapped, Libffi };

struct CallInterface {
  CallKind kind = CallKind::Libffi;
  uint8_t stack_words = 0;            // Mapped: stack words the kernel reads
  uint8_t map[kCallMapEntries] = {};  // Mapped: integer registers, FP registers, stack words
  ffi_cif cif;
  std::vector<ffi_type *> types;  // cif points into this: the object never moves (heap only)
  // The FFI_TYPE_STRUCT types of aggregate parameters and their element lists (an array
  // member is its elements, as libffi describes arrays), which `types` points to.
  std::vector<std::unique_ptr<ffi_type>> aggregates;
  std::vector<std::unique_ptr<ffi_type *[]>> elements;
  // The most a call puts on the calling thread's stack for the parameters: their stack words
  // and, for libffi, the copies it makes of large aggregates (call_stack_bytes).
  size_t stack_bytes = 0;
};

// What a core's stack keeps beyond a kernel's parameters, for the executor's frames and the
// kernel's own: a kernel whose parameters leave less is refused (HostBackendModule::get_kernel).
constexpr size_t kCallStackReserve = 48 * 1024;

// libffi may replace the avalue entries of aggregates it passes in memory with pointers to
// copies of its own (x86-64's libffi 3.4 does, for structs over 16 bytes), so a call of a
// kernel with aggregates gets a copy of the step's pointers: the shared ones stay the block's,
// and cores calling the kernel at once do not write them.
void call_libffi_copying(ffi_cif *cif, void *fn, void *const *avalues);

sk_status prepare_call(const Signature &sig, std::string_view kernel, std::unique_ptr<CallInterface> *out);

const char *call_kind_name(CallKind kind);  // "direct", "register map", "libffi"

// A step of a direct or mapped kernel with arguments read by reference
// (sk_kernel_options.arg_refs): their slots hold addresses, and each call loads the values
// into a copy of the step's slots first. (A libffi kernel needs none of this: libffi reads
// each value through its pointer, which for those is the address.)
struct StepRefs {
  CallKind kind = CallKind::Direct;  // Direct or Mapped
  const uint8_t *map = nullptr;      // Mapped: CallInterface::map
  bool stack = false;                // Mapped: the kernel has stack parameters
  uint32_t slots = 0;                // the step's slots: at most kCallMapEntries
  struct Ref {
    uint32_t slot;  // from the step's first
    ArgType type;   // a scalar: direct and mapped kernels take no aggregates
  };
  std::vector<Ref> refs;
};

// Calls `fn` with the argument slots `a`, the references of `r` read now.
void call_with_refs(void *fn, const uint64_t *a, const StepRefs &r);

// A mapped call of `fn` with the argument slots `a` (see CallInterface::map). Out of line:
// inlined into the step loop, its 22 loads and two call shapes make every step of a chain of
// direct calls slower (docs/benchmarks.md, "Kernel calls").
void call_mapped(void *fn, const uint64_t *a, const uint8_t *m, bool stack);

}  // namespace sk::host
