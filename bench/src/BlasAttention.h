//===- BlasAttention.h - The OpenBLAS sgemm + softmax + sgemm baseline -*- C++ -*-===//
//
// The strong baseline: scores by cblas_sgemm, a vectorized softmax, the
// weighted sum by cblas_sgemm, with heads (and query tiles) spread over the
// pool's threads and OpenBLAS single-threaded inside each call. Masked
// configurations only multiply the key range a query tile can see, so causal
// and windowed attention are not charged for hidden keys.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/src/Configs.h"
#include "bench/src/ThreadPool.h"

#include <memory>

namespace attnc_bench {

class BlasAttention {
public:
  /// Allocates the per-thread workspaces for `config` (outside any timing).
  BlasAttention(const Config &config, ThreadPool &pool);
  ~BlasAttention();

  /// out (shape outputShape(config)) = attention(inputs).
  void run(const std::vector<Tensor> &inputs, float *out);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Makes every OpenBLAS call run on its calling thread only; call once.
void blasUseOneThreadPerCall();

/// OpenBLAS's build configuration and the core it runs kernels for.
std::string blasDescription();

} // namespace attnc_bench
