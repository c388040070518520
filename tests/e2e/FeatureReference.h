//===- FeatureReference.h - The float64 reference of the feature tests -*- C++ -*-===//
//
// docs/language.md §2, §5 and §4 (`project`) as plain float64 loops, shared
// by the e2e feature tests (FeatureNumericsTest.cpp, RotaryNumericsTest.cpp):
// attention with score / bias / mask callbacks, projections, random inputs,
// the size matrix and a comparison that names the worst element's place.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace feature_reference {

using Vec = std::vector<float>;
using Ref = std::vector<double>;

/// Index variables of one (b, h, i, j) entry, as the language defines them.
struct At {
  int b, h, i, j, g;
  long ip;
};
using ScoreFn = std::function<double(const At &, double dot)>;
using BiasFn = std::function<double(const At &)>;
using MaskFn = std::function<bool(const At &)>;

struct Problem {
  int B, H, G, D, Dv, Lq, Lk;
  double scale = 1.0;
  ScoreFn score; // null: dot
  BiasFn bias;   // null: 0
  MaskFn mask;   // null: all visible
};

struct Outputs {
  Ref out, weights, lse;
};

/// docs/language.md §2 in float64; q, k, v, out in bhsd.
inline Outputs attention(const Problem &p, const Ref &q, const Ref &k, const Ref &v) {
  Outputs r;
  r.out.assign((size_t)p.B * p.H * p.Lq * p.Dv, 0.0);
  r.weights.assign((size_t)p.B * p.H * p.Lq * p.Lk, 0.0);
  r.lse.assign((size_t)p.B * p.H * p.Lq, -INFINITY);
  std::vector<double> s(p.Lk);
  std::vector<bool> visible(p.Lk);
  for (int b = 0; b < p.B; ++b)
    for (int h = 0; h < p.H; ++h) {
      int g = h / (p.H / p.G);
      for (int i = 0; i < p.Lq; ++i) {
        double m = -INFINITY;
        for (int j = 0; j < p.Lk; ++j) {
          At at{b, h, i, j, g, (long)i + (p.Lk - p.Lq)};
          double dot = 0;
          for (int d = 0; d < p.D; ++d)
            dot += q[(((size_t)b * p.H + h) * p.Lq + i) * p.D + d] *
                   k[(((size_t)b * p.G + g) * p.Lk + j) * p.D + d];
          s[j] = p.scale * (p.score ? p.score(at, dot) : dot) + (p.bias ? p.bias(at) : 0.0);
          visible[j] = !p.mask || p.mask(at);
          if (visible[j])
            m = std::max(m, s[j]);
        }
        if (m == -INFINITY)
          continue; // no visible key: out = 0, weights = 0, lse = -inf
        double sum = 0;
        for (int j = 0; j < p.Lk; ++j)
          sum += visible[j] ? std::exp(s[j] - m) : 0.0;
        size_t row = ((size_t)b * p.H + h) * p.Lq + i;
        r.lse[row] = m + std::log(sum);
        for (int j = 0; j < p.Lk; ++j) {
          if (!visible[j])
            continue;
          double w = std::exp(s[j] - m) / sum;
          r.weights[row * p.Lk + j] = w;
          for (int c = 0; c < p.Dv; ++c)
            r.out[row * p.Dv + c] += w * v[(((size_t)b * p.G + g) * p.Lk + j) * p.Dv + c];
        }
      }
    }
  return r;
}

inline Vec uniform(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Vec x(n);
  for (float &e : x)
    e = dist(rng);
  return x;
}

inline Ref widen(const Vec &x) { return Ref(x.begin(), x.end()); }

