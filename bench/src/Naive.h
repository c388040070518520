//===- Naive.h - The naive C++ loop baseline ---------------------*- C++ -*-===//
//
// Attention written the way one writes it first: a score row, a max, exp and
// sum, a weighted sum of value rows, with std::exp and no blocking. It is
// both a baseline (heads, or batches, split over the pool's threads) and the
// independent cross-check of every other implementation's output.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/src/Configs.h"
#include "bench/src/ThreadPool.h"

namespace attnc_bench {

/// Writes the output rows of query rows [rowBegin, rowEnd) of every batch and
/// head into `out` (shape outputShape(config)); other rows are left alone.
/// Kind::Additive and Kind::Projection always compute every row.
void naiveAttention(const Config &config, const std::vector<Tensor> &inputs,
                    float *out, ThreadPool &pool, int64_t rowBegin,
                    int64_t rowEnd);

} // namespace attnc_bench
