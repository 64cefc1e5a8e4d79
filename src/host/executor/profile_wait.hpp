// ProfileWait: charges the time of one runtime wait to the sub-kernel the core is running, for
// sk_profile_record::sync_wait_ns (scope option profiling=1). Put one in front of every wait a
// kernel's code can reach (sk_sync_all's barrier, the task-overlap waits, cross-core flags,
// events):
//
//     ProfileWait timed(ctx);
//     WaitResult r = wait_for(...);
//
// Waits outside the kernel's code (before its start, after its end) are not charged: the
// executor sets ctx.profile only between the two. With profiling off this is one branch on
// ctx.profile at each end, and no clock read.
#pragma once
#include <sk.h>

#include <cstdint>

#include "host/executor/core_context.hpp"
#include "host/executor/profiler.hpp"

namespace sk::host {

class ProfileWait {
 public:
  explicit ProfileWait(const CoreContext &ctx) : record_(ctx.profile) {
    if (record_) [[unlikely]]
      start_ = monotonic_ns();
  }
  ~ProfileWait() {
    if (record_) [[unlikely]]
      record_->sync_wait_ns += monotonic_ns() - start_;
  }
  ProfileWait(const ProfileWait &) = delete;
  ProfileWait &operator=(const ProfileWait &) = delete;

 private:
  sk_profile_record *record_;
  uint64_t start_ = 0;
};

}  // namespace sk::host
