//===- FeatureNumericsTest.cpp - Projections, lse, expressions vs float64 -===//
//
// The kernels of numerics.attn that use projections (positions, q/k/v and
// output projections with biases), the lse and weights outputs, and custom
// score / bias / mask expressions, compiled through the whole attnc pipeline
// (MLIRGen regions -> passes -> Halide) and compared with a float64 loop
// that implements docs/language.md §2, §5 and §4 (`project`) directly.
//
//===----------------------------------------------------------------------===//
#include "FeatureReference.h"
#include "numerics_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace feature_reference;

TEST_P(Features, LseAndWeights) {
  Problem p{s.B, 2, 2, 8, 5, s.Lq, s.Lk, 1 / std::sqrt(8.0)};
  p.mask = [](const At &a) { return a.j <= a.ip; };
  Vec q = uniform((size_t)s.B * 2 * s.Lq * 8, rng), k = uniform((size_t)s.B * 2 * s.Lk * 8, rng),
      v = uniform((size_t)s.B * 2 * s.Lk * 5, rng);
  Vec out((size_t)s.B * 2 * s.Lq * 5, NAN), w((size_t)s.B * 2 * s.Lq * s.Lk, NAN),
      lse((size_t)s.B * 2 * s.Lq, NAN);
  ASSERT_EQ(lse_causal_run(q.data(), k.data(), v.data(), out.data(), w.data(), lse.data(), s.B,
                           s.Lq, s.Lk),
            0);
  Outputs r = attention(p, widen(q), widen(k), widen(v));
  expectClose("out", out, r.out, 1e-4, name(s));
  expectClose("weights", w, r.weights, 1e-4, name(s));
  expectClose("lse", lse, r.lse, 1e-4 * std::max(1.0, maxAbs(r.lse)), name(s));
}

TEST_P(Features, SelfProjectionWithBiasesPositionsAndOutput) {
  const int H = 2, G = 1, D = 4, Dv = 3, M = 8, L = s.Lq;
  Vec x = uniform((size_t)s.B * L * M, rng);
  Vec wq = uniform((size_t)M * H * D, rng), wk = uniform((size_t)M * G * D, rng),
      wv = uniform((size_t)M * G * Dv, rng), wo = uniform((size_t)H * Dv * M, rng);
  Vec bq = uniform(H * D, rng), bk = uniform(G * D, rng), bv = uniform(G * Dv, rng),
      bo = uniform(M, rng);
  Vec out((size_t)s.B * L * M, NAN), lse((size_t)s.B * H * L, NAN);
  ASSERT_EQ(proj_self_out_run(x.data(), wq.data(), wk.data(), wv.data(), wo.data(), bq.data(),
                              bk.data(), bv.data(), bo.data(), out.data(), lse.data(), s.B, L),
            0);
  Ref q = projectHeads(x, wq, &bq, s.B, L, M, H, D, true);
  Ref k = projectHeads(x, wk, &bk, s.B, L, M, G, D, true);
  Ref v = projectHeads(x, wv, &bv, s.B, L, M, G, Dv, true);
  Problem p{s.B, H, G, D, Dv, L, L, 1 / std::sqrt((double)D)};
  p.mask = [](const At &a) { return a.j <= a.ip; };
  Outputs r = attention(p, q, k, v);
  Ref ref = outputProject(r.out, wo, &bo, s.B, L, H, Dv, M);
  expectClose("out", out, ref, 1e-4 * std::max(1.0, maxAbs(ref)), name(s));
  expectClose("lse", lse, r.lse, 1e-4 * std::max(1.0, maxAbs(r.lse)), name(s));
}

