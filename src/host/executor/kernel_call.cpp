#include "host/executor/kernel_call.hpp"

#include <cstring>

#include "common/error.hpp"

namespace sk::host {
namespace {
ffi_type *scalar_ffi_type(ArgType t) {
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
    case ArgType::Struct: break;
  }
  return nullptr;
}

// An aggregate's FFI_TYPE_STRUCT, kept in `ci`; libffi fills its size and alignment.
ffi_type *ffi_type_of(const ParamType &t, CallInterface *ci) {
  if (!t.is_struct()) return scalar_ffi_type(t.type);
  size_t n = 0;
  for (const ParamType &f : t.fields) n += f.count;
  auto elements = std::make_unique<ffi_type *[]>(n + 1);
  size_t e = 0;
  for (const ParamType &f : t.fields) {
    ffi_type *ft = ffi_type_of(f, ci);
    for (uint32_t c = 0; c < f.count; ++c) elements[e++] = ft;
  }
  elements[n] = nullptr;
  auto agg = std::make_unique<ffi_type>();
  agg->size = 0;
  agg->alignment = 0;
  agg->type = FFI_TYPE_STRUCT;
  agg->elements = elements.get();
  ci->elements.push_back(std::move(elements));
  ci->aggregates.push_back(std::move(agg));
  return ci->aggregates.back().get();
}

// An upper bound of a call's stack use for its parameters. libffi 3.4 passes x86-64 aggregates
// of the MEMORY class in the stack area cif->bytes counts, after copying large ones (ffi_call,
// kernel_call.hpp), and AAPCS64 ones over 16 bytes by reference; every aggregate is counted
// once more for those copies, beside a register block (kLibffiFrame) and our avalues copy.
size_t call_stack_bytes(const ffi_cif &cif, const Signature &sig) {
  constexpr size_t kLibffiFrame = 512;
  size_t bytes = cif.bytes + kLibffiFrame + sig.size() * sizeof(void *);
  for (const ParamType &t : sig)
    if (t.is_struct()) bytes += (t.size + 15) & ~size_t{15};
  return bytes;
}

bool is_fp(ArgType t) { return t == ArgType::F32 || t == ArgType::F64; }

// Direct when every parameter is an integer or pointer and there are at most kDirectArgs;
// otherwise mapped when the registers and kStackWords stack words hold every parameter (see
// kernel_call.hpp); otherwise libffi.
void plan_call(const Signature &sig, CallInterface *ci) {
  size_t ints = 0, fps = 0, words = 0;
  for (const ParamType &t : sig) {
    if (t.is_struct()) return;  // registers by the aggregate's classification: libffi's
    (is_fp(t.type) ? fps : ints)++;
  }
  if (fps == 0 && ints <= kDirectArgs) {
    ci->kind = CallKind::Direct;
    return;
  }
  ints = fps = 0;  // ci->map starts all zero: unused entries carry slot 0
  for (size_t i = 0; i < sig.size(); ++i) {
    size_t entry;
    if (!is_fp(sig[i].type) && ints < kIntRegs)
      entry = ints++;
    else if (is_fp(sig[i].type) && fps < kFpRegs)
      entry = kIntRegs + fps++;
    else if (words < kStackWords)
      entry = kIntRegs + kFpRegs + words++;
    else
      return;  // more than the mapped call passes: libffi
    ci->map[entry] = static_cast<uint8_t>(i);
  }
  ci->kind = CallKind::Mapped;
  ci->stack_words = static_cast<uint8_t>(words);
}
}  // namespace

sk_status prepare_call(const Signature &sig, std::string_view kernel, std::unique_ptr<CallInterface> *out) {
  auto ci = std::make_unique<CallInterface>();
  for (const ParamType &t : sig) ci->types.push_back(ffi_type_of(t, ci.get()));
  ffi_status st = ffi_prep_cif(&ci->cif, FFI_DEFAULT_ABI, static_cast<unsigned>(sig.size()), &ffi_type_void,
                               ci->types.empty() ? nullptr : ci->types.data());
  if (st != FFI_OK)
    return fail(SK_ERR_UNSUPPORTED, "kernel '%.*s': libffi cannot prepare a call for (%s): status %d",
                (int)kernel.size(), kernel.data(), signature_to_string(sig).c_str(), (int)st);
  // libffi lays aggregates out as C does, as the signature does: a difference would pass
  // members at the wrong offsets, so it is refused rather than called.
  for (size_t i = 0; i < sig.size(); ++i)
    if (sig[i].is_struct() && (ci->types[i]->size != sig[i].size || ci->types[i]->alignment != sig[i].align))
      return fail(SK_ERR_UNSUPPORTED,
                  "kernel '%.*s': parameter %zu %s: libffi lays it out in %zu bytes aligned to %u, the signature in "
                  "%u aligned to %u",
                  (int)kernel.size(), kernel.data(), i, type_to_string(sig[i]).c_str(), ci->types[i]->size,
                  (unsigned)ci->types[i]->alignment, sig[i].size, sig[i].align);
  ci->stack_bytes = call_stack_bytes(ci->cif, sig);
#if defined(__x86_64__) || defined(__aarch64__)
  plan_call(sig, ci.get());
#endif
  *out = std::move(ci);
  return SK_OK;
}

