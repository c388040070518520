//===- TinySizesTest.cpp - Lq = 1, Lk = 1, D = 1 ----------------------------===//
//
// The smallest extents of each dimension, alone and together: one query, one
// key, one feature. With one visible key the softmax is exactly 1, so out
// equals that key's value row and lse equals the score; other combinations
// are checked against the float64 reference.
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

using namespace attnc::edge;

namespace {

Problem tinyProblem(int B, int Lq, int Lk, uint32_t seed) {
  Problem p;
  p.B = B, p.Lq = Lq, p.Lk = Lk; // H = G = D = Dv = 1, score = dot
  p.q = uniform(size_t(B) * Lq, seed);
  p.k = uniform(size_t(B) * Lk, seed + 1);
  p.v = uniform(size_t(B) * Lk, seed + 2);
  return p;
}

TEST(TinySizes, OneQueryOneKeyOneFeature) {
  Problem p = tinyProblem(1, 1, 1, 10);
  Result r = run(edgeKernel("tiny"), p, false);
  EXPECT_EQ(r.out[0], p.v[0]); // softmax of one score is exactly 1
  EXPECT_FLOAT_EQ(r.lse[0], p.q[0] * p.k[0]);
}

TEST(TinySizes, DimensionOneWithManyKeysAndQueries) {
  for (auto [Lq, Lk] : {std::pair{1, 37}, {37, 1}, {5, 9}, {1, 300}}) {
    SCOPED_TRACE("Lq=" + std::to_string(Lq) + " Lk=" + std::to_string(Lk));
    Problem p = tinyProblem(2, Lq, Lk, uint32_t(Lq * 100 + Lk));
    expectMatchesReference(p, run(edgeKernel("tiny"), p, false));
  }
}

TEST(TinySizes, OneKeyUnderCausalMaskIsSeenOnlyByTheLastQuery) {
  // masked kernel: Lk = 1, Lq = 6 -> ip = i - 5, only row 5 sees key 0.
  Problem p;
  p.B = 1, p.H = 4, p.G = 2, p.Lq = 6, p.Lk = 1, p.D = 4, p.Dv = 4, p.scale = 0.5;
  p.causal = true;
  p.validLen = {1};
  p.q = uniform(size_t(p.H) * p.Lq * p.D, 20);
  p.k = uniform(size_t(p.G) * p.D, 21);
  p.v = uniform(size_t(p.G) * p.Dv, 22);
  Result r = run(edgeKernel("masked"), p, true);
  expectMatchesReference(p, r);
  for (int h = 0; h < p.H; ++h)
    for (int c = 0; c < p.Dv; ++c)
      EXPECT_EQ(r.out[(size_t(h) * p.Lq + 5) * p.Dv + c], p.v[size_t(h / 2) * p.Dv + c]);
}

TEST(TinySizes, OneQueryDecodesAgainstEachKeyCount) {
  Problem p;
  p.D = p.Dv = 8;
  p.scale = 1 / std::sqrt(8.0);
  for (int Lk : {1, 2, 63, 64, 65, 129}) {
    SCOPED_TRACE("Lk=" + std::to_string(Lk));
    p.Lk = Lk;
    p.q = uniform(8, 30);
    p.k = uniform(size_t(Lk) * 8, 31);
    p.v = uniform(size_t(Lk) * 8, 32);
    expectMatchesReference(p, run(edgeKernel("decode"), p, false));
  }
}

} // namespace