TEST_P(Features, CrossProjectionWithoutBiases) {
  const int H = 2, D = 4, M = 6;
  Vec xq = uniform((size_t)s.B * s.Lq * M, rng), xkv = uniform((size_t)s.B * s.Lk * M, rng);
  Vec wq = uniform((size_t)M * H * D, rng), wk = uniform((size_t)M * H * D, rng),
      wv = uniform((size_t)M * H * D, rng);
  Vec out((size_t)s.B * H * s.Lq * D, NAN), w((size_t)s.B * H * s.Lq * s.Lk, NAN),
      lse((size_t)s.B * H * s.Lq, NAN);
  ASSERT_EQ(proj_cross_run(xq.data(), xkv.data(), wq.data(), wk.data(), wv.data(), out.data(),
                           w.data(), lse.data(), s.B, s.Lq, s.Lk),
            0);
  Ref q = projectHeads(xq, wq, nullptr, s.B, s.Lq, M, H, D, false);
  Ref k = projectHeads(xkv, wk, nullptr, s.B, s.Lk, M, H, D, false);
  Ref v = projectHeads(xkv, wv, nullptr, s.B, s.Lk, M, H, D, false);
  Problem p{s.B, H, H, D, D, s.Lq, s.Lk, 1 / std::sqrt((double)D)};
  Outputs r = attention(p, q, k, v);
  expectClose("out", out, r.out, 1e-4 * std::max(1.0, maxAbs(v)), name(s));
  expectClose("weights", w, r.weights, 1e-4, name(s));
  expectClose("lse", lse, r.lse, 1e-4 * std::max(1.0, maxAbs(r.lse)), name(s));
}

TEST_P(Features, CrossProjectionWithSomeBiases) {
  const int H = 2, D = 4, M = 6;
  Vec xq = uniform((size_t)s.B * s.Lq * M, rng), xkv = uniform((size_t)s.B * s.Lk * M, rng);
  Vec wq = uniform((size_t)M * H * D, rng), wk = uniform((size_t)M * H * D, rng),
      wv = uniform((size_t)M * H * D, rng), wo = uniform((size_t)H * D * M, rng);
  Vec bq = uniform((size_t)H * D, rng), bv = uniform((size_t)H * D, rng), bo = uniform(M, rng);
  Vec out((size_t)s.B * s.Lq * M, NAN);
  // proj_bias = q, v, o: no b_k argument.
  ASSERT_EQ(proj_whisper_cross_run(xq.data(), xkv.data(), wq.data(), wk.data(), wv.data(),
                                   wo.data(), bq.data(), bv.data(), bo.data(), out.data(), s.B,
                                   s.Lq, s.Lk),
            0);
  Ref q = projectHeads(xq, wq, &bq, s.B, s.Lq, M, H, D, false);
  Ref k = projectHeads(xkv, wk, nullptr, s.B, s.Lk, M, H, D, false);
  Ref v = projectHeads(xkv, wv, &bv, s.B, s.Lk, M, H, D, false);
  Problem p{s.B, H, H, D, D, s.Lq, s.Lk, 1 / std::sqrt((double)D)};
  Outputs r = attention(p, q, k, v);
  Ref ref = outputProject(r.out, wo, &bo, s.B, s.Lq, H, D, M);
  expectClose("out", out, ref, 1e-4 * std::max(1.0, maxAbs(ref)), name(s));
}

/// q, k, v of an unprojected [B, 2, L, 8] kernel and its output buffer.
struct Plain {
  Vec q, k, v, out;
  Plain(const Sizes &s, std::mt19937 &rng)
      : q(uniform((size_t)s.B * 2 * s.Lq * 8, rng)), k(uniform((size_t)s.B * 2 * s.Lk * 8, rng)),
        v(uniform((size_t)s.B * 2 * s.Lk * 8, rng)), out((size_t)s.B * 2 * s.Lq * 8, NAN) {}
};

