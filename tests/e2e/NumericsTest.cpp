//===- NumericsTest.cpp - Generated kernels against a float64 reference ---===//
//
// Each kernel of numerics.attn, compiled by attnc at build time and linked
// in, runs over a matrix of sizes (1, 3, 17, 257, Lq != Lk both ways) and is
// compared with a float64 loop that implements docs/language.md §2
// directly, including bottom-right causal alignment and fully masked rows.
//
//===----------------------------------------------------------------------===//
#include "numerics_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using RunFn = int (*)(const float *, const float *, const float *, float *, int64_t, int64_t,
                      int64_t);

struct KernelCase {
  const char *name;
  RunFn run;
  int H, G, D, Dv;
  double scale;
  bool causal;
};

const KernelCase kKernels[] = {
    {"dot_none_mha", dot_none_mha_run, 2, 2, 8, 5, 1.0, false},
    {"dot_causal_mha", dot_causal_mha_run, 2, 2, 8, 5, 1.0, true},
    {"scaled_none_mha", scaled_none_mha_run, 2, 2, 8, 5, 1 / std::sqrt(8.0), false},
    {"scaled_causal_mha", scaled_causal_mha_run, 2, 2, 8, 5, 1 / std::sqrt(8.0), true},
    {"dot_none_gqa", dot_none_gqa_run, 4, 2, 8, 5, 1.0, false},
    {"dot_causal_gqa", dot_causal_gqa_run, 4, 2, 8, 5, 1.0, true},
    {"scaled_none_gqa", scaled_none_gqa_run, 4, 2, 8, 5, 1 / std::sqrt(8.0), false},
    {"scaled_causal_mqa", scaled_causal_mqa_run, 3, 1, 8, 5, 1 / std::sqrt(8.0), true},
    {"explicit_scale", explicit_scale_run, 2, 2, 16, 16, 0.125, true},
};

struct Sizes {
  int B, Lq, Lk;
};

const Sizes kSizes[] = {{1, 1, 1},   {2, 3, 3},   {1, 17, 17}, {1, 257, 257},
                        {2, 3, 17},  {1, 17, 3},  {1, 257, 17}, {1, 1, 1000}};

/// docs/language.md §2 in float64, bhsd layout.
std::vector<double> reference(const KernelCase &kc, const Sizes &s, const std::vector<float> &q,
                              const std::vector<float> &k, const std::vector<float> &v) {
  const int H = kc.H, G = kc.G, D = kc.D, Dv = kc.Dv;
  std::vector<double> out((size_t)s.B * H * s.Lq * Dv, 0.0);
  std::vector<double> scores(s.Lk);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < H; ++h) {
      int g = h / (H / G);
      for (int i = 0; i < s.Lq; ++i) {
        long ip = i + (s.Lk - s.Lq);
        double m = -INFINITY;
        for (int j = 0; j < s.Lk; ++j) {
          bool visible = !kc.causal || j <= ip;
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += (double)q[(((size_t)b * H + h) * s.Lq + i) * D + d] *
                   k[(((size_t)b * G + g) * s.Lk + j) * D + d];
          scores[j] = visible ? kc.scale * dot : -INFINITY;
          m = std::max(m, scores[j]);
        }
        if (m == -INFINITY)
          continue; // no visible key: out = 0
        double sum = 0;
        for (int j = 0; j < s.Lk; ++j)
          sum += scores[j] == -INFINITY ? 0 : std::exp(scores[j] - m);
        for (int j = 0; j < s.Lk; ++j) {
          if (scores[j] == -INFINITY)
            continue;
          double p = std::exp(scores[j] - m) / sum;
          for (int c = 0; c < Dv; ++c)
            out[(((size_t)b * H + h) * s.Lq + i) * Dv + c] +=
                p * v[(((size_t)b * G + g) * s.Lk + j) * Dv + c];
        }
      }
    }
  return out;
}

std::vector<float> uniform(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> x(n);
  for (float &e : x)
    e = dist(rng);
  return x;
}

class Numerics : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Numerics, MatchesFloat64Reference) {
  const KernelCase &kc = kKernels[std::get<0>(GetParam())];
  const Sizes &s = kSizes[std::get<1>(GetParam())];
  std::mt19937 rng(1234);
  auto q = uniform((size_t)s.B * kc.H * s.Lq * kc.D, rng);
  auto k = uniform((size_t)s.B * kc.G * s.Lk * kc.D, rng);
  auto v = uniform((size_t)s.B * kc.G * s.Lk * kc.Dv, rng);
  std::vector<float> out((size_t)s.B * kc.H * s.Lq * kc.Dv, NAN);
  ASSERT_EQ(kc.run(q.data(), k.data(), v.data(), out.data(), s.B, s.Lq, s.Lk), 0);
  std::vector<double> ref = reference(kc, s, q, k, v);
  double maxErr = 0;
  for (size_t n = 0; n < out.size(); ++n) {
    ASSERT_TRUE(std::isfinite(out[n])) << "element " << n;
    maxErr = std::max(maxErr, std::abs(out[n] - ref[n]));
  }
  EXPECT_LE(maxErr, 1e-4) << kc.name << " B=" << s.B << " Lq=" << s.Lq << " Lk=" << s.Lk;
}

INSTANTIATE_TEST_SUITE_P(
    AllKernelsAllSizes, Numerics,
    ::testing::Combine(::testing::Range(0, (int)std::size(kKernels)),
                       ::testing::Range(0, (int)std::size(kSizes))),
    [](const ::testing::TestParamInfo<std::tuple<int, int>> &info) {
      const Sizes &s = kSizes[std::get<1>(info.param)];
      return std::string(kKernels[std::get<0>(info.param)].name) + "_B" + std::to_string(s.B) +
             "_Lq" + std::to_string(s.Lq) + "_Lk" + std::to_string(s.Lk);
    });

TEST(Numerics, RejectsNonPositiveSizes) {
  float x[8] = {0};
  EXPECT_NE(dot_none_mha_run(x, x, x, x, 1, 0, 1), 0);
  EXPECT_NE(dot_none_mha_run(x, x, x, x, -1, 1, 1), 0);
}

} // namespace
