//===- StageTimes.h - Where a compile spends its time -------*- C++ -*-===//
//
// `attnc --time-stages` (docs/tools.md §2): CPU and wall seconds of each
// stage of one compile, printed when it ends. A compile installs a
// StageTimes on its thread; StageTimer scopes anywhere below (the driver,
// the Halide back end) add to it, and cost nothing when none is installed.
// CPU time is the process's plus its children's (the C compiler that links
// a shared library).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace attnc {

class StageTimes {
public:
  /// Installs this collector on the calling thread until it dies.
  StageTimes();
  ~StageTimes();
  StageTimes(const StageTimes &) = delete;
  StageTimes &operator=(const StageTimes &) = delete;

  void add(const char *stage, double cpuSeconds, double wallSeconds);
  /// One row per stage in first-use order, shares of the total, and the
  /// process's CPU time so far (which includes loading the libraries).
  std::string report() const;
  /// The collector of the calling thread, or null.
  static StageTimes *current();

private:
  struct Row {
    std::string stage;
    double cpu = 0, wall = 0;
  };
  std::vector<Row> rows;
  StageTimes *outer;
};

/// Adds the time from its construction to its destruction to `stage`.
class StageTimer {
public:
  explicit StageTimer(const char *stage);
  ~StageTimer();
  StageTimer(const StageTimer &) = delete;
  StageTimer &operator=(const StageTimer &) = delete;

private:
  const char *stage;
  double cpu0 = 0, wall0 = 0;
};

} // namespace attnc
