//===- Reference.h - An attention problem and its float64 reference -*- C++ -*-===//
//
// Random bhsd inputs for one attention problem (MHA / GQA, causal,
// valid_len) and the float64 reference of docs/language.md §2 with the
// scaled_dot score, shared by the runtime's end-to-end, run-time
// compilation and shared-runtime tests.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace attn_test {

/// One bhsd attention problem with its float64 reference.
struct Problem {
  int64_t B, H, G, Lq, Lk, D, Dv;
  bool causal = false;
  std::vector<int32_t> validLen; // empty: no valid_len mask
  std::vector<float> q, k, v, out, lse;

  Problem(int64_t B, int64_t H, int64_t G, int64_t Lq, int64_t Lk, int64_t D,
          int64_t Dv, unsigned seed = 7)
      : B(B), H(H), G(G), Lq(Lq), Lk(Lk), D(D), Dv(Dv) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    q.resize(size_t(B * H * Lq * D));
    k.resize(size_t(B * G * Lk * D));
    v.resize(size_t(B * G * Lk * Dv));
    for (auto *vec : {&q, &k, &v})
      for (float &x : *vec)
        x = dist(rng);
    out.assign(size_t(B * H * Lq * Dv), NAN);
    lse.assign(size_t(B * H * Lq), NAN);
  }
  std::vector<int64_t> qShape() const { return {B, H, Lq, D}; }
  std::vector<int64_t> kShape() const { return {B, G, Lk, D}; }
  std::vector<int64_t> vShape() const { return {B, G, Lk, Dv}; }
  std::vector<int64_t> outShape() const { return {B, H, Lq, Dv}; }

  /// max |out - ref| (and |lse - ref| when `withLse`), scale 1/sqrt(D).
  double maxError(bool withLse) const {
    double worst = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h) {
        int64_t g = h / (H / G);
        for (int64_t i = 0; i < Lq; ++i) {
          std::vector<double> s(static_cast<size_t>(Lk), -INFINITY);
          double m = -INFINITY;
          for (int64_t j = 0; j < Lk; ++j) {
            bool visible = (!causal || j <= i + (Lk - Lq)) &&
                           (validLen.empty() || j < validLen[size_t(b)]);
            if (!visible)
              continue;
            double dot = 0;
            for (int64_t d = 0; d < D; ++d)
              dot += double(q[size_t(((b * H + h) * Lq + i) * D + d)]) *
                     double(k[size_t(((b * G + g) * Lk + j) * D + d)]);
            s[size_t(j)] = dot / std::sqrt(double(D));
            m = std::max(m, s[size_t(j)]);
          }
          double sum = 0;
          for (double &x : s)
            sum += (x = std::isinf(x) ? 0 : std::exp(x - m));
          for (int64_t e = 0; e < Dv; ++e) {
            double ref = 0;
            for (int64_t j = 0; j < Lk; ++j)
              if (sum > 0)
                ref += s[size_t(j)] / sum *
                       double(v[size_t(((b * G + g) * Lk + j) * Dv + e)]);
            double got = out[size_t(((b * H + h) * Lq + i) * Dv + e)];
            worst = std::max(worst, std::isnan(got) ? INFINITY : std::fabs(got - ref));
          }
          if (withLse) {
            double ref = sum > 0 ? m + std::log(sum) : -INFINITY;
            double got = lse[size_t((b * H + h) * Lq + i)];
            if (!(std::isinf(ref) && got == ref))
              worst = std::max(worst, std::isnan(got) ? INFINITY : std::fabs(got - ref));
          }
        }
      }
    return worst;
  }
};

} // namespace attn_test
