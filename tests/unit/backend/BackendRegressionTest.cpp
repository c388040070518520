//===- BackendRegressionTest.cpp - Back-end audit findings, vs float64 -----===//
//
// One test per bug an audit of the Halide back end found, each comparing the
// JIT-compiled pipeline with a float64 reference written out here (score and
// mask as lambdas, so custom expressions on i need no reference support):
// a declared input with the weights output, GQA with expressions on i,
// softcap over the whole float range, very wide rows, and `auto` with Lq < 16.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/backend/JitKernel.h"
#include "tests/unit/backend/LowerForTest.h"
#include "tests/unit/backend/TestBuffers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace attnc;
using namespace attnc::halide_backend;
using attnc::test::uniform;
using attnc::test::view;

namespace {

struct Sizes {
  int B = 2, H = 2, G = 2, Lq = 19, Lk = 45, D = 8;
};

/// Score s(dot, b, h, i, j) (scale, softcap and bias included) and visibility.
using RefScore = std::function<double(double, int, int, int, int)>;
using RefMask = std::function<bool(int, int, int, int)>;

struct Result {
  std::vector<double> out, weights, lse; // [B,H,Lq,D], [B,H,Lq,Lk], [B,H,Lq]
};

/// docs/language.md §2 in double, BHSD layout, GQA by h / (H / G).
Result reference(const Sizes &s, const std::vector<float> &q, const std::vector<float> &k,
                 const std::vector<float> &v, const RefScore &score, const RefMask &visible) {
  Result r;
  r.out.assign((size_t)s.B * s.H * s.Lq * s.D, 0.0);
  r.weights.assign((size_t)s.B * s.H * s.Lq * s.Lk, 0.0);
  r.lse.assign((size_t)s.B * s.H * s.Lq, -INFINITY);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.H; ++h) {
      int g = h / (s.H / s.G);
      for (int i = 0; i < s.Lq; ++i) {
        std::vector<double> sc(s.Lk);
        double m = -INFINITY;
        for (int j = 0; j < s.Lk; ++j) {
          double dot = 0;
          for (int d = 0; d < s.D; ++d)
            dot += (double)q[(((size_t)b * s.H + h) * s.Lq + i) * s.D + d] *
                   k[(((size_t)b * s.G + g) * s.Lk + j) * s.D + d];
          sc[j] = visible(b, h, i, j) ? score(dot, b, h, i, j) : -INFINITY;
          m = std::max(m, sc[j]);
        }
        if (m == -INFINITY)
          continue;
        double sum = 0;
        for (int j = 0; j < s.Lk; ++j)
          sum += std::exp(sc[j] - m);
        size_t row = ((size_t)b * s.H + h) * s.Lq + i;
        r.lse[row] = m + std::log(sum);
        for (int j = 0; j < s.Lk; ++j) {
          double p = std::exp(sc[j] - m) / sum;
          r.weights[row * s.Lk + j] = p;
          for (int d = 0; d < s.D; ++d)
            r.out[row * s.D + d] += p * v[(((size_t)b * s.G + g) * s.Lk + j) * s.D + d];
        }
      }
    }
  return r;
}

KernelSpec specOf(const Sizes &s) {
  KernelSpec spec;
  spec.name = "k";
  spec.heads = s.H;
  spec.kvHeads = s.G;
  spec.headDim = spec.keyDim = spec.valueDim = s.D;
  return spec;
}

/// Compiles `config` with `policy`, runs it on random q, k, v (plus `extra`
/// inputs) and compares every output with the float64 reference.
void check(const AttentionConfig &config, const Sizes &s, const RefScore &score,
           const RefMask &visible, test::NamedBuffers extra = {},
           SchedulePolicy policy = SchedulePolicy::Tuned, double tolerance = 1e-4) {
  std::mt19937 rng(77);
  std::vector<float> q = uniform((size_t)s.B * s.H * s.Lq * s.D, rng);
  std::vector<float> k = uniform((size_t)s.B * s.G * s.Lk * s.D, rng);
  std::vector<float> v = uniform((size_t)s.B * s.G * s.Lk * s.D, rng);
  extra["q"] = view(q, {s.B, s.H, s.Lq, s.D});
  extra["k"] = view(k, {s.B, s.G, s.Lk, s.D});
  extra["v"] = view(v, {s.B, s.G, s.Lk, s.D});

  test::JitKernel kernel(config, policy);
  test::AttentionOutputs got =
      test::runAttention(kernel, config.kernel, extra, {s.B, s.H, s.Lq, s.D}, s.Lk);
  Result ref = reference(s, q, k, v, score, visible);
  test::expectNear(got, ref.out, ref.weights, ref.lse, config.kernel, tolerance);
}

RefMask all() {
  return [](int, int, int, int) { return true; };
}

