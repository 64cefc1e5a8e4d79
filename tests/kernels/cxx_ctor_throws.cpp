// Linker test kernel: a static object whose constructor throws, after one that was constructed
// (its destructor runs when the load fails). cxx_ctor_event, when the host binds it, sees both.
#include <sk_kernel.h>
#include <stdint.h>

#include <stdexcept>

extern "C" __attribute__((weak)) void cxx_ctor_event(int32_t event);

namespace {

struct Logged {
  int32_t id;
  explicit Logged(int32_t i) : id(i) {
    if (cxx_ctor_event) cxx_ctor_event(i);
    if (i < 0) throw std::runtime_error("cxx_ctor_throws: refused to construct");
  }
  ~Logged() {
    if (cxx_ctor_event) cxx_ctor_event(1000 + id);
  }
};

Logged fine(1);
Logged broken(-1);

}  // namespace

SK_KERNEL(cxx_never_runs, "ptr")
SK_EXTERN_C void cxx_never_runs(int32_t *out) { out[0] = fine.id + broken.id; }
