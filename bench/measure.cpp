#include "measure.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace bench {

double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Row measure(std::vector<Method> &methods, size_t kernels, int rounds) {
  // Repetitions per sample: enough runs for about 3 ms, from a 2 ms calibration batch (one
  // slow run must not decide it).
  std::vector<int> reps;
  for (Method &m : methods) {
    m.run();
    int n = 0;
    double t0 = now_ns(), t = 0;
    do {
      m.run();
      ++n;
      t = now_ns() - t0;
    } while (t < 2e6 && n < 100000);
    reps.push_back(std::clamp(static_cast<int>(3e6 / (t / n)), 1, 100000));
    std::this_thread::sleep_for(m.cooldown);
  }
  std::vector<std::vector<double>> samples(methods.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < methods.size(); ++i) {
      methods[i].run();  // warm: every method is timed with its threads awake
      double t0 = now_ns();
      for (int k = 0; k < reps[i]; ++k) methods[i].run();
      samples[i].push_back((now_ns() - t0) / reps[i] / static_cast<double>(kernels));
      std::this_thread::sleep_for(methods[i].cooldown);
    }
  }
  Row row;
  for (size_t i = 0; i < methods.size(); ++i) {
    std::vector<double> &s = samples[i];
    std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
    row.names.push_back(methods[i].name);
    row.median_ns.push_back(s[s.size() / 2]);
  }
  return row;
}

}  // namespace bench
