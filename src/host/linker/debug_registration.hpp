// Makes a linked object's functions known to GDB through its JIT interface ("JIT Compilation
// Interface" in the GDB manual): an in-memory ELF naming every function of the object at its
// linked address, registered while the object is loaded, so that backtraces through kernels
// name them.
//
// libsk defines the interface's two symbols itself (exported from libsk.so, see libsk.map) and
// binds to its own definitions, never to another JIT's (LLVM's ORC defines them too): a shared
// descriptor would be changed under two unrelated locks. GDB reads the descriptor of every
// library that defines one (GDB 13 does: a process with another JIT's descriptor loaded first
// still gets libsk's functions named).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "host/linker/linker.hpp"

namespace sk::host {

class DebugRegistration {
 public:
  // Registers the functions of `object`; nullptr when it has no code (nothing to name) or the
  // memory for the description cannot be had (debuggers then see an unnamed region; the load
  // goes on).
  static std::unique_ptr<DebugRegistration> create(const LinkedObject &object) noexcept;
  ~DebugRegistration();  // unregisters
  DebugRegistration(const DebugRegistration &) = delete;
  DebugRegistration &operator=(const DebugRegistration &) = delete;

  // The in-memory ELF GDB is given: for tests.
  const std::vector<uint8_t> &symfile() const { return symfile_; }

  struct Entry {  // GDB's struct jit_code_entry, layout fixed by GDB
    Entry *next_entry;
    Entry *prev_entry;
    const char *symfile_addr;
    uint64_t symfile_size;
  };

 private:
  DebugRegistration() = default;
  std::vector<uint8_t> symfile_;
  Entry entry_{};
};

}  // namespace sk::host
