// The programs of one kernel's unfused launches, kept for reuse. Building a one-step program
// (a plan, its lowering, the sync state) cost more than running it: on 2 cores, 16 launches
// and a synchronize took 850 ns per launch to queue and 480 to run. A program whose launch has
// completed is as good as new for the next launch with the same block_dim, which only writes
// its arguments (60 ns to queue, 180 to run). The executor hands an owned program back here
// when its launch completes (Program::pool); the pool holds at most kMaxPrograms, the oldest
// dropped first.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "host/program.hpp"

namespace sk::host {

class ProgramPool {
 public:
  // Enough for a full executor ring of launches of one kernel.
  static constexpr size_t kMaxPrograms = 256;

  ProgramPool() = default;
  ProgramPool(const ProgramPool &) = delete;
  ProgramPool &operator=(const ProgramPool &) = delete;

  // A program built for `block_dim` whose launches have all completed, or null.
  std::unique_ptr<Program> take(uint32_t block_dim);
  // Keeps `program` (built for this pool's kernel, no launch of it queued) for take.
  void put(std::unique_ptr<Program> program);
  // The executor's end of an owned program's launch: back to program->pool, or freed when it
  // has none. The program's hold on its kernel (Program::launched_kernel) goes last, after the
  // pool is done with: it may be what keeps the pool alive.
  static void recycle(std::unique_ptr<Program> program);

  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Program>> free_;  // oldest first
};

}  // namespace sk::host
