//===- Timing.cpp - Warm-up, repetitions and the median -------------------===//
//
// The median, not the mean: the machine is shared and a run that another
// process interrupted should not move the result.
//
//===----------------------------------------------------------------------===//
#include "bench/src/Timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace attnc_bench {

double nowSeconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

Timing timeIt(const std::function<void()> &fn, int minRuns, double targetSeconds) {
  Timing t;
  double warmStart = nowSeconds(), last = 0;
  do {
    double s = nowSeconds();
    fn();
    last = nowSeconds() - s;
    ++t.warmups;
  } while (nowSeconds() - warmStart < 0.2 && t.warmups < 50);
  int runs = minRuns;
  if (last > 0)
    runs = std::max(minRuns, std::min(101, int(std::ceil(targetSeconds / last))));
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    double s = nowSeconds();
    fn();
    times.push_back(nowSeconds() - s);
  }
  std::sort(times.begin(), times.end());
  t.runs = runs;
  t.min = times.front();
  t.max = times.back();
  t.median = runs % 2 ? times[runs / 2]
                      : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  return t;
}

} // namespace attnc_bench
