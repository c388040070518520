//===- main.cpp - A Llama-style attention sublayer around a generated kernel ===//
//
// h = x + Attention(RMSNorm(x)) for two prompts of 37 tokens, with random
// weights in the checkpoint's layout. The attention is the kernel attnc
// generated from llama_attention.attn; RMSNorm and the residual are plain
// C++. The reference follows Hugging Face's LlamaAttention step by step in
// float64: the projections (x @ W^T), the cos/sin cache with
// `cat(freqs, freqs)`, `q * cos + rotate_half(q) * sin`, repeat_kv, the
// causal mask, softmax, and o_proj. Exits non-zero on a mismatch.
//
//===----------------------------------------------------------------------===//
#include "llama_attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr int kB = 2, kL = 37;            // prompts, tokens each
constexpr int kM = 256, kH = 8, kG = 2;   // hidden size, query heads, key/value heads
constexpr int kD = 32;                    // head_dim
constexpr double kTheta = 500000;         // rope_theta of Llama 3
constexpr double kEps = 1e-5;             // rms_norm_eps

std::vector<float> randomVector(std::mt19937 &rng, size_t n, double scale) {
  std::uniform_real_distribution<float> dist(float(-scale), float(scale));
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// LlamaRMSNorm over the hidden size, in float64 or float32.
template <typename T>
std::vector<T> rmsNorm(const std::vector<float> &x, const std::vector<float> &gain) {
  std::vector<T> y(x.size());
  for (size_t r = 0; r < x.size() / kM; ++r) {
    T sum = 0;
    for (int c = 0; c < kM; ++c)
      sum += T(x[r * kM + c]) * T(x[r * kM + c]);
    T inv = T(1) / std::sqrt(sum / kM + T(kEps));
    for (int c = 0; c < kM; ++c)
      y[r * kM + c] = T(gain[c]) * (T(x[r * kM + c]) * inv);
  }
  return y;
}

/// nn.Linear without bias: y[r, o] = sum_c x[r, c] w[o, c].
std::vector<double> linear(const std::vector<double> &x, const std::vector<float> &w, int in,
                           int out) {
  std::vector<double> y(x.size() / in * out, 0.0);
  for (size_t r = 0; r < x.size() / in; ++r)
    for (int o = 0; o < out; ++o) {
      double a = 0;
      for (int c = 0; c < in; ++c)
        a += x[r * in + c] * double(w[(size_t)o * in + c]);
      y[r * out + o] = a;
    }
  return y;
}

/// apply_rotary_pos_emb on one head's row at position t: x * cos +
/// rotate_half(x) * sin, with cos = cat(cos(t f), cos(t f)).
void rotateHalf(double *row, int t) {
  double turned[kD];
  for (int d = 0; d < kD; ++d) {
    int c = d % (kD / 2);
    double angle = t * std::pow(kTheta, -2.0 * c / kD);
    double rotated = d < kD / 2 ? -row[d + kD / 2] : row[d - kD / 2]; // rotate_half
    turned[d] = row[d] * std::cos(angle) + rotated * std::sin(angle);
  }
  std::copy(turned, turned + kD, row);
}

/// LlamaAttention.forward in float64 on normed inputs [B, L, M].
std::vector<double> referenceAttention(const std::vector<double> &xn,
                                       const std::vector<float> &wq,
                                       const std::vector<float> &wk,
                                       const std::vector<float> &wv,
                                       const std::vector<float> &wo) {
  std::vector<double> q = linear(xn, wq, kM, kH * kD), k = linear(xn, wk, kM, kG * kD),
                      v = linear(xn, wv, kM, kG * kD);
  for (int b = 0; b < kB; ++b)
    for (int t = 0; t < kL; ++t) {
      for (int h = 0; h < kH; ++h)
        rotateHalf(&q[((size_t)b * kL + t) * kH * kD + h * kD], t);
      for (int g = 0; g < kG; ++g)
        rotateHalf(&k[((size_t)b * kL + t) * kG * kD + g * kD], t);
    }
  std::vector<double> heads((size_t)kB * kL * kH * kD, 0.0);
  for (int b = 0; b < kB; ++b)
    for (int h = 0; h < kH; ++h) {
      int g = h / (kH / kG); // repeat_kv
      for (int i = 0; i < kL; ++i) {
        std::vector<double> s(i + 1);
        double top = -INFINITY, sum = 0;
        for (int j = 0; j <= i; ++j) { // the causal mask
          double dot = 0;
          for (int d = 0; d < kD; ++d)
            dot += q[((size_t)b * kL + i) * kH * kD + h * kD + d] *
                   k[((size_t)b * kL + j) * kG * kD + g * kD + d];
          s[j] = dot / std::sqrt(double(kD));
          top = std::max(top, s[j]);
        }
        for (int j = 0; j <= i; ++j)
          sum += std::exp(s[j] - top);
        for (int j = 0; j <= i; ++j)
          for (int d = 0; d < kD; ++d)
            heads[((size_t)b * kL + i) * kH * kD + h * kD + d] +=
                std::exp(s[j] - top) / sum * v[((size_t)b * kL + j) * kG * kD + g * kD + d];
      }
    }
  return linear(heads, wo, kH * kD, kM);
}

} // namespace

int main() {
  std::mt19937 rng(2024);
  std::vector<float> x = randomVector(rng, (size_t)kB * kL * kM, 1.0);
  std::vector<float> norm = randomVector(rng, kM, 0.2);
  for (float &g : norm)
    g += 1;
  double s = 1 / std::sqrt(double(kM));
  std::vector<float> wq = randomVector(rng, (size_t)kH * kD * kM, s),
                     wk = randomVector(rng, (size_t)kG * kD * kM, s),
                     wv = randomVector(rng, (size_t)kG * kD * kM, s),
                     wo = randomVector(rng, (size_t)kM * kH * kD, 1 / std::sqrt(double(kH * kD)));

  // h = x + attention(rms_norm(x)), the attention from the generated kernel.
  std::vector<float> xn = rmsNorm<float>(x, norm), attention(x.size());
  int err = llama_attention_run(xn.data(), wq.data(), wk.data(), wv.data(), wo.data(),
                                attention.data(), kB, kL);
  if (err != 0) {
    std::fprintf(stderr, "llama_attention_run failed: %d\n", err);
    return 1;
  }
  std::vector<float> h(x.size());
  for (size_t n = 0; n < x.size(); ++n)
    h[n] = x[n] + attention[n];

  std::vector<double> ref = referenceAttention(rmsNorm<double>(x, norm), wq, wk, wv, wo);
  double worst = 0, scale = 1;
  for (size_t n = 0; n < x.size(); ++n) {
    double want = double(x[n]) + ref[n];
    worst = std::max(worst, std::isfinite(h[n]) ? std::fabs(h[n] - want) : INFINITY);
    scale = std::max(scale, std::fabs(want));
  }
  const double tolerance = 1e-4 * scale;
  std::printf("Llama-style attention [B=%d, L=%d, hidden %d, %d heads / %d kv heads, rope "
              "theta %.0f]: max |error| vs float64 %.2e (tolerance %.2e)\n",
              kB, kL, kM, kH, kG, kTheta, worst, tolerance);
  return worst <= tolerance ? 0 : 1;
}
