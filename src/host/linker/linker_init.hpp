// What runs when a linked object comes and goes, as dlopen and dlclose would run it: its
// constructors and destructors (.init_array, .fini_array, .ctors, .dtors and their priority
// variants), the C++ static-object destructors registered with __cxa_atexit against the
// module's own __dso_handle, and the registration of its .eh_frame with the unwinder, so that
// exceptions thrown and caught inside the object work. Used by the linker (linker_init.cpp).
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>
#include <vector>

#include "elf/elf_object.hpp"

namespace sk::host {

// What a section holding code addresses to run is, by its name (and type).
struct InitSection {
  enum Kind { None, Init, Fini, Preinit } kind = None;
  // Order within its kind, as ld's SORT_BY_INIT_PRIORITY gives it: .init_array.N is N,
  // .ctors.N is 65535 - N (the old scheme counted down); the unnumbered ones come after all.
  uint32_t priority = 0;
  bool reversed = false;  // .ctors/.dtors: the old runtimes walked them backwards
};
InitSection init_section(const elf::Section &s);

// The unwind table the linker loads (and ends with a zero terminator, as crtend.o would).
bool is_eh_frame(const elf::Section &s);
constexpr uint64_t kEhFrameTerminator = 4;

// Why an undefined symbol no process exports cannot bind, for the message (nullptr: no
// particular reason). The coverage runtimes (--coverage objects) are hidden in every program.
const char *unbindable_runtime_symbol(const std::string &name);

// The per-module runtime state a LinkedObject keeps: torn down (destructors, __cxa_finalize,
// frame deregistration) before its code is unmapped.
class ModuleRuntime {
 public:
  struct Entry {
    void (*fn)() = nullptr;  // nullptr in `fini`: the __cxa_finalize of the module's handle
    std::string name;        // for messages: the function's symbol, or "entry N of SECTION"
  };
  std::string label;
  void *dso_handle = nullptr;  // the module's __dso_handle (a byte of its mapping)
  // The loaded .eh_frame sections (one per input object when several were combined), each
  // with its terminator; the first `registered` of them are registered.
  std::vector<void *> eh_frames;
  size_t registered = 0;
  std::vector<Entry> init, fini;  // in the order they run
  bool started = false;           // start() was called: the destructor undoes what it did
  bool constructed = false;       // every constructor returned: the destructors are due

  ModuleRuntime() = default;
  ModuleRuntime(const ModuleRuntime &) = delete;
  ModuleRuntime &operator=(const ModuleRuntime &) = delete;
  // Registers the unwind table, then runs the constructors in order. A constructor that throws
  // fails the load with SK_ERR_UNSUPPORTED naming it and the exception; what was constructed
  // until then is destroyed when this is.
  sk_status start();
  ~ModuleRuntime();
};

}  // namespace sk::host
