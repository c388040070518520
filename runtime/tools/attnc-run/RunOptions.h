//===- RunOptions.h - attnc-run's command line --------------------*- C++ -*-===//
//
// The command line of attnc-run (docs/tools.md §4), parsed apart from
// running so that every usage error is found before any file is touched and
// reported with exit code 2.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attnc::run {

struct RunOptions {
  std::string library; // LIB.so or MODEL.attn
  std::string kernel;  // empty: the library's only kernel
  std::vector<std::pair<std::string, std::string>> inputs;  // ARG, FILE
  std::vector<std::pair<std::string, std::string>> outputs; // ARG, FILE
  /// In-out arguments (KV caches): read from FILE, written back after the run.
  std::vector<std::pair<std::string, std::string>> inouts; // ARG, FILE
  int bench = 0;    // timed runs; 0 = run once
  int threads = -1; // -1 = leave Halide's default
  bool raw = false;  // write 16-bit outputs as their own bits, not widened to f32
  bool list = false;
  bool verbose = false; // say whether a .attn came from the cache
  bool help = false;
  bool version = false;
};

/// Parses argv; false with a message on a usage error.
bool parseRunOptions(int argc, const char *const *argv, RunOptions &options,
                     std::string &error);

const char *runUsage();

} // namespace attnc::run
