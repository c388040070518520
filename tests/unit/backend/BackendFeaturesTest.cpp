//===- BackendFeaturesTest.cpp - Custom expressions, additive, projections -===//
//
// The parts of the algorithm the basic matrix does not reach, each checked
// against the float64 reference: custom score / bias / mask expressions
// (declared inputs), the cosine and additive (Bahdanau) scores, and
// projections with sinusoidal positions and an output projection, computed
// by hand in double. Configs come from source text through the real path.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/backend/JitKernel.h"
#include "tests/unit/backend/LowerForTest.h"
#include "tests/unit/backend/ReferenceAttention.h"
#include "tests/unit/backend/TestBuffers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace attnc;
using namespace attnc::halide_backend;
using attnc::test::uniform;
using attnc::test::view;

namespace {

/// JIT-runs `config` with inputs by name; returns `out` (logical order).
std::vector<float> run(const AttentionConfig &config, const test::NamedBuffers &inputs,
                       const std::vector<int> &outShape,
                       SchedulePolicy policy = SchedulePolicy::Tuned) {
  test::JitKernel kernel(config, policy);
  return test::runAttention(kernel, config.kernel, inputs, outShape, /*Lk=*/0).out;
}

KernelSpec baseSpec(int H, int D) {
  KernelSpec s;
  s.name = "k";
  s.heads = s.kvHeads = H;
  s.headDim = s.keyDim = s.valueDim = D;
  return s;
}

struct Qkv {
  int B = 2, H = 2, Lq = 37, Lk = 70, D = 16;
  std::vector<float> q, k, v;
  explicit Qkv(std::mt19937 &rng) {
    q = uniform((size_t)B * H * Lq * D, rng);
    k = uniform((size_t)B * H * Lk * D, rng);
    v = uniform((size_t)B * H * Lk * D, rng);
  }
  test::NamedBuffers buffers() {
    return {{"q", view(q, {B, H, Lq, D})}, {"k", view(k, {B, H, Lk, D})},
            {"v", view(v, {B, H, Lk, D})}};
  }
};

// The slopes BLOOM's checkpoints were trained with: get_slopes(12) of the
// ALiBi paper's code is get_slopes(8) followed by get_slopes(16)[0::2][:4].
TEST(BackendFeatures, AlibiSlopesAreThoseOfTheReferenceCode) {
  const double s12[12] = {0.5,       0.25,      0.125,     0.0625,    0.03125,   0.015625,
                          0.0078125, 0.00390625, 0.70710678, 0.35355339, 0.17677670, 0.08838835};
  for (int h = 0; h < 12; ++h)
    EXPECT_NEAR(alibiSlope(h, 12), s12[h], 1e-8) << "head " << h;
  for (int h = 0; h < 8; ++h) // a power of two: 2^(-8 (h + 1) / H)
    EXPECT_DOUBLE_EQ(alibiSlope(h, 8), std::pow(2.0, -(h + 1.0)));
  EXPECT_NEAR(alibiSlope(5, 6), std::pow(2.0, -3.0), 1e-12); // 4 of 4, then 0 and 2 of 8: 2^-1, 2^-3
  EXPECT_DOUBLE_EQ(alibiSlope(0, 1), 1.0 / 256);
}

TEST(BackendFeatures, CustomScoreBiasMaskMatchBuiltins) {
  std::mt19937 rng(3);
  Qkv t(rng);
  // score = dot(q, k) * 0.25, bias = -slopes[h] * abs(ip - j), mask = j <= ip.
  AttentionConfig config = test::lowerSource(R"(
    kernel custom {
      heads = 2; head_dim = 16; scale = 1
      input slopes : f32[H]
      score = dot(q, k) * 0.25
      bias = -slopes[h] * abs(ip - j)
      mask = j <= ip
    })").at(0);
  std::vector<float> slopeValues(t.H);
  for (int h = 0; h < t.H; ++h)
    slopeValues[h] = (float)std::pow(2.0, -8.0 * (h + 1) / t.H);
  auto inputs = t.buffers();
  inputs["slopes"] = view(slopeValues, {t.H});
  std::vector<float> out = run(config, inputs, {t.B, t.H, t.Lq, t.D});

  KernelSpec ref = baseSpec(t.H, t.D);
  ref.bias = BiasKind::Alibi;
  ref.masks.push_back({MaskKind::Causal, {}, 0, nullptr});
  test::RefOutputs r = test::referenceAttention(test::lowerSpec(ref, "ref").kernel, 0.25, {t.B, t.H, t.H, t.Lq, t.Lk, t.D, t.D},
                                                {t.q.data(), t.k.data(), t.v.data()});
  EXPECT_LE(test::maxDiff(out, r.out), 1e-4);
}

// score = cosine at odd sizes with GQA and a causal mask, under the tuned and
// the simple schedule, against (q/|q|).(k/|k|) in double; one query row and
// one key row are zero, which the 1e-12 norm clamp turns into cosine 0.
TEST(BackendFeatures, CosineScoreMatchesFloat64) {
  const int B = 2, H = 3, G = 1, Lq = 13, Lk = 29, D = 7;
  const double scale = 5.0;
  AttentionConfig config = test::lowerSource(R"(
    kernel cosine {
      heads = 3; kv_heads = 1; head_dim = 7
      score = cosine; scale = 5
      mask = causal
    })").at(0);
  ASSERT_EQ(config.kernel.score, ScoreKind::Cosine);
  EXPECT_FALSE(config.scaleOnQuery);
  std::mt19937 rng(11);
  std::vector<float> q = uniform((size_t)B * H * Lq * D, rng),
                     k = uniform((size_t)B * G * Lk * D, rng),
                     v = uniform((size_t)B * G * Lk * D, rng);
  std::fill_n(q.begin() + ((size_t)(1 * H + 2) * Lq + 5) * D, D, 0.0f); // q[1, 2, 5, :] = 0
  std::fill_n(k.begin() + ((size_t)(0 * G + 0) * Lk + 3) * D, D, 0.0f); // k[0, 0, 3, :] = 0
  auto norm = [&](const float *x) {
    double n = 0;
    for (int d = 0; d < D; ++d)
      n += (double)x[d] * x[d];
    return std::max(std::sqrt(n), 1e-12);
  };
  std::vector<double> ref((size_t)B * H * Lq * D, 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < Lq; ++i) {
        const float *qr = &q[((size_t)(b * H + h) * Lq + i) * D];
        int ip = i + Lk - Lq;
        std::vector<double> sc(ip + 1);
        double m = -1e300, l = 0;
        for (int j = 0; j <= ip; ++j) {
          const float *kr = &k[((size_t)(b * G + h / (H / G)) * Lk + j) * D];
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += (double)qr[d] * kr[d];
          sc[j] = scale * dot / (norm(qr) * norm(kr));
          m = std::max(m, sc[j]);
        }
        for (int j = 0; j <= ip; ++j)
          l += std::exp(sc[j] - m);
        for (int j = 0; j <= ip; ++j)
          for (int d = 0; d < D; ++d)
            ref[((size_t)(b * H + h) * Lq + i) * D + d] +=
                std::exp(sc[j] - m) / l * v[((size_t)(b * G + h / (H / G)) * Lk + j) * D + d];
      }
  for (SchedulePolicy policy : {SchedulePolicy::Tuned, SchedulePolicy::Simple}) {
    std::vector<float> out = run(config,
                                 {{"q", view(q, {B, H, Lq, D})},
                                  {"k", view(k, {B, G, Lk, D})},
                                  {"v", view(v, {B, G, Lk, D})}},
                                 {B, H, Lq, D}, policy);
    EXPECT_LE(test::maxDiff(out, ref), 1e-4) << (policy == SchedulePolicy::Tuned ? "tuned" : "simple");
  }
}

TEST(BackendFeatures, ScaleFoldedIntoQuery) {
  std::mt19937 rng(4);
  Qkv t(rng);
  KernelSpec s = baseSpec(t.H, t.D);
  s.masks.push_back({MaskKind::Causal, {}, 0, nullptr});
  AttentionConfig config = test::lowerSpec(std::move(s), "folded");
  config.scale = 0.3;
  config.scaleOnQuery = true;
  std::vector<float> out = run(config, t.buffers(), {t.B, t.H, t.Lq, t.D});
  test::RefOutputs r = test::referenceAttention(config.kernel, 0.3,
                                                {t.B, t.H, t.H, t.Lq, t.Lk, t.D, t.D},
                                                {t.q.data(), t.k.data(), t.v.data()});
  EXPECT_LE(test::maxDiff(out, r.out), 1e-4);
}

TEST(BackendFeatures, AdditiveScore) {
  std::mt19937 rng(5);
  const int B = 2, H = 1, Lq = 5, Lk = 23, D = 8, N = 12;
  KernelSpec s = baseSpec(H, D);
  s.score = ScoreKind::Additive;
  s.additiveHidden = N;
  s.scale = 1.0;
  s.masks.push_back({MaskKind::ValidLen, {}, 0, nullptr});
  AttentionConfig config = test::lowerSpec(std::move(s), "bahdanau");
  std::vector<float> q = uniform(B * Lq * D, rng), k = uniform(B * Lk * D, rng),
                     v = uniform(B * Lk * D, rng), wq = uniform(N * D, rng),
                     wk = uniform(N * D, rng), wv = uniform(N, rng);
  std::vector<int32_t> lens = {9, 0};
  std::vector<float> out =
      run(config,
          {{"q", view(q, {B, H, Lq, D})}, {"k", view(k, {B, H, Lk, D})},
           {"v", view(v, {B, H, Lk, D})}, {"score_wq", view(wq, {N, D})},
           {"score_wk", view(wk, {N, D})}, {"score_wv", view(wv, {N})},
           {"valid_len", view(lens, {B})}},
          {B, H, Lq, D});
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < Lq; ++i) {
      std::vector<double> sc(Lk);
      double m = -1e300, l = 0;
      for (int j = 0; j < lens[b]; ++j) {
        double total = 0;
        for (int n = 0; n < N; ++n) {
          double a = 0;
          for (int d = 0; d < D; ++d)
            a += wq[n * D + d] * q[(b * Lq + i) * D + d] + wk[n * D + d] * k[(b * Lk + j) * D + d];
          total += wv[n] * std::tanh(a);
        }
        sc[j] = total;
        m = std::max(m, total);
      }
      for (int j = 0; j < lens[b]; ++j)
        l += std::exp(sc[j] - m);
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < lens[b]; ++j)
          acc += std::exp(sc[j] - m) / l * v[(b * Lk + j) * D + d];
        EXPECT_NEAR(out[(b * Lq + i) * D + d], acc, 1e-4) << "b=" << b << " i=" << i;
      }
    }
}

