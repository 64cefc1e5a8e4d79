// Side-by-side timing: every method of a row is sampled in turn, round after round, so that
// machine noise hits all of them alike; a row reports each method's median. Samples are warm
// (one untimed run first): the cost of waking sleeping threads is measured on its own.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace bench {

struct Method {
  std::string name;
  std::function<void()> run;  // runs the whole chain once
  // Pause after each sample so this method's idle threads stop spinning before the next one
  // is timed (libgomp spins for milliseconds by default); 0 for methods whose threads go
  // quiet within microseconds.
  std::chrono::milliseconds cooldown{0};
};

struct Row {
  std::vector<std::string> names;
  std::vector<double> median_ns;  // per kernel
};

// Median time per kernel of each method (`kernels` kernels per run) over `rounds` rounds.
Row measure(std::vector<Method> &methods, size_t kernels, int rounds);

double now_ns();

}  // namespace bench
