//===- main.cpp - A transformer encoder block around a generated kernel ---===//
//
// One encoder block of d2l's transformer on random weights: the
// self-attention sublayer is the kernel attnc generated from
// transformer_encoder.attn (sinusoidal positions, q/k/v/out projections with
// biases, 8 heads, valid_len mask); the residual connections, layer norms
// and the position-wise feed-forward network are plain C++. The whole block
// is checked against the same block in float64 computed here, attention
// included; the program exits non-zero on a mismatch.
//
//===----------------------------------------------------------------------===//
#include "transformer_encoder_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr int64_t kB = 2;   // sequences
constexpr int64_t kL = 10;  // tokens per sequence
constexpr int64_t kM = 64;  // model width
constexpr int64_t kH = 8;   // heads
constexpr int64_t kD = kM / kH;
constexpr int64_t kF = 128; // feed-forward hidden width

std::vector<float> randomVector(std::mt19937 &rng, size_t n, double scale) {
  std::uniform_real_distribution<float> dist(float(-scale), float(scale));
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

struct Block {
  std::vector<float> wq, wk, wv, wo, bq, bk, bv, bo; // nn.Linear's [out, in]: [M, M]; biases [M]
  std::vector<float> w1, b1, w2, b2;                 // FFN: [M, F], [F], [F, M], [M]
  std::vector<float> g1, beta1, g2, beta2;           // layer norms: [M]

  explicit Block(std::mt19937 &rng) {
    double s = 1 / std::sqrt(double(kM));
    for (auto *w : {&wq, &wk, &wv, &wo})
      *w = randomVector(rng, kM * kM, s);
    for (auto *b : {&bq, &bk, &bv, &bo})
      *b = randomVector(rng, kM, s);
    w1 = randomVector(rng, kM * kF, s);
    b1 = randomVector(rng, kF, s);
    w2 = randomVector(rng, kF * kM, 1 / std::sqrt(double(kF)));
    b2 = randomVector(rng, kM, s);
    g1 = randomVector(rng, kM, 0.2);
    g2 = randomVector(rng, kM, 0.2);
    for (auto *g : {&g1, &g2})
      for (float &x : *g)
        x += 1;
    beta1 = randomVector(rng, kM, 0.1);
    beta2 = randomVector(rng, kM, 0.1);
  }
};

/// d2l's PositionalEncoding: P[t, 2c] = sin(t / 10000^(2c/M)), P[t, 2c+1] = cos(...).
double position(int64_t t, int64_t col) {
  double angle = double(t) / std::pow(10000.0, double(col - col % 2) / double(kM));
  return col % 2 ? std::cos(angle) : std::sin(angle);
}

/// LayerNorm over the last dimension of `x` [rows, M] (eps 1e-5).
template <typename T>
void layerNorm(std::vector<T> &x, const std::vector<float> &g, const std::vector<float> &beta) {
  for (size_t r = 0; r < x.size() / kM; ++r) {
    T mean = 0, var = 0;
    for (int64_t c = 0; c < kM; ++c)
      mean += x[r * kM + c];
    mean /= kM;
    for (int64_t c = 0; c < kM; ++c)
      var += (x[r * kM + c] - mean) * (x[r * kM + c] - mean);
    var /= kM;
    for (int64_t c = 0; c < kM; ++c)
      x[r * kM + c] = (x[r * kM + c] - mean) / std::sqrt(var + T(1e-5)) * T(g[c]) + T(beta[c]);
  }
}

/// Y = AddNorm(X + P, attention); out = AddNorm(Y, FFN(Y)), in T.
template <typename T>
std::vector<T> restOfBlock(const Block &w, const std::vector<float> &x,
                           const std::vector<T> &attention) {
  std::vector<T> y(kB * kL * kM);
  for (int64_t r = 0; r < kB * kL; ++r)
    for (int64_t c = 0; c < kM; ++c)
      y[r * kM + c] = T(x[r * kM + c]) + T(position(r % kL, c)) + attention[r * kM + c];
  layerNorm(y, w.g1, w.beta1);
  std::vector<T> out(y.size());
  for (int64_t r = 0; r < kB * kL; ++r) {
    std::vector<T> hidden(kF);
    for (int64_t f = 0; f < kF; ++f) {
      T a = w.b1[f];
      for (int64_t c = 0; c < kM; ++c)
        a += y[r * kM + c] * T(w.w1[c * kF + f]);
      hidden[f] = std::max(a, T(0));
    }
    for (int64_t c = 0; c < kM; ++c) {
      T a = w.b2[c];
      for (int64_t f = 0; f < kF; ++f)
        a += hidden[f] * T(w.w2[f * kM + c]);
      out[r * kM + c] = y[r * kM + c] + a;
    }
  }
  layerNorm(out, w.g2, w.beta2);
  return out;
}

/// The float64 reference of the attention sublayer (nn.MultiheadAttention
/// with biases; keys j >= valid_len[b] masked out).
std::vector<double> referenceAttention(const Block &w, const std::vector<float> &x,
                                       const std::vector<int32_t> &validLen) {
  std::vector<double> xp(kB * kL * kM), q(xp.size(), 0), k(xp.size(), 0), v(xp.size(), 0);
  for (int64_t r = 0; r < kB * kL; ++r)
    for (int64_t c = 0; c < kM; ++c)
      xp[r * kM + c] = double(x[r * kM + c]) + position(r % kL, c);
  auto project = [&](const std::vector<double> &in, const std::vector<float> &wt,
                     const std::vector<float> &bias, std::vector<double> &out) {
    for (int64_t r = 0; r < kB * kL; ++r)
      for (int64_t o = 0; o < kM; ++o) {
        double a = bias[o];
        for (int64_t c = 0; c < kM; ++c)
          a += in[r * kM + c] * double(wt[o * kM + c]); // x @ w^T
        out[r * kM + o] = a;
      }
  };
  project(xp, w.wq, w.bq, q);
  project(xp, w.wk, w.bk, k);
  project(xp, w.wv, w.bv, v);
  std::vector<double> heads(xp.size(), 0), out(xp.size());
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t i = 0; i < kL; ++i) {
        std::vector<double> s(kL);
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < validLen[b]; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < kD; ++d)
            dot += q[(b * kL + i) * kM + h * kD + d] * k[(b * kL + j) * kM + h * kD + d];
          s[j] = dot / std::sqrt(double(kD));
          top = std::max(top, s[j]);
        }
        for (int64_t j = 0; j < validLen[b]; ++j)
          sum += std::exp(s[j] - top);
        for (int64_t j = 0; j < validLen[b]; ++j)
          for (int64_t d = 0; d < kD; ++d)
            heads[(b * kL + i) * kM + h * kD + d] +=
                std::exp(s[j] - top) / sum * v[(b * kL + j) * kM + h * kD + d];
      }
  project(heads, w.wo, w.bo, out);
  return out;
}

