// Kernel parameter lists: "ptr,{f32,f32},i32" <-> ParamType vectors, and how a value of each
// type sits in the 8-byte argument slots that launches copy and rebind.
#pragma once
#include <sk.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sk {

enum class ArgType : unsigned char { Ptr, I8, U8, I16, U16, I32, U32, I64, U64, F32, F64, Struct };

// An aggregate's bytes at most, and how deep aggregates may nest: a kernel's structs fit (CUDA
// 12.1's 32764 bytes of parameters: PyTorch's multi-tensor kernels take one of 23-27 KB, NCCL's
// one of 4096), and a mistyped or hostile signature cannot ask for megabytes of slots per launch.
constexpr size_t kMaxAggregateBytes = 32768;
constexpr size_t kMaxAggregateDepth = 8;
// The most an aggregate's `@N` may align it: a CUDA tensor map (CUtensorMap) asks 64 or 128.
constexpr size_t kMaxAggregateAlign = 256;
static_assert(kMaxAggregateBytes % kMaxAggregateAlign == 0,
              "an aggregate of the most bytes is never padded past them");

// One parameter's type, or one member's inside an aggregate: a scalar, or an aggregate
// ("{f32,f32}") passed by value, laid out as C lays out a struct of these members (each at its
// natural alignment, the size rounded up to the largest). A member may be an array ("i32[5]").
struct ParamType {
  ArgType type = ArgType::Ptr;
  uint32_t count = 1;  // members only: an array of `count` elements
  uint32_t size = 0;   // one element's bytes (an aggregate's with its tail padding)
  uint32_t align = 1;
  std::vector<ParamType> fields;  // Struct: the members, in order

  ParamType() = default;
  ParamType(ArgType scalar);  // NOLINT(google-explicit-constructor): a scalar is a type
  bool is_struct() const { return type == ArgType::Struct; }
  bool operator==(const ParamType &) const = default;
};

using Signature = std::vector<ParamType>;

// Parses a comma-separated list ("" = no parameters; spaces around tokens allowed).
// On failure names `what` (e.g. "kernel 'vadd'"), the parameter and the bad token.
sk_status parse_signature(std::string_view text, std::string_view what, Signature *out);

size_t arg_size(const ParamType &t);  // bytes of a value (an array member: all its elements)
// The argument value at `value` widened to a 64-bit slot: integers sign- or zero-extended as
// their type says, floats and pointers as their bytes. Calls read the low bytes (libffi) or
// the whole slot (a direct call, which must pass narrow integers extended).
uint64_t to_slot(ArgType t, const void *value);
// Slots a value of `t` takes: one for a scalar, an aggregate's bytes in 8-byte slots (zero
// past its size), so that the slots hold it as C lays it out, 8-aligned.
size_t slot_count(const ParamType &t);
// Each parameter's first slot, counted from the signature's first, then the total. A
// parameter aligned beyond 8 bytes (`@64`) starts on a slot of its alignment, the slots
// skipped zero: its bytes are aligned wherever the signature's first slot is aligned to
// signature_slot_align slots (a CUDA entry's parameter space, where a tensor map is read).
std::vector<uint32_t> slot_offsets(const Signature &sig);
size_t signature_slots(const Signature &sig);  // slot_offsets(sig).back()
size_t signature_slot_align(const Signature &sig);
// `value` (as C lays out a value of `t`) into slot_count(t) slots at `out`.
void to_slots(const ParamType &t, const void *value, uint64_t *out);
const char *arg_type_name(ArgType t);  // a scalar's token; "{...}" for an aggregate
std::string type_to_string(const ParamType &t);
std::string signature_to_string(const Signature &sig);

}  // namespace sk
