//===- OverflowTest.cpp - Large values over many keys, overflowing scores ---===//
//
// The online softmax keeps its sums sum p_j v_j and sum p_j in units that
// halve as they grow, so no partial result grows with Lk: with q = k = 0 and
// v = 1e34 over 10^5 keys the answer is 1e34 (the sum would be 1e39 = inf in
// float32). This holds for every |v| <= FLT_MAX / 2, on the plain path and on
// the decode path whose key chunks merge partial states. Scores beyond the
// float range follow the documented policy (docs/robustness.md).
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace attnc::edge;

namespace {

constexpr float kFloatMax = std::numeric_limits<float>::max();

/// decode (Lq rows, dynamic) or decode_split (one row, chunked keys).
Problem decodeProblem(int Lq, int Lk, uint32_t seed) {
  Problem p;
  p.Lq = Lq, p.Lk = Lk, p.D = p.Dv = 8;
  p.scale = 1 / std::sqrt(8.0);
  p.q = uniform(size_t(Lq) * 8, seed);
  p.k = uniform(size_t(Lk) * 8, seed + 1);
  p.v = uniform(size_t(Lk) * 8, seed + 2);
  return p;
}

class Overflow : public ::testing::TestWithParam<const char *> {
protected:
  int rows() const { return std::string(GetParam()) == "decode_split" ? 1 : 3; }
};

TEST_P(Overflow, LargeValuesOverManyKeysGiveTheirMean) {
  // Equal scores: out is the mean of v, exactly 1e34; lse = log(Lk).
  Problem p = decodeProblem(rows(), 100000, 70);
  std::fill(p.q.begin(), p.q.end(), 0.0f);
  std::fill(p.k.begin(), p.k.end(), 0.0f);
  std::fill(p.v.begin(), p.v.end(), 1e34f);
  Result r = run(edgeKernel(GetParam()), p, false);
  for (size_t x = 0; x < r.out.size(); ++x)
    ASSERT_NEAR(r.out[x], 1e34, 1e-4 * 1e34) << "out[" << x << "]";
  for (float lse : r.lse)
    EXPECT_NEAR(lse, std::log(100000.0), 1e-4 * std::log(100000.0));
}

TEST_P(Overflow, ValuesUpToHalfTheFloatMaximumMatchTheReference) {
  // Random scores and |v| up to FLT_MAX / 2, of both signs, over 20000 keys.
  Problem p = decodeProblem(rows(), 20000, 80);
  for (float &x : p.v)
    x *= kFloatMax / 2;
  expectMatchesReference(p, run(edgeKernel(GetParam()), p, false));
}

INSTANTIATE_TEST_SUITE_P(Kernels, Overflow, ::testing::Values("decode", "decode_split"));

/// tiny kernel (D = 1, score = dot): scores are exactly q[i] * k[j].
Problem scoresProblem(std::vector<float> q, std::vector<float> k) {
  Problem p;
  p.Lq = int(q.size()), p.Lk = int(k.size());
  p.q = std::move(q);
  p.k = std::move(k);
  p.v = uniform(size_t(p.Lk), 90);
  return p;
}

TEST(OverflowingScores, AboveTheFloatMaximumLseIsInfAndOutStaysFinite) {
  // Row 0 scores 1e40 (+inf in float32) against keys 1 and 3; the float64
  // answer is finite, float32 cannot represent it. Policy: lse = +inf, out
  // finite within the range of v but unspecified; other rows unaffected.
  Problem p = scoresProblem({1e20f, 0.5f}, {0.25f, 1e20f, -0.5f, 1e20f, 1.0f});
  Result r = run(edgeKernel("tiny"), p, false);
  EXPECT_EQ(r.lse[0], std::numeric_limits<float>::infinity());
  ASSERT_TRUE(std::isfinite(r.out[0])) << r.out[0];
  EXPECT_LE(std::fabs(r.out[0]), 1.0f);
  Reference ref = reference(p);
  EXPECT_NEAR(r.out[1], ref.out[1], 1e-4);
  EXPECT_NEAR(r.lse[1], ref.lse[1], 1e-4 * std::max(1.0, std::fabs(ref.lse[1])));
}

TEST(OverflowingScores, BelowMinusTheFloatMaximumAreDropped) {
  // A score of -1e40 (-inf in float32) has weight 0, as in float64; when
  // every key of a row has one, the row is like a fully masked row.
  Problem p = scoresProblem({1e20f}, {-1e20f, 0.5f, -1e20f});
  Result r = run(edgeKernel("tiny"), p, false);
  EXPECT_NEAR(r.out[0], p.v[1], 1e-6); // only key 1 is seen by row 0
  EXPECT_NEAR(r.lse[0], 0.5e20, 1e-4 * 0.5e20);
  Problem all = scoresProblem({1e20f}, {-1e20f, -1e20f});
  Result none = run(edgeKernel("tiny"), all, false);
  EXPECT_EQ(none.out[0], 0.0f);
  EXPECT_EQ(none.lse[0], -std::numeric_limits<float>::infinity());
}

} // namespace
