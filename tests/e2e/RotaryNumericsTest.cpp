//===- RotaryNumericsTest.cpp - Rotary embeddings vs float64 --------------===//
//
// The rope_* kernels of numerics.attn (docs/language.md, rotary embeddings): half and
// interleaved pairs, partial rotation, GQA, bshd, the Llama layer with
// projections, the cosine score and an expression bias, at the odd sizes of
// the feature tests (Lq > Lk puts queries at negative positions), and at
// positions past 32k, where a float32 angle would already be off.
//
//===----------------------------------------------------------------------===//
#include "FeatureReference.h"
#include "numerics_kernels.h"

namespace {

using namespace feature_reference;

/// docs/language.md, rotary embeddings in float64: rows of x [B, heads, L, D] turned at
/// position t + offset, pair c by the angle (t + offset) * base^(-2c / dims).
Ref rotate(const Ref &x, int B, int heads, int L, int D, int dims, double base,
           bool interleaved, long offset) {
  Ref r = x;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < L; ++t) {
        size_t row = (((size_t)b * heads + h) * L + t) * D;
        for (int c = 0; c < dims / 2; ++c) {
          double angle = (double)(t + offset) * std::pow(base, -2.0 * c / dims);
          int a = interleaved ? 2 * c : c, p = interleaved ? 2 * c + 1 : c + dims / 2;
          double xa = x[row + a], xp = x[row + p];
          r[row + a] = xa * std::cos(angle) - xp * std::sin(angle);
          r[row + p] = xp * std::cos(angle) + xa * std::sin(angle);
        }
      }
  return r;
}

class Rotary : public Features {};

TEST_P(Rotary, PartialHalfGqaCausalWithLse) {
  const int H = 4, G = 2, D = 12;
  Vec q = uniform((size_t)s.B * H * s.Lq * D, rng), k = uniform((size_t)s.B * G * s.Lk * D, rng),
      v = uniform((size_t)s.B * G * s.Lk * D, rng);
  Vec out(q.size(), NAN), lse((size_t)s.B * H * s.Lq, NAN);
  ASSERT_EQ(rope_gqa_partial_run(q.data(), k.data(), v.data(), out.data(), lse.data(), s.B, s.Lq,
                                 s.Lk),
            0);
  Problem p{s.B, H, G, D, D, s.Lq, s.Lk, 1 / std::sqrt((double)D)};
  p.mask = [](const At &a) { return a.j <= a.ip; };
  Outputs r = attention(p, rotate(widen(q), s.B, H, s.Lq, D, 8, 500, false, s.Lk - s.Lq),
                        rotate(widen(k), s.B, G, s.Lk, D, 8, 500, false, 0), widen(v));
  expectClose("out", out, r.out, 1e-4, name(s));
  expectClose("lse", lse, r.lse, 1e-4 * std::max(1.0, maxAbs(r.lse)), name(s));
}

TEST_P(Rotary, InterleavedBshd) {
  const int H = 2, D = 8, Dv = 5;
  Vec q = uniform((size_t)s.B * s.Lq * H * D, rng), k = uniform((size_t)s.B * s.Lk * H * D, rng),
      v = uniform((size_t)s.B * s.Lk * H * Dv, rng);
  Vec out((size_t)s.B * s.Lq * H * Dv, NAN);
  ASSERT_EQ(rope_interleaved_bshd_run(q.data(), k.data(), v.data(), out.data(), s.B, s.Lq, s.Lk),
            0);
  Ref qh = swapMiddle(widen(q), s.B, s.Lq, H, D), kh = swapMiddle(widen(k), s.B, s.Lk, H, D);
  Problem p{s.B, H, H, D, Dv, s.Lq, s.Lk, 1 / std::sqrt((double)D)};
  Outputs r = attention(p, rotate(qh, s.B, H, s.Lq, D, D, 10000, true, s.Lk - s.Lq),
                        rotate(kh, s.B, H, s.Lk, D, D, 10000, true, 0),
                        swapMiddle(widen(v), s.B, s.Lk, H, Dv));
  expectClose("out", out, swapMiddle(r.out, s.B, H, s.Lq, Dv), 1e-4, name(s));
}