/// kv_model_dim (docs/language.md, version 2): x_kv of another width than x_q, as
/// nn.MultiheadAttention's kdim / vdim; weights in nn.Linear's layout.
TEST_P(Features, CrossProjectionWithKvModelDim) {
  const int H = 2, D = 4, M = 6, Mkv = 10;
  Vec xq = uniform((size_t)s.B * s.Lq * M, rng), xkv = uniform((size_t)s.B * s.Lk * Mkv, rng);
  Vec wq = uniform((size_t)H * D * M, rng), wk = uniform((size_t)H * D * Mkv, rng),
      wv = uniform((size_t)H * D * Mkv, rng), wo = uniform((size_t)M * H * D, rng);
  Vec bq = uniform((size_t)H * D, rng), bk = uniform((size_t)H * D, rng),
      bv = uniform((size_t)H * D, rng), bo = uniform(M, rng);
  Vec out((size_t)s.B * s.Lq * M, NAN);
  ASSERT_EQ(proj_kdim_cross_run(xq.data(), xkv.data(), wq.data(), wk.data(), wv.data(), wo.data(),
                                bq.data(), bk.data(), bv.data(), bo.data(), out.data(), s.B, s.Lq,
                                s.Lk),
            0);
  Ref q = projectHeads(xq, wq, &bq, s.B, s.Lq, M, H, D, false);
  Ref k = projectHeads(xkv, wk, &bk, s.B, s.Lk, Mkv, H, D, false);
  Ref v = projectHeads(xkv, wv, &bv, s.B, s.Lk, Mkv, H, D, false);
  Problem p{s.B, H, H, D, D, s.Lq, s.Lk, 1 / std::sqrt((double)D)};
  Ref ref = outputProject(attention(p, q, k, v).out, wo, &bo, s.B, s.Lq, H, D, M);
  expectClose("out", out, ref, 1e-4 * std::max(1.0, maxAbs(ref)), name(s));
}

TEST_P(Features, ExpressionScore) {
  Plain t(s, rng);
  Vec temperature = {0.5f, 2.0f};
  ASSERT_EQ(expr_score_run(t.q.data(), t.k.data(), t.v.data(), temperature.data(), t.out.data(),
                           s.B, s.Lq, s.Lk),
            0);
  Problem p{s.B, 2, 2, 8, 8, s.Lq, s.Lk};
  p.score = [&](const At &a, double dot) { return dot / (std::sqrt(8.0) * temperature[a.h]); };
  expectClose("out", t.out, attention(p, widen(t.q), widen(t.k), widen(t.v)).out, 1e-4, name(s));
}

TEST_P(Features, ExpressionBias) {
  Plain t(s, rng);
  Vec slopes = {0.25f, 0.0625f};
  ASSERT_EQ(expr_bias_run(t.q.data(), t.k.data(), t.v.data(), slopes.data(), t.out.data(), s.B,
                          s.Lq, s.Lk),
            0);
  Problem p{s.B, 2, 2, 8, 8, s.Lq, s.Lk, 1 / std::sqrt(8.0)};
  p.bias = [&](const At &a) { return -slopes[a.h] * std::abs(a.ip - a.j); };
  p.mask = [](const At &a) { return a.j <= a.ip; };
  expectClose("out", t.out, attention(p, widen(t.q), widen(t.k), widen(t.v)).out, 1e-4, name(s));
}

// T5's relative_position_bucket (Hugging Face's, bidirectional) in float64.
int t5Bucket(int relative) {
  int bucket = relative > 0 ? 16 : 0, n = std::abs(relative);
  if (n < 8)
    return bucket + n;
  int large = 8 + (int)(std::log2(n / 8.0) / 3 * 8);
  return bucket + std::min(large, 15);
}

TEST_P(Features, ExpressionT5Buckets) {
  Plain t(s, rng);
  Vec rel = uniform(32 * 2, rng);
  ASSERT_EQ(expr_t5_buckets_run(t.q.data(), t.k.data(), t.v.data(), rel.data(), t.out.data(),
                                s.B, s.Lq, s.Lk),
            0);
  Problem p{s.B, 2, 2, 8, 8, s.Lq, s.Lk};
  p.bias = [&](const At &a) { return rel[t5Bucket(a.j - a.i) * 2 + a.h]; };
  expectClose("out", t.out, attention(p, widen(t.q), widen(t.k), widen(t.v)).out, 1e-4, name(s));
}

