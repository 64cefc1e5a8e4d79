#include "host/cpu_claims.hpp"

#include <algorithm>

namespace sk::host {

CpuClaims &CpuClaims::process() {
  // Never destroyed: an executor still alive at exit (a device in a static) gives its claims
  // back after every static destructor has run.
  static CpuClaims *claims = new CpuClaims;
  return *claims;
}

int CpuClaims::claims_on(int cpu) const {
  int n = 0;
  for (const Owner &o : owners_) n += static_cast<int>(std::count(o.cpus.begin(), o.cpus.end(), cpu));
  return n;
}

std::vector<int> CpuClaims::claim(const void *owner, const std::vector<int> &order, size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  owners_.push_back(Owner{owner, {}});
  Owner &me = owners_.back();
  if (!order.empty()) {
    // Ranked by claims (this owner's own included), then by place in `order`: the only
    // executor gets order[0], order[1], ... (core c on order[c], wrapping around with more
    // cores than CPUs); a second one starts where the first stopped.
    for (size_t c = 0; c < count; ++c) {
      size_t best = 0;
      int best_claims = claims_on(order[0]);
      for (size_t i = 1; i < order.size(); ++i)
        if (const int n = claims_on(order[i]); n < best_claims) {
          best = i;
          best_claims = n;
        }
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
