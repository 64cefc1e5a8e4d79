#include "host/kernel_call.hpp"

#include "core/error.hpp"

namespace sk::host {
namespace {
ffi_type *ffi_type_of(ArgType t) {
  switch (t) {
    case ArgType::Ptr: return &ffi_type_pointer;
    case ArgType::I8: return &ffi_type_sint8;
    case ArgType::U8: return &ffi_type_uint8;
    case ArgType::I16: return &ffi_type_sint16;
    case ArgType::U16: return &ffi_type_uint16;
    case ArgType::I32: return &ffi_type_sint32;
    case ArgType::U32: return &ffi_type_uint32;
    case ArgType::I64: return &ffi_type_sint64;
    case ArgType::U64: return &ffi_type_uint64;
    case ArgType::F32: return &ffi_type_float;
    case ArgType::F64: return &ffi_type_double;
  }
  return nullptr;
}
}  // namespace

sk_status prepare_call(const Signature &sig, std::string_view kernel,
                       std::unique_ptr<CallInterface> *out) {
  auto ci = std::make_unique<CallInterface>();
  for (ArgType t : sig) ci->types.push_back(ffi_type_of(t));
  ffi_status st = ffi_prep_cif(&ci->cif, FFI_DEFAULT_ABI, static_cast<unsigned>(sig.size()),
                               &ffi_type_void, ci->types.empty() ? nullptr : ci->types.data());
  if (st != FFI_OK)
    return fail(SK_ERR_UNSUPPORTED, "kernel '%.*s': libffi cannot prepare a call for (%s): status %d",
                (int)kernel.size(), kernel.data(), signature_to_string(sig).c_str(), (int)st);
#if defined(__x86_64__) || defined(__aarch64__)
  ci->direct = sig.size() <= kDirectArgs;
  for (ArgType t : sig) ci->direct &= t != ArgType::F32 && t != ArgType::F64;
#endif
  *out = std::move(ci);
  return SK_OK;
}

}  // namespace sk::host
