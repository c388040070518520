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
#include <ctime>

namespace attnc_bench {

double nowSeconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

double processCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
  std::vector<double> times, cpuTimes;
  for (int r = 0; r < runs; ++r) {
    double c = processCpuSeconds();
    double s = nowSeconds();
    fn();
    times.push_back(nowSeconds() - s);
    cpuTimes.push_back(processCpuSeconds() - c);
  }
  t.cpuMedian = medianOf(cpuTimes);
  std::sort(times.begin(), times.end());
  t.runs = runs;
  t.min = times.front();
  t.max = times.back();
  t.median = runs % 2 ? times[runs / 2]
                      : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  return t;
}

PairTiming timeAlternately(const std::function<void()> &a, const std::function<void()> &b,
                           double targetSeconds) {
  auto once = [](const std::function<void()> &fn) {
    double s = nowSeconds();
    fn();
    return nowSeconds() - s;
  };
  double warm = once(a) + once(b);
  PairTiming t;
  t.rounds = std::max(11, std::min(201, int(std::ceil(targetSeconds / std::max(warm, 1e-6)))));
  std::vector<double> as, bs;
  for (int r = 0; r < t.rounds; ++r) {
    if (r % 2 == 0) {
      as.push_back(once(a));
      bs.push_back(once(b));
    } else {
      bs.push_back(once(b));
      as.push_back(once(a));
    }
  }
  t.aMedian = medianOf(as);
  t.bMedian = medianOf(bs);
  return t;
}

} // namespace attnc_bench
