// Checks of rules whose effect the scheduler can only spoil. On a machine busy with other work
// a thread gets its CPU late, so one try can come out worse than the rule allows, never better:
// such a check runs tries until one meets its bound and asserts on the best try. A broken rule
// fails every try; a busy machine only some of them.
#pragma once
#include <algorithm>
#include <limits>

namespace sk::test {

// Enough tries that a machine loaded several times over by other processes still yields one
// undisturbed try; a try that meets its bound ends the check, so a quiet machine runs one.
inline constexpr int kSchedulerTries = 20;

// The smallest result of `trial()` (a count or a time), after tries until one is at most
// `bound` or kSchedulerTries ran.
template <class T, class Trial>
T fewest_until(T bound, Trial trial) {
  T best = std::numeric_limits<T>::max();
  for (int i = 0; i < kSchedulerTries && !(best <= bound); ++i) best = std::min<T>(best, trial());
  return best;
}

// True once `trial()` returns true, trying up to kSchedulerTries times.
template <class Trial>
bool some_try(Trial trial) {
  for (int i = 0; i < kSchedulerTries; ++i)
    if (trial()) return true;
  return false;
}

}  // namespace sk::test
