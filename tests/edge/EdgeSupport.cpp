//===- EdgeSupport.cpp - Shared pieces of the edge-case tests -------------===//
//
// The reference is a direct transcription of docs/language.md §2 in double
// precision, favouring obviousness: scores of visible keys, their maximum,
// exponentials, sum, probabilities, out = P V and lse = m + log(sum). The
// runner builds attn tensors over the Problem's vectors in contract order.
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#ifndef ATTN_EDGE_LIB
#error "ATTN_EDGE_LIB must name the library compiled from edge.attn"
#endif

namespace attnc::edge {

const attn::Library &edgeLibrary() {
  static attn::Library lib = attn::Library::open(ATTN_EDGE_LIB);
  return lib;
}

attn::Kernel edgeKernel(const std::string &name) {
  const attn_kernel *k = attn_kernel_find(edgeLibrary().c(), name.c_str());
  if (!k)
    throw attn::Error(ATTN_ERROR_INVALID, "no kernel " + name + " in " ATTN_EDGE_LIB);
  return attn::Kernel(k);
}

Result run(const attn::Kernel &kernel, const Problem &p, bool withWeights) {
  Result r;
  r.out.assign(size_t(p.B) * p.H * p.Lq * p.Dv, -7.0f); // poison: every element is written
  r.lse.assign(size_t(p.B) * p.H * p.Lq, -7.0f);
  if (withWeights)
    r.weights.assign(size_t(p.B) * p.H * p.Lq * p.Lk, -7.0f);
  std::vector<attn::Tensor> args = {
      attn::Tensor(p.q.data(), {p.B, p.H, p.Lq, p.D}),
      attn::Tensor(p.k.data(), {p.B, p.G, p.Lk, p.D}),
      attn::Tensor(p.v.data(), {p.B, p.G, p.Lk, p.Dv}),
  };
  if (!p.validLen.empty())
    args.emplace_back(p.validLen.data(), std::vector<int64_t>{p.B});
  args.emplace_back(r.out.data(), std::vector<int64_t>{p.B, p.H, p.Lq, p.Dv});
  if (withWeights)
    args.emplace_back(r.weights.data(), std::vector<int64_t>{p.B, p.H, p.Lq, p.Lk});
  args.emplace_back(r.lse.data(), std::vector<int64_t>{p.B, p.H, p.Lq});
  kernel.run(args);
  return r;
}

Reference reference(const Problem &p) {
  const double inf = std::numeric_limits<double>::infinity();
  Reference ref;
  ref.out.assign(size_t(p.B) * p.H * p.Lq * p.Dv, 0.0);
  ref.weights.assign(size_t(p.B) * p.H * p.Lq * p.Lk, 0.0);
  ref.lse.assign(size_t(p.B) * p.H * p.Lq, -inf);
  std::vector<double> s(size_t(p.Lk));
  std::vector<bool> visible(size_t(p.Lk));
  for (int b = 0; b < p.B; ++b)
    for (int h = 0; h < p.H; ++h) {
      int g = h / (p.H / p.G);
      for (int i = 0; i < p.Lq; ++i) {
        int64_t ip = int64_t(i) + (p.Lk - p.Lq);
        size_t row = (size_t(b) * p.H + h) * p.Lq + i;
        double m = -inf;
        for (int j = 0; j < p.Lk; ++j) {
          bool vis = (!p.causal || j <= ip) && (p.validLen.empty() || j < p.validLen[size_t(b)]);
          visible[size_t(j)] = vis;
          if (!vis)
            continue;
          double dot = 0;
          for (int d = 0; d < p.D; ++d)
            dot += double(p.q[row * p.D + d]) *
                   double(p.k[((size_t(b) * p.G + g) * p.Lk + j) * p.D + d]);
          s[size_t(j)] = p.scale * dot;
          m = std::max(m, s[size_t(j)]);
        }
        if (m == -inf)
          continue; // no visible key
        double sum = 0;
        for (int j = 0; j < p.Lk; ++j)
          if (visible[size_t(j)])
            sum += std::exp(s[size_t(j)] - m);
        ref.lse[row] = m + std::log(sum);
        for (int j = 0; j < p.Lk; ++j) {
          if (!visible[size_t(j)])
            continue;
          double w = std::exp(s[size_t(j)] - m) / sum;
          ref.weights[row * p.Lk + j] = w;
          for (int c = 0; c < p.Dv; ++c)
            ref.out[row * p.Dv + c] +=
                w * double(p.v[((size_t(b) * p.G + g) * p.Lk + j) * p.Dv + c]);
        }
      }
    }
  return ref;
}

double maxAbsDiff(const std::vector<float> &got, const std::vector<double> &want) {
  const double inf = std::numeric_limits<double>::infinity();
  if (got.size() != want.size())
    return inf;
  double worst = 0;
  for (size_t x = 0; x < got.size(); ++x) {
    double g = got[x], w = want[x];
    if (std::isfinite(g) != std::isfinite(w))
      return inf;
    if (!std::isfinite(w)) {
      if (!(g == w)) // both infinite: same sign; NaN never matches
        return inf;
      continue;
    }
    worst = std::max(worst, std::fabs(g - w));
  }
  return worst;
}

double errorBound(const Problem &p) {
  double maxV = 0;
  for (float x : p.v)
    maxV = std::max(maxV, double(std::fabs(x)));
  return 1e-4 * std::max(1.0, maxV);
}

void expectMatchesReference(const Problem &p, const Result &got) {
  Reference want = reference(p);
  EXPECT_LE(maxAbsDiff(got.out, want.out), errorBound(p)) << "out";
  if (!got.weights.empty())
    EXPECT_LE(maxAbsDiff(got.weights, want.weights), 1e-4) << "weights";
  ASSERT_EQ(got.lse.size(), want.lse.size());
  for (size_t x = 0; x < want.lse.size(); ++x) {
    if (std::isfinite(want.lse[x]))
      EXPECT_NEAR(got.lse[x], want.lse[x], 1e-4 * std::max(1.0, std::fabs(want.lse[x])))
          << "lse[" << x << "]";
    else
      EXPECT_EQ(double(got.lse[x]), want.lse[x]) << "lse[" << x << "]";
  }
}

std::vector<float> uniform(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

} // namespace attnc::edge
