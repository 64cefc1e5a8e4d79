// The programs of one kernel's unfused launches, kept for reuse. Building a one-step program
// (a plan, its lowering, the sync state) costs more than running it (docs/benchmarks.md,
// "OpenMP, a condition-variable pool, unfused launches"). A program whose launch has completed
// is as good as new for the next launch with the same block_dim, which only writes its
// arguments.
//
// Lock-free, as the launch path must be: the pool is kMaxPrograms slots, each a
// program and one atomic state word (empty, or the program's block_dim and whether it is free
// or taken). A launch takes a free program of its block_dim with one compare-and-swap of that
// word; the launch's completion gives it back with one store (the executor calls recycle).
// Programs stay in their slot: only the launch holding a program reads or writes it, so no
// program is freed while another thread may look at it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "host/executor/program.hpp"

namespace sk::host {

class ProgramPool {
 public:
  // Enough for a full executor ring of launches of one kernel.
  static constexpr uint32_t kMaxPrograms = 256;

  ProgramPool() = default;
  ~ProgramPool();
  ProgramPool(const ProgramPool &) = delete;
  ProgramPool &operator=(const ProgramPool &) = delete;

  // A program built for `block_dim` whose launches have all completed, now taken for one
  // launch; null when there is none. The one given back last is looked at first: a program
  // launched and waited for in a loop stays the same, with its counters in cache.
  Program *take(uint32_t block_dim);
  // Keeps `program`, just built for a launch (steps[0].block_dim), and returns it taken for that
  // launch. When no slot is empty, a free program of another block_dim gives its slot up;
  // when every program is taken, the pool declines: returns null and leaves `program` with
  // the caller (which launches it unpooled, to be freed when the launch completes).
  Program *adopt(std::unique_ptr<Program> &program);
  // Gives back a program `take` or `adopt` returned, once its launch completed (or was never
  // queued).
  void put(Program *program);
  // The executor's end of an unfused launch: `program` back to its pool, or `unpooled` (the
  // same program when the pool declined it) freed. The program's hold on its kernel
  // (Program::launched_kernel) goes last, after the pool is done with: it may be what keeps
  // the pool alive.
  static void recycle(Program *program, std::unique_ptr<Program> unpooled);

  // Programs kept (free or taken).
  size_t size() const;

 private:
  static constexpr uint64_t kFree = 1, kTaken = 2;
  static uint64_t state(uint32_t block_dim, uint64_t tag) { return uint64_t{block_dim} << 2 | tag; }
  struct Slot {
    std::atomic<uint64_t> state{0};    // 0: empty; else state(block_dim, kFree or kTaken)
    std::unique_ptr<Program> program;  // written only by whoever holds the slot taken
  };
  // kMaxPrograms slots, allocated by the first adopt: most kernels are never launched unfused.
  std::atomic<Slot *> slots_{nullptr};
  Slot *slots_for_adopt();
  std::atomic<uint32_t> claimed_{0};  // slots handed out to adopt, in order (may pass kMaxPrograms)
  std::atomic<uint32_t> hint_{0};     // where take looks first
};

}  // namespace sk::host
