//===- Rotary.h - Rotary position embeddings for the baselines -*- C++ -*-===//
//
// The baselines' version of `positional = rotary` (half style, base 10000,
// every channel): rotated copies of q (at positions ip = i + Lk - Lq) and k
// (at j), made before the attention as a framework would.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/src/Configs.h"
#include "bench/src/ThreadPool.h"

namespace attnc_bench {

/// cos and sin of t * 10000^(-2c/D) for positions t in [0, L) and pairs c in
/// [0, D/2), one row per position: made once per configuration, outside the
/// timed runs, as Hugging Face caches `cos_cached` / `sin_cached`.
struct RotaryTable {
  RotaryTable(int64_t L, int64_t D, ThreadPool &pool);
  int64_t half;
  std::vector<float> cosT, sinT;
};

/// q and k of `inputs` (bhsd, Kind::Sdpa) rotated into `q` and `k`, which
/// must hold as many floats as the inputs; `table` covers Lk positions.
void rotateQueryKey(const Config &config, const RotaryTable &table,
                    const std::vector<Tensor> &inputs, float *q, float *k, ThreadPool &pool);

} // namespace attnc_bench
