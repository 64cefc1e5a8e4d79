// The function of a TLS descriptor whose variable lies in a block glibc allocates per thread on
// demand (a module outside its static TLS space), as ld.so's _dl_tlsdesc_dynamic: the
// descriptor's argument points to a {module id, offset} pair, and the call returns
// __tls_get_addr(pair) minus the thread pointer, every other register as it was.
#pragma once
#include <cstdint>

namespace sk::host {

// Its address, or 0 where libsk has none for this machine (x86-64: code compiled with
// -mtls-dialect=gnu2 uses static TLS, as glibc's before 2.39 did for lack of one that saves
// every vector register).
uint64_t tlsdesc_dynamic();

}  // namespace sk::host
