// How the host calls a kernel: a libffi call interface prepared once per kernel from its
// signature (kernels return void; the return value, if any, is dropped).
#pragma once
#include <ffi.h>
#include <sk.h>

#include <memory>
#include <string_view>
#include <vector>

#include "core/signature.hpp"

namespace sk::host {

// Kernels whose parameters are all pointers and integers, at most kDirectArgs of them, are
// called directly with kDirectArgs 64-bit register arguments (the SysV x86-64 and AAPCS64
// conventions pass them in x/r registers; a callee ignores the ones it does not take):
// no libffi on the launch path for the common shapes.
constexpr size_t kDirectArgs = 6;
using DirectFn = void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

struct CallInterface {
  bool direct = false;
  ffi_cif cif;
  std::vector<ffi_type *> types;  // cif points into this: the object never moves (heap only)
};

sk_status prepare_call(const Signature &sig, std::string_view kernel,
                       std::unique_ptr<CallInterface> *out);

}  // namespace sk::host
