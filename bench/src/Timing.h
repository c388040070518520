//===- Timing.h - Warm-up, repetitions and the median ------------*- C++ -*-===//
//
// Every implementation is timed the same way: warm-up runs first (at least
// one, more while they take under 0.2 s in total), then at least 5 timed runs,
// more for short kernels (about 1 s of runs, at most 101); the median is the
// result, the minimum and maximum show the spread. The process CPU time of
// each run is kept too: on a shared machine the wall time includes the time
// other processes held the cores, the CPU time does not.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <vector>

namespace attnc_bench {

struct Timing {
  double median = 0, min = 0, max = 0; // seconds of wall time
  double cpuMedian = 0;                // seconds of process CPU time (all threads)
  int runs = 0;
  int warmups = 0;
};

Timing timeIt(const std::function<void()> &fn, int minRuns = 5,
              double targetSeconds = 1.0);

/// Two implementations timed in alternation (a, b, b, a, ...: a trend in the
/// machine's speed falls on both alike), for a ratio that the drift between
/// rows timed minutes apart does not move. The medians of each one's runs.
struct PairTiming {
  double aMedian = 0, bMedian = 0;
  int rounds = 0;
};
PairTiming timeAlternately(const std::function<void()> &a, const std::function<void()> &b,
                           double targetSeconds = 2.0);

double nowSeconds();
/// CPU time of the whole process (every thread), in seconds.
double processCpuSeconds();

} // namespace attnc_bench
