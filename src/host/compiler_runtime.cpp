#include "host/compiler_runtime.hpp"

#include <cstddef>

#if defined(__aarch64__)
// The helpers are hand-written assembly with their own calling convention (they clobber only
// x16, x17 and the flags), so only libgcc's own code will do: referencing each one here links it
// from libgcc.a into libsk. Models: relax, acq, rel, acq_rel, sync; sizes in bytes.
#define SK_MODELS(op, n)   \
  SK_HELPER(op##n##_relax) \
  SK_HELPER(op##n##_acq) SK_HELPER(op##n##_rel) SK_HELPER(op##n##_acq_rel) SK_HELPER(op##n##_sync)
#define SK_SIZES_1_8(op) SK_MODELS(op, 1) SK_MODELS(op, 2) SK_MODELS(op, 4) SK_MODELS(op, 8)
#define SK_ALL_HELPERS \
  SK_SIZES_1_8(cas)    \
  SK_MODELS(cas, 16)   \
  SK_SIZES_1_8(swp) SK_SIZES_1_8(ldadd) SK_SIZES_1_8(ldclr) SK_SIZES_1_8(ldeor) SK_SIZES_1_8(ldset)

extern "C" {
#define SK_HELPER(name) void __aarch64_##name();
SK_ALL_HELPERS
#undef SK_HELPER
}
#endif

namespace sk::host {
namespace {

#if defined(__aarch64__)
struct Helper {
  const char *name;
  void *address;
};
const Helper kHelpers[] = {
#define SK_HELPER(name) {"__aarch64_" #name, reinterpret_cast<void *>(&__aarch64_##name)},
    SK_ALL_HELPERS
#undef SK_HELPER
};
#endif

}  // namespace

void *resolve_compiler_runtime(std::string_view name) {
#if defined(__aarch64__)
  if (name.substr(0, 10) != "__aarch64_") return nullptr;
  for (const Helper &h : kHelpers)
    if (name == h.name) return h.address;
#else
  (void)name;
#endif
  return nullptr;
}

}  // namespace sk::host