TEST(BackendFeatures, SelfProjectionWithPositionsAndOutput) {
  std::mt19937 rng(6);
  const int B = 2, L = 19, M = 12, H = 2, D = 4;
  KernelSpec s = baseSpec(H, D);
  s.project = ProjectKind::SelfQKVOut;
  s.modelDim = M;
  s.projBias = ProjBias::all();
  s.positional = PositionalKind::Sinusoidal;
  s.scale = 0.5;
  s.masks.push_back({MaskKind::Causal, {}, 0, nullptr});
  AttentionConfig config = test::lowerSpec(std::move(s), "encoder");
  std::vector<float> x = uniform(B * L * M, rng), wq = uniform(M * H * D, rng),
                     wk = uniform(M * H * D, rng), wv = uniform(M * H * D, rng),
                     wo = uniform(H * D * M, rng), bq = uniform(H * D, rng),
                     bk = uniform(H * D, rng), bv = uniform(H * D, rng), bo = uniform(M, rng);
  std::vector<float> out = run(config,
                               {{"x", view(x, {B, L, M})},
                                {"w_q", view(wq, {H * D, M})},
                                {"w_k", view(wk, {H * D, M})},
                                {"w_v", view(wv, {H * D, M})},
                                {"w_o", view(wo, {M, H * D})},
                                {"b_q", view(bq, {H * D})},
                                {"b_k", view(bk, {H * D})},
                                {"b_v", view(bv, {H * D})},
                                {"b_o", view(bo, {M})}},
                               {B, L, M});
  // Reference: positions, projections into bhsd q/k/v, attention, output projection.
  std::vector<float> q(B * H * L * D), k(q.size()), v(q.size());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < L; ++t) {
      std::vector<double> xp(M);
      for (int m = 0; m < M; ++m) {
        double angle = t / std::pow(10000.0, (double)(m - m % 2) / M);
        xp[m] = x[(b * L + t) * M + m] + (m % 2 == 0 ? std::sin(angle) : std::cos(angle));
      }
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) {
          int c = h * D + d;
          double aq = bq[c], ak = bk[c], av = bv[c];
          for (int m = 0; m < M; ++m) {
            aq += xp[m] * wq[c * M + m]; // nn.Linear's [out, in]
            ak += xp[m] * wk[c * M + m];
            av += xp[m] * wv[c * M + m];
          }
          size_t idx = ((size_t)(b * H + h) * L + t) * D + d;
          q[idx] = (float)aq;
          k[idx] = (float)ak;
          v[idx] = (float)av;
        }
    }
  test::RefOutputs r = test::referenceAttention(config.kernel, 0.5, {B, H, H, L, L, D, D},
                                                {q.data(), k.data(), v.data()});
  double worst = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < L; ++t)
      for (int m = 0; m < M; ++m) {
        double acc = bo[m];
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d)
            acc += r.out[((size_t)(b * H + h) * L + t) * D + d] * wo[m * H * D + (h * D + d)];
        worst = std::max(worst, std::abs(out[(b * L + t) * M + m] - acc));
      }
  EXPECT_LE(worst, 1e-4 * M);
}

} // namespace
