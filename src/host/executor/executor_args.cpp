// A program's two argument blocks, and rebinding one argument while other threads launch the
// program (Program::args): a launch takes the block Program::args names in its turn to queue,
// so a rebind that names the other block and then takes a turn of its own has every launch
// queued after it see the new block, and every launch that may have taken the old one queued,
// to wait for before that block is written again.
#include <cstring>

#include "host/executor/executor.hpp"
#include "host/executor/kernel_call.hpp"

namespace sk::host {

void Program::allocate_args(std::vector<ArgParam> params, size_t slots) {
  // Padded: a direct call reads kDirectArgs slots from its first, past the last step's too.
  const size_t padded = slots + kDirectArgs;
  arg_params = std::move(params);
  const size_t count = arg_params.size();
  arg_storage.assign(2 * padded, 0);
  arg_pointer_storage.assign(2 * count, nullptr);
  for (size_t b = 0; b < 2; ++b) {
    arg_blocks[b].slots = arg_storage.data() + b * padded;
    arg_blocks[b].pointers = arg_pointer_storage.data() + b * count;
  }
  args.store(&arg_blocks[0], std::memory_order_relaxed);
  arg_differs = kNoParam;
}

void Program::point_args() {
  for (ArgBlock &b : arg_blocks)
    for (size_t i = 0; i < arg_params.size(); ++i) {
      uint64_t *first = &b.slots[arg_params[i].first_slot];
      b.pointers[i] = arg_params[i].ref ? reinterpret_cast<void *>(*first) : first;
    }
}

void Program::allocate_args(size_t count) {
  std::vector<ArgParam> params(count);
  for (size_t i = 0; i < count; ++i) params[i].first_slot = static_cast<uint32_t>(i);
  allocate_args(std::move(params), count);
  point_args();
}

void Executor::wait_for_submitters() {
  if (forked_away()) return;  // the launches in flight are the parent's
  const uint32_t ticket = next_ticket_.fetch_add(1, std::memory_order_relaxed);
  if (turn_.load(std::memory_order_acquire) != ticket)
    wait_for(turn_, turn_channel_, idle_policy_, [ticket](uint32_t turn) { return turn == ticket; });
  turn_.store(ticket + 1, std::memory_order_release);
  notify(&turn_, turn_channel_);
}

void Executor::rebind_arg(Program *p, uint32_t param, const uint64_t *values) {
  // In a forked child a rebind the fork interrupted holds a turn that would never pass.
  const bool take_turns = !forked_away();
  const uint32_t ticket = take_turns ? p->rebind_ticket.fetch_add(1, std::memory_order_relaxed) : 0;
  if (take_turns && p->rebind_turn.load(std::memory_order_acquire) != ticket)
    wait_for(p->rebind_turn, p->rebind_channel, idle_policy_, [ticket](uint32_t turn) { return turn == ticket; });
  const ArgBlock *current = p->args.load(std::memory_order_relaxed);
  ArgBlock &spare = current == &p->arg_blocks[0] ? p->arg_blocks[1] : p->arg_blocks[0];
  // The spare block is what `current` was before the last rebind: it lacks that rebind's value.
  // A parameter's pointer changes only when it is read by reference (its address is the value).
  if (p->arg_differs != Program::kNoParam) {
    const ArgParam &d = p->arg_params[p->arg_differs];
    std::memcpy(&spare.slots[d.first_slot], &current->slots[d.first_slot], d.slots * sizeof(uint64_t));
    if (d.ref) spare.pointers[p->arg_differs] = current->pointers[p->arg_differs];
  }
  const ArgParam &a = p->arg_params[param];
  std::memcpy(&spare.slots[a.first_slot], values, a.slots * sizeof(uint64_t));
  if (a.ref) spare.pointers[param] = reinterpret_cast<void *>(values[0]);
  p->arg_differs = param;
  p->args.store(&spare, std::memory_order_release);
  // Launches queued from now on run with `spare`; once those in flight are queued, every
  // launch that may run with `current` is in wait_program's count.
  wait_for_submitters();
  wait_program(p);
  if (!take_turns) return;
  p->rebind_turn.store(ticket + 1, std::memory_order_release);
  notify(&p->rebind_turn, p->rebind_channel);
}

}  // namespace sk::host
