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

/// q and k of `inputs` (bhsd, Kind::Sdpa) rotated into `q` and `k`, which
/// must hold as many floats as the inputs.
void rotateQueryKey(const Config &config, const std::vector<Tensor> &inputs, float *q,
                    float *k, ThreadPool &pool);

} // namespace attnc_bench
