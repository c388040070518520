//===- MaskedRowsTest.cpp - Rows with no visible key -----------------------===//
//
// docs/language.md §2: a row with no visible key has out = 0, weights = 0
// and lse = -inf, never NaN. Such rows arise from valid_len = 0 (or any
// valid_len <= 0, taken literally by `j < valid_len[b]`) and from causal
// masks with Lq > Lk, where bottom-right alignment hides every key from the
// first Lq - Lk rows. Rows next to them must be unaffected.
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>

using namespace attnc::edge;

namespace {

Problem maskedProblem(int B, int Lq, int Lk, std::vector<int32_t> validLen) {
  Problem p;
  p.B = B, p.H = 4, p.G = 2, p.Lq = Lq, p.Lk = Lk, p.D = 4, p.Dv = 4;
  p.scale = 0.5; // scaled_dot: 1 / sqrt(4)
  p.causal = true;
  p.validLen = std::move(validLen);
  p.q = uniform(size_t(B) * p.H * Lq * p.D, 1);
  p.k = uniform(size_t(B) * p.G * Lk * p.D, 2);
  p.v = uniform(size_t(B) * p.G * Lk * p.Dv, 3);
  return p;
}

/// Every row of batch `b` is fully masked: exact zeros and -inf.
void expectBatchMasked(const Problem &p, const Result &r, int b) {
  size_t rows = size_t(p.H) * p.Lq;
  for (size_t x = 0; x < rows * p.Dv; ++x)
    EXPECT_EQ(r.out[b * rows * p.Dv + x], 0.0f) << "out of batch " << b;
  for (size_t x = 0; x < rows * p.Lk; ++x)
    EXPECT_EQ(r.weights[b * rows * p.Lk + x], 0.0f) << "weights of batch " << b;
  for (size_t x = 0; x < rows; ++x)
    EXPECT_EQ(r.lse[b * rows + x], -INFINITY) << "lse of batch " << b;
}

TEST(MaskedRows, ValidLenZeroGivesZeroOutAndMinusInfLse) {
  Problem p = maskedProblem(3, 5, 5, {0, 5, 2});
  Result r = run(edgeKernel("masked"), p, /*withWeights=*/true);
  expectBatchMasked(p, r, 0);
  expectMatchesReference(p, r);
}

TEST(MaskedRows, NegativeValidLenMasksEverything) {
  Problem p = maskedProblem(2, 4, 6, {-3, INT32_MIN});
  Result r = run(edgeKernel("masked"), p, true);
  expectBatchMasked(p, r, 0);
  expectBatchMasked(p, r, 1);
}

TEST(MaskedRows, ValidLenAboveLkShowsEveryKey) {
  Problem p = maskedProblem(2, 4, 6, {7, INT32_MAX});
  Result r = run(edgeKernel("masked"), p, true);
  expectMatchesReference(p, r);
  for (float x : r.lse)
    EXPECT_TRUE(std::isfinite(x));
}

TEST(MaskedRows, CausalWithMoreQueriesThanKeysMasksTheFirstRows) {
  // ip = i + (Lk - Lq) = i - 5: rows 0..4 see no key, rows 5..7 see 1..3.
  Problem p = maskedProblem(1, 8, 3, {3});
  Result r = run(edgeKernel("masked"), p, true);
  for (int h = 0; h < p.H; ++h)
    for (int i = 0; i < p.Lq; ++i) {
      size_t row = size_t(h) * p.Lq + i;
      if (i < 5) {
        EXPECT_EQ(r.lse[row], -INFINITY) << "row " << i;
        for (int c = 0; c < p.Dv; ++c)
          EXPECT_EQ(r.out[row * p.Dv + c], 0.0f) << "row " << i;
      } else {
        EXPECT_TRUE(std::isfinite(r.lse[row])) << "row " << i;
      }
    }
  expectMatchesReference(p, r);
}

TEST(MaskedRows, LongRowsFullyMaskedStayZero) {
  // Several key blocks of the online softmax, all masked by valid_len.
  Problem p = maskedProblem(1, 3, 1000, {0});
  Result r = run(edgeKernel("masked"), p, true);
  expectBatchMasked(p, r, 0);
}

} // namespace
