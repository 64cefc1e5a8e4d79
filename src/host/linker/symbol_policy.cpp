#include "host/linker/symbol_policy.hpp"

#include <dlfcn.h>

#include <string>

namespace sk::host {
namespace {

// C99 <math.h> functions (and GNU sincos/exp10): each also as its float (f) and long double (l)
// variant. Pure functions of their arguments (lgamma writes signgam, as in C).
constexpr std::string_view kMath[] = {
    "acos",  "asin",  "atan",      "atan2",  "cos",      "sin",    "tan",       "acosh",      "asinh",
    "atanh", "cosh",  "sinh",      "tanh",   "exp",      "exp2",   "expm1",     "frexp",      "ilogb",
    "ldexp", "log",   "log10",     "log1p",  "log2",     "logb",   "modf",      "scalbn",     "scalbln",
    "cbrt",  "fabs",  "hypot",     "pow",    "sqrt",     "erf",    "erfc",      "lgamma",     "tgamma",
    "ceil",  "floor", "nearbyint", "rint",   "lrint",    "llrint", "round",     "lround",     "llround",
    "trunc", "fmod",  "remainder", "remquo", "copysign", "nan",    "nextafter", "nexttoward", "fdim",
    "fmax",  "fmin",  "fma",       "sincos", "exp10",
};

// libc functions that only read and write the memory they are given: no allocation, I/O,
// locale, process state or callbacks. The _chk forms are what _FORTIFY_SOURCE emits.
constexpr std::string_view kLibc[] = {
    "memcpy", "memmove", "memset", "memcmp",  "memchr",       "strlen",        "strnlen",
    "strcmp", "strncmp", "strchr", "strrchr", "strstr",       "strspn",        "strcspn",
    "strcpy", "strncpy", "strcat", "strncat", "__memcpy_chk", "__memmove_chk", "__memset_chk",
};

// What compilers emit calls to on their own: 128-bit and complex arithmetic helpers, and the
// stack protector's failure handler (it aborts).
constexpr std::string_view kCompiler[] = {
    "__divti3",       "__udivti3", "__modti3",  "__umodti3", "__muldc3",         "__mulsc3",
    "__divdc3",       "__divsc3",  "__powisf2", "__powidf2", "__stack_chk_fail",
    "atexit",  // written into the module: __cxa_atexit with its own handle (host/linker/compiler_runtime.hpp)
    "__tls_get_addr",  // what general and local dynamic thread-local code calls (host/linker/tls_block.hpp)
};

// The C++ ABI's language support (libstdc++'s libsupc++ and the unwinder): static-object
// destructors, guarded function-local statics, exceptions, dynamic_cast and pure virtuals. The
// standard library itself (std::, operator new) is not in the list.
constexpr std::string_view kCxxRuntime[] = {
    "__cxa_atexit",
    "__cxa_guard_acquire",
    "__cxa_guard_release",
    "__cxa_guard_abort",
    "__cxa_pure_virtual",
    "__cxa_deleted_virtual",
    "__cxa_allocate_exception",
    "__cxa_free_exception",
    "__cxa_throw",
    "__cxa_rethrow",
    "__cxa_begin_catch",
    "__cxa_end_catch",
    "__cxa_get_exception_ptr",
    "__cxa_call_unexpected",
    "__cxa_bad_cast",
    "__cxa_bad_typeid",
    "__gxx_personality_v0",
    "_Unwind_Resume",
    "__dynamic_cast",
    "_ZSt9terminatev",  // std::terminate: what a noexcept function's landing pad calls
};

// The type_info vtables every polymorphic class's RTTI points at (_ZTVN10__cxxabiv117__class_
// type_infoE...), and the type_info of fundamental types and pointers to them (_ZTIi, _ZTIPKc),
// which `catch (int)` and typeid name.
bool is_cxx_type_info(std::string_view name) {
  if (name.substr(0, 17) == "_ZTVN10__cxxabiv1") return true;
  if (name.substr(0, 4) != "_ZTI") return false;
  std::string_view t = name.substr(4);
  if (t.substr(0, 2) == "PK")
    t.remove_prefix(2);
  else if (t.substr(0, 1) == "P")
    t.remove_prefix(1);
  if (t == "Dn" || t == "Ds" || t == "Di" || t == "Du") return true;  // nullptr_t, char16/32/8_t
  return t.size() == 1 && std::string_view("abcdefghijlmnostvwxy").find(t[0]) != std::string_view::npos;
}

bool in(std::string_view name, const std::string_view *begin, const std::string_view *end) {
  for (const std::string_view *p = begin; p != end; ++p)
    if (*p == name) return true;
  return false;
}

}  // namespace

bool is_libsk_host_api(const std::string &name) {
  if (name.compare(0, 3, "sk_") != 0) return false;
  const void *address = dlsym(RTLD_DEFAULT, name.c_str());
  if (!address) return false;
  // libsk's exports are its sk_* symbols (libsk.map): one that resolves into the object that
  // holds this function is one of them, whether libsk is a shared library or linked in.
  Dl_info self{}, found{};
  const void *anchor = reinterpret_cast<const void *>(&is_libsk_host_api);
  return dladdr(anchor, &self) != 0 && dladdr(address, &found) != 0 && self.dli_fbase == found.dli_fbase;
}

const char *symbol_policy_name(SymbolPolicy p) { return p == SymbolPolicy::Strict ? "strict" : "process"; }

bool strict_allows(std::string_view name) {
  if (in(name, std::begin(kLibc), std::end(kLibc)) || in(name, std::begin(kCompiler), std::end(kCompiler)))
    return true;
  if (in(name, std::begin(kMath), std::end(kMath))) return true;
  if (in(name, std::begin(kCxxRuntime), std::end(kCxxRuntime)) || is_cxx_type_info(name)) return true;
  // sinf, sinl: the float and long double variants of the math list.
  if (!name.empty() && (name.back() == 'f' || name.back() == 'l')) {
    std::string_view base = name.substr(0, name.size() - 1);
    // "modff" is modf's float variant; but "erf" itself ends in f and is listed whole above.
    if (in(base, std::begin(kMath), std::end(kMath))) return true;
  }
  return false;
}

}  // namespace sk::host