/// x[b, t, :] (+ sinusoidal positions) @ w^T (+ bias), split into heads:
/// [B, L, M] -> [B, heads, L, width] (docs/language.md §4 (`project`)).
inline Ref projectHeads(const Vec &x, const Vec &w, const Vec *bias, int B, int L, int M, int heads,
                 int width, bool positional) {
  Ref r((size_t)B * heads * L * width, 0.0);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < L; ++t) {
      std::vector<double> row(M);
      for (int m = 0; m < M; ++m) {
        row[m] = x[((size_t)b * L + t) * M + m];
        if (positional) {
          double angle = t / std::pow(10000.0, (double)(m - m % 2) / M);
          row[m] += m % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
      }
      for (int h = 0; h < heads; ++h)
        for (int d = 0; d < width; ++d) {
          int col = h * width + d;
          double acc = bias ? (*bias)[col] : 0.0;
          for (int m = 0; m < M; ++m)
            acc += row[m] * w[(size_t)col * M + m]; // w : [heads*width, M] (nn.Linear)
          r[(((size_t)b * heads + h) * L + t) * width + d] = acc;
        }
    }
  return r;
}

/// The output projection: merged heads [B, L, H*Dv] @ w_o^T (+ b_o) -> [B, L, M].
inline Ref outputProject(const Ref &heads, const Vec &wo, const Vec *bo, int B, int L, int H,
                         int Dv, int M) {
  Ref r((size_t)B * L * M, 0.0);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < L; ++t)
      for (int m = 0; m < M; ++m) {
        double acc = bo ? (*bo)[m] : 0.0;
        for (int h = 0; h < H; ++h)
          for (int c = 0; c < Dv; ++c)
            acc += heads[(((size_t)b * H + h) * L + t) * Dv + c] *
                   wo[(size_t)m * H * Dv + (h * Dv + c)]; // w_o : [M, H*Dv]
        r[((size_t)b * L + t) * M + m] = acc;
      }
  return r;
}

/// Rows [t0, t0 + L) of packed [T, heads, W] as one sequence [1, heads, L, W].
inline Ref sequenceRows(const Vec &x, int heads, int W, int t0, int L) {
  Ref r((size_t)heads * L * W);
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < L; ++t)
      for (int w = 0; w < W; ++w)
        r[((size_t)h * L + t) * W + w] = x[((size_t)(t0 + t) * heads + h) * W + w];
  return r;
}

/// [B, L, heads, W] <-> [B, heads, L, W] (bshd <-> bhsd).
inline Ref swapMiddle(const Ref &x, int B, int n1, int n2, int W) {
  Ref r(x.size());
  for (int b = 0; b < B; ++b)
    for (int a = 0; a < n1; ++a)
      for (int c = 0; c < n2; ++c)
        for (int w = 0; w < W; ++w)
          r[(((size_t)b * n2 + c) * n1 + a) * W + w] = x[(((size_t)b * n1 + a) * n2 + c) * W + w];
  return r;
}

inline double maxAbs(const Ref &x) {
  double m = 0;
  for (double e : x)
    m = std::max(m, std::abs(e));
  return m;
}

/// max |got - ref| <= tol, with -inf matching -inf (lse of a masked row).
inline void expectClose(const char *what, const Vec &got, const Ref &ref, double tol,
                 const std::string &where) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double maxErr = 0;
  for (size_t n = 0; n < got.size(); ++n) {
    if (std::isinf(ref[n]) && ref[n] < 0) {
      EXPECT_TRUE(std::isinf(got[n]) && got[n] < 0) << what << "[" << n << "] " << where;
      continue;
    }
    ASSERT_TRUE(std::isfinite(got[n])) << what << "[" << n << "] " << where;
    maxErr = std::max(maxErr, std::abs(got[n] - ref[n]));
  }
  EXPECT_LE(maxErr, tol) << what << " " << where;
}

struct Sizes {
  int B, Lq, Lk;
};
inline const Sizes kSizes[] = {{1, 1, 1}, {2, 3, 3}, {1, 17, 17}, {2, 3, 17}, {1, 17, 3}, {1, 70, 130}};

inline std::string name(const Sizes &s) {
  return "B=" + std::to_string(s.B) + " Lq=" + std::to_string(s.Lq) +
         " Lk=" + std::to_string(s.Lk);
}

class Features : public ::testing::TestWithParam<int> {
protected:
  Sizes s = kSizes[GetParam()];
  std::mt19937 rng{4321};
};

} // namespace feature_reference
