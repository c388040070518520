//===- ExtremeValuesTest.cpp - Huge scores and denormal inputs --------------===//
//
// docs/language.md §2: softmax is computed stably, so no input within
// float range produces inf or NaN. Scores of +-1e4 (far beyond exp's float
// range of about 88) must give the float64 reference's answer; so must
// inputs made of denormals, whether or not the hardware flushes them, since
// the bound is absolute (1e-4 * max(1, max |v|)).
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace attnc::edge;

namespace {

/// tiny kernel (D = 1, score = dot): scores are exactly q[i] * k[j].
Problem scoresProblem(std::vector<float> q, std::vector<float> k) {
  Problem p;
  p.Lq = int(q.size()), p.Lk = int(k.size());
  p.q = std::move(q);
  p.k = std::move(k);
  p.v = uniform(size_t(p.Lk), 40);
  return p;
}

void expectAllFinite(const std::vector<float> &values, const char *what) {
  for (size_t x = 0; x < values.size(); ++x)
    ASSERT_TRUE(std::isfinite(values[x])) << what << "[" << x << "] = " << values[x];
}

TEST(ExtremeValues, ScoresOfPlusAndMinus1e4StayFinite) {
  // q * k = +-1e4 and mixes: one dominant key, ties at +1e4, all at -1e4.
  Problem p = scoresProblem({100.0f, -100.0f, 1.0f, 0.01f},
                            {100.0f, -100.0f, 99.99f, 100.0f, -50.0f, 0.0f});
  Result r = run(edgeKernel("tiny"), p, false);
  expectAllFinite(r.out, "out");
  expectAllFinite(r.lse, "lse");
  expectMatchesReference(p, r);
}

TEST(ExtremeValues, AllScoresMinus1e4GiveTheMeanOfV) {
  // Every score is -1e4: exp underflows to 0 without the running maximum.
  Problem p = scoresProblem({100.0f}, std::vector<float>(50, -100.0f));
  Result r = run(edgeKernel("tiny"), p, false);
  double mean = 0;
  for (float x : p.v)
    mean += x / 50.0;
  EXPECT_NEAR(r.out[0], mean, 1e-4);
  EXPECT_NEAR(r.lse[0], -1e4 + std::log(50.0), 1e-4 * 1e4);
}

TEST(ExtremeValues, LargeScoresAcrossKeyBlocks) {
  // The maximum moves between key blocks of the online softmax: the state
  // rescale exp(m_old - m_new) must not overflow or produce inf - inf.
  std::vector<float> k(300);
  for (size_t j = 0; j < k.size(); ++j)
    k[j] = float(int(j % 7) - 3) * 40.0f + (j == 250 ? 1.0f : 0.0f);
  Problem p = scoresProblem({250.0f, -250.0f}, k); // scores up to +-3e4
  Result r = run(edgeKernel("tiny"), p, false);
  expectAllFinite(r.out, "out");
  expectMatchesReference(p, r);
}

TEST(ExtremeValues, DenormalInputs) {
  const float tiny = std::numeric_limits<float>::denorm_min() * 1000; // ~1.4e-42
  Problem p;
  p.B = 1, p.H = 4, p.G = 2, p.Lq = 5, p.Lk = 7, p.D = 4, p.Dv = 4, p.scale = 0.5;
  p.causal = true;
  p.validLen = {7};
  p.q = uniform(size_t(p.H) * p.Lq * p.D, 50);
  p.k = uniform(size_t(p.G) * p.Lk * p.D, 51);
  p.v = uniform(size_t(p.G) * p.Lk * p.Dv, 52);
  for (float &x : p.q)
    x *= tiny; // denormal queries: every score is 0 or denormal
  for (size_t x = 0; x < p.v.size(); x += 2)
    p.v[x] *= tiny; // half the values denormal
  Result r = run(edgeKernel("masked"), p, true);
  expectAllFinite(r.out, "out");
  expectAllFinite(r.weights, "weights");
  expectMatchesReference(p, r);
  // Scores are ~0: each causal row i sees i + 3 keys with equal weight.
  for (int i = 0; i < p.Lq; ++i)
    EXPECT_NEAR(r.weights[size_t(i) * p.Lk], 1.0 / (i + 3), 1e-6) << "row " << i;
}

TEST(ExtremeValues, LargestFiniteValuesInV) {
  // |v| near FLT_MAX / 4: the weighted sum of a few of them must not
  // overflow (weights sum to 1); the bound scales with max |v|.
  Problem p = scoresProblem({1.0f, 0.5f}, {0.25f, 0.5f, 0.75f});
  for (float &x : p.v)
    x = x * std::numeric_limits<float>::max() / 4;
  Result r = run(edgeKernel("tiny"), p, false);
  expectAllFinite(r.out, "out");
  expectMatchesReference(p, r);
}

} // namespace
