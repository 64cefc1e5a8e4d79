#include "host/linker/compiler_runtime.hpp"

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

#if defined(__x86_64__)
// libgcc's cpuinfo.o (hidden in libgcc.a, so each program has its own): referencing them links
// it into libsk, with the constructor that fills them in. Declared with libgcc's layout, for
// their sizes: the vendor, type, subtype and first feature word, then the further feature words.
extern "C" {
extern struct { unsigned vendor, type, subtype, features[1]; } __cpu_model;
extern unsigned __cpu_features2[3];
int __cpu_indicator_init();
}
#endif

namespace sk::host {
namespace {

struct Helper {
  const char *name;
  void *address;
};
const Helper kHelpers[] = {
#if defined(__aarch64__)
#define SK_HELPER(name) {"__aarch64_" #name, reinterpret_cast<void *>(&__aarch64_##name)},
    SK_ALL_HELPERS
#undef SK_HELPER
#endif
#if defined(__x86_64__)
    {"__cpu_indicator_init", reinterpret_cast<void *>(&__cpu_indicator_init)},
#endif
    {nullptr, nullptr},
};

struct Variable {
  const char *name;
  const void *address;
  size_t size;
};
const Variable kVariables[] = {
#if defined(__x86_64__)
    {"__cpu_model", &__cpu_model, sizeof __cpu_model},
    {"__cpu_features2", __cpu_features2, sizeof __cpu_features2},
#endif
    {nullptr, nullptr, 0},
};

// glibc's libc_nonshared.a: atexit(f) is __cxa_atexit(f, NULL, __dso_handle) and
// pthread_atfork(prepare, parent, child) is __register_atfork(..., __dso_handle), whose handlers
// __cxa_finalize removes.
const ModuleForward kForwards[] = {
    {"atexit", "__cxa_atexit", 2, 1},
    {"pthread_atfork", "__register_atfork", 3, 3},
};

constexpr const char *kLibcNonshared = "glibc's libc_nonshared.a";
constexpr const char *kLibgcc = "libgcc.a (gcc's static runtime)";

struct Origin {
  std::string_view name;  // a whole name, or a prefix when it ends in '*'
  const char *origin;
};
const Origin kOrigins[] = {
    {"at_quick_exit", kLibcNonshared},
    {"__stack_chk_fail_local", kLibcNonshared},
    {"__libc_csu_init", kLibcNonshared},
    {"__libc_csu_fini", kLibcNonshared},
    {"__cpu_model", kLibgcc},
    {"__cpu_features2", kLibgcc},
    {"__cpu_indicator_init", kLibgcc},
    {"__aarch64_*", kLibgcc},
    {"__init_cpu_features*", kLibgcc},
    {"__morestack", kLibgcc},
};

}  // namespace

void *resolve_compiler_runtime(std::string_view name) {
  if (name.substr(0, 2) != "__") return nullptr;
  for (const Helper &h : kHelpers)
    if (h.name && name == h.name) return h.address;
  return nullptr;
}

const void *compiler_runtime_variable(std::string_view name, size_t *size) {
  for (const Variable &v : kVariables)
    if (v.name && name == v.name) {
      *size = v.size;
      return v.address;
    }
  return nullptr;
}

const ModuleForward *module_forward(std::string_view name) {
  for (const ModuleForward &f : kForwards)
    if (name == f.name) return &f;
  return nullptr;
}

const char *static_only_origin(std::string_view name) {
  for (const Origin &o : kOrigins) {
    const bool prefix = !o.name.empty() && o.name.back() == '*';
    if (prefix ? name.substr(0, o.name.size() - 1) == o.name.substr(0, o.name.size() - 1) : name == o.name)
      return o.origin;
  }
  return nullptr;
}

}  // namespace sk::host
