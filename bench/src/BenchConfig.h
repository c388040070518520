//===- BenchConfig.h - Check and time every implementation of one config -*- C++ -*-===//
//
// For one configuration: compile attnc's kernel, run attnc, the naive loop
// and OpenBLAS once each on the same inputs, compare every output with
// attnc's (or, when attnc cannot run it, with the naive loop's) and only then
// time them. Also leaves the inputs and the reference output as .npy files
// for the PyTorch baseline.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/src/Configs.h"
#include "bench/src/ThreadPool.h"
#include "bench/src/Timing.h"

#include <functional>
#include <set>
#include <string>

namespace attnc_bench {

struct Options {
  std::string attnc;        // attnc binary; empty: baselines only
  std::string kernelsText;  // contents of bench/kernels.attn
  std::string outDir;       // results folder of this run
  uint64_t seed = 20261121;
  int threads = 1;
  double naiveMaxFlops = 10e9; // the naive loop is timed only up to this work
  bool torchInputs = true;     // write work/<id>/*.npy for torch_baseline.py
  /// Rows whose kernel and inputs outlive benchConfig (ConfigResult::rerun).
  std::set<std::string> keep;
};

struct ImplResult {
  // "ok", "wrong" (disagrees with the reference), "unsupported", "failed",
  // "skipped"; `note` says why when not "ok".
  std::string status = "skipped";
  std::string note;
  double compileSeconds = -1; // attnc only
  bool timed = false;
  Timing timing;
  double maxErr = -1;         // against `checkedAgainst`; -1 when not checked
  std::string checkedAgainst;
};

struct ConfigResult {
  std::string checkRows;  // "all" or the rows the naive check covered
  double tolerance = 0;
  std::string refSource;  // what the PyTorch baseline is checked against
  /// Memory-bound rows: the read-bandwidth probe taken right before and right
  /// after attnc's timing, the better of the two (GB/s); 0 for other rows.
  double readGbs = 0;
  /// Paged caches: the same for a read of two arrays in pages of the cache's
  /// page size (block x D x element bytes) in a shuffled order.
  double pagedReadGbs = 0;
  ImplResult attnc, naive, blas;
  /// For rows in Options::keep whose attnc kernel ran right: one more call of
  /// it on the same inputs (it owns them), for timeAlternately.
  std::function<void()> rerun;
};

ConfigResult benchConfig(const Config &config, const Options &options,
                         ThreadPool &pool);

} // namespace attnc_bench
