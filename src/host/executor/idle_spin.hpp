// How long an idle core spins for the next launch before it sleeps.
//
// A sleeping core costs the next launch a wake-up. An engine that works on the host between
// steps (a decode loop sampling its token) for longer than the spin pays it at every step
// (docs/benchmarks.md, "Host work between steps"). So the spin adapts, as Linux's
// guest halt-polling does: a core whose spin ran out, and that was then woken within `max`
// of going idle, next spins twice that idle time, so that launches coming at a steady pace
// find it awake; an idle time past `max` (the engine paused) sets the spin back to `base`.
// A core spins longer than `base` only while being woken early keeps showing it pays.
#pragma once
#include <algorithm>
#include <chrono>

namespace sk::host {

class IdleSpin {
 public:
  using nanoseconds = std::chrono::nanoseconds;
  // max <= base: a fixed spin of `base`.
  IdleSpin(nanoseconds base, nanoseconds max) : base_(base), max_(std::max(base, max)), window_(base) {}

  nanoseconds window() const { return window_; }  // the next idle wait's spin

  // An idle wait that spun window() first lasted `idle` until a launch came. Returns whether
  // the spin ran out (the core went to sleep, or was about to).
  bool observe(nanoseconds idle) {
    if (idle < window_) return false;  // caught while spinning: the window serves
    window_ = idle > max_ ? base_ : std::clamp(2 * idle, base_, max_);
    return true;
  }

 private:
  nanoseconds base_, max_, window_;
};

}  // namespace sk::host
