#include "host/executor/cpu_claims.hpp"

#include <algorithm>

namespace sk::host {

CpuClaims &CpuClaims::process() {
  // Never destroyed: an executor still alive at exit (a device in a static) gives its claims
  // back after every static destructor has run. Held across fork(): a device opened in a
  // forked child claims CPUs under mutex_, which another thread may hold at the fork.
  static CpuClaims *claims = [] {
    auto *made = new CpuClaims;
    hold_across_fork(made->mutex_, "CPU claims");
    return made;
  }();
  return *claims;
}

std::vector<int> CpuClaims::claim(const void *owner, const std::vector<int> &order, size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation_ != fork_generation()) {
    owners_.clear();
    generation_ = fork_generation();
  }
  owners_.push_back(Owner{owner, {}});
  Owner &me = owners_.back();
  if (!order.empty()) {
    // The claims on each CPU of `order`, counted once; then each core takes the least claimed,
    // the first in `order` among equals, and counts on it: the only executor gets order[0],
    // order[1], ... (core c on order[c], wrapping around with more cores than CPUs); a second
    // one starts where the first stopped.
    std::vector<size_t> claims(order.size(), 0);
    for (const Owner &o : owners_)
      for (int cpu : o.cpus)
        if (auto at = std::find(order.begin(), order.end(), cpu); at != order.end()) ++claims[at - order.begin()];
    for (size_t c = 0; c < count; ++c) {
      const size_t best = std::min_element(claims.begin(), claims.end()) - claims.begin();
      ++claims[best];
      me.cpus.push_back(order[best]);
    }
  }
  return me.cpus;
}

void CpuClaims::release(const void *owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  owners_.erase(std::remove_if(owners_.begin(), owners_.end(), [owner](const Owner &o) { return o.id == owner; }),
                owners_.end());
}

}  // namespace sk::host
