#include "host/executor/program_pool.hpp"

#include <algorithm>

namespace sk::host {

ProgramPool::~ProgramPool() { delete[] slots_.load(std::memory_order_acquire); }

ProgramPool::Slot *ProgramPool::slots_for_adopt() {
  Slot *slots = slots_.load(std::memory_order_acquire);
  if (slots) return slots;
  auto fresh = std::make_unique<Slot[]>(kMaxPrograms);
  if (slots_.compare_exchange_strong(slots, fresh.get(), std::memory_order_acq_rel)) return fresh.release();
  return slots;  // another launch's adopt allocated them first
}

Program *ProgramPool::take(uint32_t block_dim) {
  Slot *slots = slots_.load(std::memory_order_acquire);
  const uint32_t used = std::min(claimed_.load(std::memory_order_acquire), kMaxPrograms);
  if (!slots || used == 0) return nullptr;
  const uint64_t free = state(block_dim, kFree);
  uint32_t i = hint_.load(std::memory_order_relaxed);
  if (i >= used) i = 0;
  for (uint32_t looked = 0; looked < used; ++looked, i = i + 1 == used ? 0 : i + 1) {
    uint64_t s = slots[i].state.load(std::memory_order_relaxed);
    if (s != free || !slots[i].state.compare_exchange_strong(s, state(block_dim, kTaken), std::memory_order_acquire,
                                                             std::memory_order_relaxed))
      continue;
    // Launches queued back to back take the slots in turn: the next one looks at the next slot.
    hint_.store(i + 1 == used ? 0 : i + 1, std::memory_order_relaxed);
    return slots[i].program.get();
  }
  return nullptr;
}

Program *ProgramPool::adopt(std::unique_ptr<Program> &program) {
  Slot *slots = slots_for_adopt();
  uint32_t i = claimed_.load(std::memory_order_relaxed) < kMaxPrograms
                   ? claimed_.fetch_add(1, std::memory_order_relaxed)
                   : kMaxPrograms;
  if (i >= kMaxPrograms) {
    // No slot left empty: take one whose program is free, of another block_dim (or of this
    // one, free again since take looked).
    for (i = 0; i < kMaxPrograms; ++i) {
      uint64_t s = slots[i].state.load(std::memory_order_relaxed);
      if ((s & 3) == kFree &&
          slots[i].state.compare_exchange_strong(s, (s & ~uint64_t{3}) | kTaken, std::memory_order_acquire,
                                                 std::memory_order_relaxed))
        break;
    }
    if (i == kMaxPrograms) return nullptr;  // every program is in a launch
  }
  // The slot is ours (empty, or taken above): its old program, if any, has completed its
  // launch and nobody else can take it now.
  Slot &slot = slots[i];
  const uint32_t block_dim = program->steps[0].block_dim;
  program->pool = this;
  program->pool_slot = i;
  slot.program = std::move(program);
  slot.state.store(state(block_dim, kTaken), std::memory_order_release);
  return slot.program.get();
}

void ProgramPool::put(Program *program) {
  // Nothing of the program is read past the store that frees its slot: from then on an adopt
  // may give the slot to another program and free this one.
  const uint32_t i = program->pool_slot;
  const uint64_t free = state(program->steps[0].block_dim, kFree);
  hint_.store(i, std::memory_order_relaxed);
  slots_.load(std::memory_order_relaxed)[i].state.store(free, std::memory_order_release);
}

void ProgramPool::recycle(Program *program, std::unique_ptr<Program> unpooled) {
  std::shared_ptr<const void> kernel = std::move(program->launched_kernel);
  if (unpooled)
    unpooled.reset();
  else if (program->pool)
    program->pool->put(program);
}

size_t ProgramPool::size() const { return std::min(claimed_.load(std::memory_order_acquire), kMaxPrograms); }

}  // namespace sk::host
