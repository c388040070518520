//===- AttncKernel.h - Compile an .attn kernel with attnc and load it -*- C++ -*-===//
//
// Each benchmarked kernel is cut out of bench/kernels.attn, compiled on its
// own by the attnc binary into a shared library (the compile is timed: that
// is attnc's compile time per kernel), dlopen'ed, and called through its
// plain-pointer entry point NAME_run. A kernel attnc cannot build yet yields
// a status and attnc's first diagnostic instead of an exception.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attnc_bench {

/// The text of `kernel NAME { ... }` in `fileText`, or "" (and `error`).
std::string extractKernel(const std::string &fileText, const std::string &name,
                          std::string &error);

class AttncKernel {
public:
  /// Compiles `source` (one kernel named `name`) in `dir` with `attnc`.
  /// `target`: attnc's --target (empty: host).
  AttncKernel(const std::string &attnc, const std::string &source, const std::string &target,
              const std::string &name, const std::string &dir);
  ~AttncKernel();
  AttncKernel(const AttncKernel &) = delete;
  AttncKernel &operator=(const AttncKernel &) = delete;

  /// "ok", "unsupported" (attnc reported errors in the input), "failed"
  /// (internal error, crash, timeout, missing entry point).
  const std::string &status() const { return statusText; }
  const std::string &message() const { return messageText; }
  double compileSeconds() const { return compileTime; }
  bool ok() const { return statusText == "ok"; }

  using Inputs = std::vector<std::pair<std::string, const void *>>;

  /// Calls NAME_run with the named inputs (in contract order), `out` and the
  /// dynamic sizes; returns NAME_run's result (0 on success), or -1000 when
  /// the entry point wants an argument `inputs` lacks (message() says which).
  /// Inputs and `out` point at f32 data or, for 16-bit tensors, uint16_t bits.
  /// `sizes`: other dynamic sizes by name (KV caches: Lmax, num_blocks,
  /// max_blocks). A cache input (k_cache, v_cache) is written in place.
  using Sizes = std::vector<std::pair<std::string, int64_t>>;
  int run(const Inputs &inputs, void *out, int64_t B, int64_t Lq, int64_t Lk,
          const Sizes &sizes = {});

  /// Sets the thread count of the Halide runtime inside the library (HL_NUM_THREADS
  /// does the same when set before the first run).
  void setThreads(int threads);

  /// Stops the thread pool of the Halide runtime inside the library, if it has one.
  void releaseThreads();

private:
  struct Param {
    std::string name;
    bool pointer;
  };
  bool readSignature(const std::string &dir, const std::string &name);

  std::string kernelName, statusText = "failed", messageText;
  double compileTime = 0;
  void *handle = nullptr;
  void *entry = nullptr;
  std::vector<Param> params;
  bool haveHeader = false;
};

} // namespace attnc_bench
