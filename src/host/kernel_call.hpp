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

struct CallInterface {
  ffi_cif cif;
  std::vector<ffi_type *> types;  // cif points into this: the object never moves (heap only)
};

sk_status prepare_call(const Signature &sig, std::string_view kernel,
                       std::unique_ptr<CallInterface> *out);

}  // namespace sk::host
