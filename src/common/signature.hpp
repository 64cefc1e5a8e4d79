// Kernel parameter lists: "ptr,ptr,i32" <-> ArgType vectors.
#pragma once
#include <sk.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sk {

enum class ArgType : unsigned char { Ptr, I8, U8, I16, U16, I32, U32, I64, U64, F32, F64 };

using Signature = std::vector<ArgType>;

// Parses a comma-separated list ("" = no parameters; spaces around tokens allowed).
// On failure names `what` (e.g. "kernel 'vadd'") and the bad token.
sk_status parse_signature(std::string_view text, std::string_view what, Signature *out);

size_t arg_size(ArgType t);
// The argument value at `value` widened to a 64-bit slot: integers sign- or zero-extended as
// their type says, floats and pointers as their bytes. Calls read the low bytes (libffi) or
// the whole slot (a direct call, which must pass narrow integers extended).
uint64_t to_slot(ArgType t, const void *value);
const char *arg_type_name(ArgType t);
std::string signature_to_string(const Signature &sig);

}  // namespace sk
