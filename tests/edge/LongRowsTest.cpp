//===- LongRowsTest.cpp - Decode against a million keys ---------------------===//
//
// One query row against Lk = 10^6 keys (decode with a very long context):
// float32 accumulation over 15625 key blocks of the online softmax must stay
// within the bound of docs/language.md §2 of the float64 reference, for uniform inputs
// and for keys whose scores peak late (the running maximum keeps changing).
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace attnc::edge;

namespace {

constexpr int kLongLk = 1000000;

Problem decodeProblem(int B, int Lq) {
  Problem p;
  p.B = B, p.Lq = Lq, p.Lk = kLongLk, p.D = p.Dv = 8;
  p.scale = 1 / std::sqrt(8.0);
  p.q = uniform(size_t(B) * Lq * 8, 60);
  p.k = uniform(size_t(B) * kLongLk * 8, 61);
  p.v = uniform(size_t(B) * kLongLk * 8, 62);
  return p;
}

TEST(LongRows, DecodeWithAMillionKeys) {
  Problem p = decodeProblem(1, 1);
  expectMatchesReference(p, run(edgeKernel("decode"), p, false));
}

TEST(LongRows, RisingScoresMoveTheMaximumInEveryBlock) {
  // k grows along j, so each key block raises the running maximum and the
  // accumulated state is rescaled 15625 times.
  Problem p = decodeProblem(1, 2);
  for (int j = 0; j < kLongLk; ++j)
    for (int d = 0; d < 8; ++d)
      p.k[size_t(j) * 8 + d] = float(j) / kLongLk * 4.0f; // scores up to ~11
  for (float &x : p.q)
    x = std::fabs(x);
  expectMatchesReference(p, run(edgeKernel("decode"), p, false));
}

} // namespace
