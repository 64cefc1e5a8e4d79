#include "host/program_pool.hpp"

#include <cstddef>

namespace sk::host {

std::unique_ptr<Program> ProgramPool::take(uint32_t block_dim) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Newest first: a kernel is usually launched with one or two block dims, and the newest
  // program is the one most likely still in cache.
  for (size_t i = free_.size(); i-- > 0;) {
    if (free_[i]->steps[0].block_dim != block_dim) continue;
    std::unique_ptr<Program> p = std::move(free_[i]);
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
    return p;
  }
  return nullptr;
}

void ProgramPool::put(std::unique_ptr<Program> program) {
  std::unique_ptr<Program> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.size() >= kMaxPrograms) {
    dropped = std::move(free_.front());
    free_.erase(free_.begin());
  }
  free_.push_back(std::move(program));
}

void ProgramPool::recycle(std::unique_ptr<Program> program) {
  std::shared_ptr<const void> kernel = std::move(program->launched_kernel);
  if (ProgramPool *pool = program->pool)
    pool->put(std::move(program));
  else
    program.reset();
}

size_t ProgramPool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_.size();
}

}  // namespace sk::host
