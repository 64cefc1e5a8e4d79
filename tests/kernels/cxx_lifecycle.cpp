// Linker test kernel: what a C++ object runs at load and unload. Constructors by priority
// (init_priority, constructor(N)) and unnumbered ones, an old-style .ctors/.dtors list, static
// objects whose destructors go through __cxa_atexit, a function-local static with a
// destructor. Every event is logged, into the object's own list until the host attaches its
// buffer (cxx_attach_log), then into the host's: the destructors that run at unload are seen.
#include <sk_kernel.h>
#include <stdint.h>

namespace {

int32_t early[64];
int32_t early_count;
int32_t *host_log;  // host_log[0]: the number of events after it

void log_event(int32_t e) {
  if (host_log) host_log[1 + host_log[0]++] = e;
  else if (early_count < 64) early[early_count++] = e;
}

struct Logged {
  int32_t id;
  explicit Logged(int32_t i) : id(i) { log_event(i); }
  ~Logged() { log_event(-id); }
};

Logged first __attribute__((init_priority(101)))(101);
Logged plain(1000);
Logged late __attribute__((init_priority(65000)))(65000);

__attribute__((constructor(102))) void ctor_102() { log_event(102); }
__attribute__((destructor(102))) void dtor_102() { log_event(-102); }
__attribute__((constructor)) void ctor_plain() { log_event(2000); }
__attribute__((destructor)) void dtor_plain() { log_event(-2000); }

void old_ctor_a() { log_event(3001); }
void old_ctor_b() { log_event(3002); }
void old_dtor_a() { log_event(-3001); }
void old_dtor_b() { log_event(-3002); }
// Aligned as one pointer: a 16-aligned array (what gcc gives it) would leave a null entry of
// padding between it and the list before it in a linked .fini_array.
__attribute__((section(".ctors"), used, aligned(8))) void (*old_ctors[])() = {old_ctor_a, old_ctor_b};
__attribute__((section(".dtors"), used, aligned(8))) void (*old_dtors[])() = {old_dtor_a, old_dtor_b};

volatile int32_t seed = 40;  // not a constant: the local static below needs its guard

struct Counter {
  int32_t value;
  Counter() : value(seed) { log_event(4000); }
  ~Counter() { log_event(-4000); }
};

Counter &counter() {
  static Counter c;  // __cxa_guard_acquire, then __cxa_atexit at the first call
  return c;
}

}  // namespace

SK_KERNEL(cxx_attach_log, "ptr")
SK_EXTERN_C void cxx_attach_log(int32_t *log) {
  log[0] = 0;
  for (int32_t i = 0; i < early_count; ++i) log[1 + log[0]++] = early[i];
  host_log = log;
}

SK_KERNEL(cxx_local_static, "ptr")
SK_EXTERN_C void cxx_local_static(int32_t *out) { out[0] = ++counter().value; }