TEST_P(Features, ExpressionRoundingFunctions) {
  Plain t(s, rng);
  ASSERT_EQ(expr_rounding_run(t.q.data(), t.k.data(), t.v.data(), t.out.data(), s.B, s.Lq, s.Lk),
            0);
  Problem p{s.B, 2, 2, 8, 8, s.Lq, s.Lk, 1 / std::sqrt(8.0)};
  p.bias = [](const At &a) {
    return std::floor(a.j / 3.0) * 0.125 - std::ceil(a.ip / 4.0) * 0.0625 +
           std::trunc(-2.7) * 0.01 * a.j + std::trunc(1.9f * a.j) * 0.03;
  };
  expectClose("out", t.out, attention(p, widen(t.q), widen(t.k), widen(t.v)).out, 1e-4, name(s));
}

TEST_P(Features, ExpressionIntervalMask) {
  Plain t(s, rng);
  std::vector<int32_t> lens;
  for (int b = 0; b < s.B; ++b)
    lens.push_back(b == 0 ? s.Lk : std::max(0, s.Lk - 2)); // a short second batch
  Vec lse((size_t)s.B * 2 * s.Lq, NAN);
  ASSERT_EQ(expr_mask_interval_run(t.q.data(), t.k.data(), t.v.data(), lens.data(), t.out.data(),
                                   lse.data(), s.B, s.Lq, s.Lk),
            0);
  Problem p{s.B, 2, 2, 8, 8, s.Lq, s.Lk, 1 / std::sqrt(8.0)};
  p.mask = [&](const At &a) { return a.j <= a.ip && a.j > a.ip - 5 && a.j < lens[a.b]; };
  Outputs r = attention(p, widen(t.q), widen(t.k), widen(t.v));
  expectClose("out", t.out, r.out, 1e-4, name(s));
  expectClose("lse", lse, r.lse, 1e-4 * std::max(1.0, maxAbs(r.lse)), name(s));
}

TEST_P(Features, ExpressionGeneralMaskAndBias) {
  Plain t(s, rng);
  ASSERT_EQ(expr_mask_general_run(t.q.data(), t.k.data(), t.v.data(), t.out.data(), s.B, s.Lq,
                                  s.Lk),
            0);
  Problem p{s.B, 2, 2, 8, 8, s.Lq, s.Lk};
  p.mask = [](const At &a) { return (a.i + a.j) % 3 != 1 || a.j == 0; };
  // `%` is Euclidean: never negative for a positive divisor.
  auto mod = [](long x, long y) { return ((x % y) + y) % y; };
  p.bias = [&](const At &a) {
    return (a.j % 2 == 0 ? 0.5 : -0.25) + (double)std::min(a.ip, 4L) / s.Lk +
           mod(a.ip - a.j, a.h + 2) * 0.125;
  };
  expectClose("out", t.out, attention(p, widen(t.q), widen(t.k), widen(t.v)).out, 1e-4, name(s));
}

TEST_P(Features, ExpressionWithHeadGroupsAndSizes) {
  Vec q = uniform((size_t)s.B * 4 * s.Lq * 8, rng), k = uniform((size_t)s.B * 2 * s.Lk * 8, rng),
      v = uniform((size_t)s.B * 2 * s.Lk * 8, rng), out((size_t)s.B * 4 * s.Lq * 8, NAN);
  ASSERT_EQ(expr_gqa_sizes_run(q.data(), k.data(), v.data(), out.data(), s.B, s.Lq, s.Lk), 0);
  Problem p{s.B, 4, 2, 8, 8, s.Lq, s.Lk};
  p.score = [&](const At &a, double dot) {
    return dot * 0.25 + (a.g + 1.0) * a.j / (s.Lk + 1) - s.B * a.j * 0.0625 +
           (double)s.Lq * (a.j % 2) / (s.Lq + 7) + 8.0 * a.j / 64;
  };
  p.mask = [](const At &a) { return !(a.j > a.ip); };
  expectClose("out", out, attention(p, widen(q), widen(k), widen(v)).out, 1e-4, name(s));
}

INSTANTIATE_TEST_SUITE_P(AllSizes, Features, ::testing::Range(0, (int)std::size(kSizes)),
                         [](const ::testing::TestParamInfo<int> &info) {
                           const Sizes &s = kSizes[info.param];
                           return "B" + std::to_string(s.B) + "_Lq" + std::to_string(s.Lq) +
                                  "_Lk" + std::to_string(s.Lk);
                         });

} // namespace