void call_mapped(void *fn, const uint64_t *a, const uint8_t *m, bool stack) {
  auto fp = [a](uint8_t i) {
    double d;
    std::memcpy(&d, &a[i], sizeof d);  // the slot's bits, moved as they are
    return d;
  };
#if defined(__aarch64__)
#define SK_INT_REGS a[m[0]], a[m[1]], a[m[2]], a[m[3]], a[m[4]], a[m[5]], a[m[6]], a[m[7]]
#define SK_INT_TYPES uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t
#else
#define SK_INT_REGS a[m[0]], a[m[1]], a[m[2]], a[m[3]], a[m[4]], a[m[5]]
#define SK_INT_TYPES uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t
#endif
  constexpr size_t f = kIntRegs, w = kIntRegs + kFpRegs;
  using RegsFn = void (*)(SK_INT_TYPES, double, double, double, double, double, double, double, double);
  using StackFn = void (*)(SK_INT_TYPES, double, double, double, double, double, double, double, double, uint64_t,
                           uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
  if (!stack)
    reinterpret_cast<RegsFn>(fn)(SK_INT_REGS, fp(m[f]), fp(m[f + 1]), fp(m[f + 2]), fp(m[f + 3]), fp(m[f + 4]),
                                 fp(m[f + 5]), fp(m[f + 6]), fp(m[f + 7]));
  else
    reinterpret_cast<StackFn>(fn)(SK_INT_REGS, fp(m[f]), fp(m[f + 1]), fp(m[f + 2]), fp(m[f + 3]), fp(m[f + 4]),
                                  fp(m[f + 5]), fp(m[f + 6]), fp(m[f + 7]), a[m[w]], a[m[w + 1]], a[m[w + 2]],
                                  a[m[w + 3]], a[m[w + 4]], a[m[w + 5]], a[m[w + 6]], a[m[w + 7]]);
#undef SK_INT_REGS
#undef SK_INT_TYPES
}

void call_with_refs(void *fn, const uint64_t *a, const StepRefs &r) {
  // A direct call reads kDirectArgs slots (the blocks are padded past the last step's for it), a
  // mapped one only those its map names: the copy needs no zeroing.
  static_assert(kCallMapEntries >= kDirectArgs);
  uint64_t v[kCallMapEntries];
  std::memcpy(v, a, (r.kind == CallKind::Direct ? kDirectArgs : r.slots) * sizeof(uint64_t));
  for (const StepRefs::Ref &ref : r.refs)
    v[ref.slot] = to_slot(ref.type, reinterpret_cast<const void *>(a[ref.slot]));
  if (r.kind == CallKind::Direct)
    reinterpret_cast<DirectFn>(fn)(v[0], v[1], v[2], v[3], v[4], v[5]);
  else
    call_mapped(fn, v, r.map, r.stack);
}

void call_libffi_copying(ffi_cif *cif, void *fn, void *const *avalues) {
  // On the stack: the step loop allocates nothing (tests/cpp/launch_path).
  void **copy = static_cast<void **>(__builtin_alloca(cif->nargs * sizeof(void *)));
  std::memcpy(copy, avalues, cif->nargs * sizeof(void *));
  ffi_arg ret;
  ffi_call(cif, FFI_FN(fn), &ret, copy);
}

const char *call_kind_name(CallKind kind) {
  switch (kind) {
    case CallKind::Direct: return "direct";
    case CallKind::Mapped: return "register map";
    case CallKind::Libffi: return "libffi";
  }
  return "?";
}

}  // namespace sk::host