TEST_P(Rotary, LlamaLayerRotatesAfterTheProjection) {
  const int H = 4, G = 2, D = 6, M = 8, L = s.Lq;
  Vec x = uniform((size_t)s.B * L * M, rng);
  Vec wq = uniform((size_t)M * H * D, rng), wk = uniform((size_t)M * G * D, rng),
      wv = uniform((size_t)M * G * D, rng), wo = uniform((size_t)H * D * M, rng);
  Vec out((size_t)s.B * L * M, NAN);
  ASSERT_EQ(rope_llama_proj_run(x.data(), wq.data(), wk.data(), wv.data(), wo.data(), out.data(),
                                s.B, L),
            0);
  Ref q = rotate(projectHeads(x, wq, nullptr, s.B, L, M, H, D, false), s.B, H, L, D, D, 10000,
                 false, 0);
  Ref k = rotate(projectHeads(x, wk, nullptr, s.B, L, M, G, D, false), s.B, G, L, D, D, 10000,
                 false, 0);
  Ref v = projectHeads(x, wv, nullptr, s.B, L, M, G, D, false);
  Problem p{s.B, H, G, D, D, L, L, 1 / std::sqrt((double)D)};
  p.mask = [](const At &a) { return a.j <= a.ip; };
  Ref ref = outputProject(attention(p, q, k, v).out, wo, nullptr, s.B, L, H, D, M);
  expectClose("out", out, ref, 1e-4 * std::max(1.0, maxAbs(ref)), name(s));
}

TEST_P(Rotary, CosineScoreAndExpressionBias) {
  const int H = 2, D = 6;
  Vec q = uniform((size_t)s.B * H * s.Lq * D, rng), k = uniform((size_t)s.B * H * s.Lk * D, rng),
      v = uniform((size_t)s.B * H * s.Lk * D, rng);
  Vec out(q.size(), NAN);
  ASSERT_EQ(rope_cosine_expr_bias_run(q.data(), k.data(), v.data(), out.data(), s.B, s.Lq, s.Lk),
            0);
  Ref qr = rotate(widen(q), s.B, H, s.Lq, D, 4, 100, true, s.Lk - s.Lq);
  Ref kr = rotate(widen(k), s.B, H, s.Lk, D, 4, 100, true, 0);
  auto norms = [&](const Ref &x, size_t rows) {
    Ref n(rows);
    for (size_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int d = 0; d < D; ++d)
        sum += x[r * D + d] * x[r * D + d];
      n[r] = std::max(std::sqrt(sum), 1e-12);
    }
    return n;
  };
  Ref qn = norms(qr, qr.size() / D), kn = norms(kr, kr.size() / D);
  Problem p{s.B, H, H, D, D, s.Lq, s.Lk, 4.0};
  p.score = [&](const At &a, double dot) {
    return dot / (qn[((size_t)a.b * H + a.h) * s.Lq + a.i] * kn[((size_t)a.b * H + a.g) * s.Lk + a.j]);
  };
  p.bias = [](const At &a) { return -0.1 * std::abs((double)(a.ip - a.j)); };
  Outputs r = attention(p, qr, kr, widen(v));
  expectClose("out", out, r.out, 1e-4, name(s));
}

INSTANTIATE_TEST_SUITE_P(AllSizes, Rotary, ::testing::Range(0, (int)std::size(kSizes)),
                         [](const ::testing::TestParamInfo<int> &info) {
                           const Sizes &s = kSizes[info.param];
                           return "B" + std::to_string(s.B) + "_Lq" + std::to_string(s.Lq) +
                                  "_Lk" + std::to_string(s.Lk);
                         });

/// Positions past 32k: the float64 angles of the table keep the error at
/// float32 rounding (a float32 angle t * f would be off by ~2e-3 radians).
TEST(RotaryLongPositions, MatchesFloat64At40kKeys) {
  const int B = 1, H = 4, G = 2, D = 12, Lq = 3, Lk = 40000;
  std::mt19937 rng{99};
  Vec q = uniform((size_t)B * H * Lq * D, rng), k = uniform((size_t)B * G * Lk * D, rng),
      v = uniform((size_t)B * G * Lk * D, rng);
  // Sharpen the scores so that the last keys dominate each row.
  for (float &e : q)
    e *= 8;
  Vec out(q.size(), NAN), lse((size_t)B * H * Lq, NAN);
  ASSERT_EQ(rope_gqa_partial_run(q.data(), k.data(), v.data(), out.data(), lse.data(), B, Lq, Lk),
            0);
  Problem p{B, H, G, D, D, Lq, Lk, 1 / std::sqrt((double)D)};
  p.mask = [](const At &a) { return a.j <= a.ip; };
  Outputs r = attention(p, rotate(widen(q), B, H, Lq, D, 8, 500, false, Lk - Lq),
                        rotate(widen(k), B, G, Lk, D, 8, 500, false, 0), widen(v));
  expectClose("out", out, r.out, 1e-4, "Lk=40000");
  expectClose("lse", lse, r.lse, 1e-4 * std::max(1.0, maxAbs(r.lse)), "Lk=40000");
}

} // namespace