// A declared input read by both the blocked scores and the weights output
// once failed with "multiple functions with same name: t_clamped".
TEST(BackendRegression, DeclaredInputWithWeights) {
  Sizes s;
  // bias = t[h] * (j - i): changes the weights, unlike a per-head constant.
  AttentionConfig config = test::lowerSource(R"(
    kernel input_weights {
      heads = 2; head_dim = 8; scale = 0.35; outputs = out, weights, lse
      input t : f32[H]
      bias = t[h] * (j - i)
    })").at(0);
  std::vector<float> tv = {0.25f, -0.5f};
  double scale = config.scale;
  check(config, s,
        [&](double dot, int, int h, int i, int j) { return scale * dot + tv[h] * (j - i); },
        all(), {{"t", view(tv, {s.H})}});
}

// GQA (4 query heads per KV head) with expressions on i: bounds inference
// once gave qk a variable extent ("Can only unroll for loops over a
// constant extent").
TEST(BackendRegression, GqaMaskOnI) {
  Sizes s;
  s.H = 4;
  s.G = 1;
  AttentionConfig config = test::lowerSource(R"(
    kernel gqa_mask_i {
      heads = 4; kv_heads = 1; head_dim = 8; scale = 0.35
      mask = j < i
    })").at(0);
  EXPECT_TRUE(config.maskNeedsElementTest);
  double scale = config.scale;
  check(config, s, [&](double dot, int, int, int, int) { return scale * dot; },
        [](int, int, int i, int j) { return j < i; });
}

TEST(BackendRegression, GqaScoreSelectOnI) {
  Sizes s;
  s.H = 4;
  s.G = 1;
  AttentionConfig config = test::lowerSource(R"(
    kernel gqa_score_i {
      heads = 4; kv_heads = 1; head_dim = 8; scale = 1
      score = select(j < i, dot(q, k), 0.0)
    })").at(0);
  check(config, s, [](double dot, int, int, int i, int j) { return j < i ? dot : 0.0; }, all());
}

// c * tanh(s / c) for c from 1 to near FLT_MAX: the old 1 - 2 / (exp(2x) + 1)
// cancelled near 0 (5e-5 error at c = 1e3, -inf lse at c = 1e20).
TEST(BackendRegression, SoftcapWholeRange) {
  for (double c : {1.0, 30.0, 1e3, 1e5, 1e20, 3e38}) {
    SCOPED_TRACE("c=" + std::to_string(c));
    Sizes s;
    s.D = 16;
    KernelSpec spec = specOf(s);
    spec.softcap = c;
    spec.outputLse = true;
    AttentionConfig config = test::lowerSpec(std::move(spec), "softcap");
    // Scores up to ~4: unscaled dot products of 16-wide rows.
    config.scale = 1.0;
    check(config, s, [&](double dot, int, int, int, int) { return c * std::tanh(dot / c); },
          all());
  }
}

// Very wide rows: the value row is processed in register-sized chunks
// (once fully unrolled: minutes of compile time, a crash at 2^20).
TEST(BackendRegression, WideRows) {
  for (int D : {130, 1000, 4097}) {
    SCOPED_TRACE("D=" + std::to_string(D));
    Sizes s;
    s.B = 1;
    s.Lq = 5;
    s.Lk = 7;
    s.D = D;
    KernelSpec spec = specOf(s);
    spec.masks.push_back({MaskKind::Causal, {}, 0, nullptr});
    spec.outputLse = true;
    AttentionConfig config = test::lowerSpec(std::move(spec), "wide");
    double scale = config.scale;
    int shift = s.Lk - s.Lq;
    check(config, s, [&](double dot, int, int, int, int) { return scale * dot; },
          [&](int, int, int i, int j) { return j <= i + shift; });
  }
}

// The autoscheduler tiles lse by 16 rows with ShiftInwards splits; fewer
// rows once wrote before the buffer ("lse is accessed at -15").
TEST(BackendRegression, AutoScheduleFewRowsWithLse) {
  for (int Lq : {1, 3}) {
    SCOPED_TRACE("Lq=" + std::to_string(Lq));
    Sizes s;
    s.B = 1;
    s.H = 4;
    s.G = 1;
    s.D = 64;
    s.Lq = Lq;
    s.Lk = 40;
    KernelSpec spec = specOf(s);
    spec.masks.push_back({MaskKind::Window, {}, 30, nullptr});
    spec.masks.push_back({MaskKind::Causal, {}, 0, nullptr});
    spec.outputLse = true;
    AttentionConfig config = test::lowerSpec(std::move(spec), "auto_lse");
    double scale = config.scale;
    int shift = s.Lk - s.Lq;
    check(config, s, [&](double dot, int, int, int, int) { return scale * dot; },
          [&](int, int, int i, int j) { return j <= i + shift && j > i + shift - 30; }, {},
          SchedulePolicy::Auto);
  }
}

} // namespace
