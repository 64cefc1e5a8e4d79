// What a kernel object's undefined symbols may bind to (device spec key `symbols=`).
//   process (default): anything the process defines, like dlopen would.
//   strict: only the device API, libm, and a fixed list of libc memory/string functions,
//           compiler helpers and the C++ ABI runtime (docs/conventions.md lists them). It narrows what an object can
//           reach; it is not a sandbox (the object's own code still runs with the process's
//           rights).
#pragma once
#include <string>
#include <string_view>

namespace sk::host {

enum class SymbolPolicy { Process, Strict };

const char *symbol_policy_name(SymbolPolicy p);  // "process", "strict"

// Whether `symbols=strict` lets an object bind `name` to the process's symbols (the device API
// is bound before this is asked).
bool strict_allows(std::string_view name);

// Whether `name` is one of libsk's own host API functions: an sk_* symbol the process resolves
// into the library this code is in. The device API is bound before this is
// asked, so what it matches is the rest of sk.h: a kernel calling it would wait on the very
// launch that runs it, so objects may not bind it under any policy.
bool is_libsk_host_api(const std::string &name);

}  // namespace sk::host