double maxError(const std::vector<float> &got, const std::vector<double> &want) {
  double worst = 0, scale = 1;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::isnan(got[i]) ? INFINITY : std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return worst / scale;
}

} // namespace

int main() {
  std::mt19937 rng(7);
  Block block(rng);
  std::vector<float> x = randomVector(rng, kB * kL * kM, 1.0); // token embeddings
  std::vector<int32_t> validLen = {10, 6};

  std::vector<float> attention(x.size());
  int err = encoder_self_attention_run(x.data(), block.wq.data(), block.wk.data(),
                                       block.wv.data(), block.wo.data(), block.bq.data(),
                                       block.bk.data(), block.bv.data(), block.bo.data(),
                                       validLen.data(), attention.data(), kB, kL);
  if (err) {
    std::fprintf(stderr, "encoder_self_attention_run failed with error %d\n", err);
    return 1;
  }
  std::vector<float> got = restOfBlock<float>(block, x, std::vector<float>(attention));

  std::vector<double> wantAttention = referenceAttention(block, x, validLen);
  std::vector<double> want = restOfBlock<double>(block, x, wantAttention);
  double e1 = maxError(attention, wantAttention);
  double e2 = maxError(got, want);
  std::printf("encoder block [B=%lld, L=%lld, model %lld, %lld heads]: max error vs float64: "
              "attention %.2e, block output %.2e\n",
              (long long)kB, (long long)kL, (long long)kM, (long long)kH, e1, e2);
  if (!(e1 <= 1e-4 && e2 <= 1e-4)) {
    std::fprintf(stderr, "mismatch against the float64 reference (tolerance 1e-4)\n");
    return 1;
  }
  std::printf("Success!\n");
  return 0;
}
