//===- main.cpp - A seq2seq decoder with Bahdanau attention ---------------===//
//
// The decoder of d2l's "Sequence-to-Sequence Learning with Attention", run
// for a few greedy steps on random weights. Each step: the attention kernel
// attnc generated from seq2seq_decoder.attn (additive score, valid_len mask,
// one query per sequence, query width 32 != key width 48) gives the context
// from the encoder outputs; the context and the embedded previous token go
// through a GRU cell (PyTorch's gate equations); a dense layer gives the
// logits. Every step is checked against the same step in float64 computed
// here; the program exits non-zero on a mismatch.
//
//===----------------------------------------------------------------------===//
#include "seq2seq_decoder_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr int64_t kB = 3;   // sequences decoded together
constexpr int64_t kLk = 9;  // source length (encoder outputs)
constexpr int64_t kD = 32;  // decoder hidden size: the query width
constexpr int64_t kK = 48;  // encoder output width: the key and value width
constexpr int64_t kN = 24;  // attention hidden size (additive score)
constexpr int64_t kE = 16;  // embedding size
constexpr int64_t kV = 20;  // vocabulary
constexpr int64_t kX = kK + kE; // GRU input: [context, embedding]
constexpr int kSteps = 4;

std::vector<float> randomVector(std::mt19937 &rng, size_t n, double scale) {
  std::uniform_real_distribution<float> dist(float(-scale), float(scale));
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

struct Model {
  std::vector<float> wq, wk, wv;          // attention: [N, D], [N, K], [N]
  std::vector<float> embedding;           // [V, E]
  std::vector<float> wih, whh, bih, bhh;  // GRU: [3D, X], [3D, D], [3D], [3D] (r, z, n)
  std::vector<float> dense, denseBias;    // [V, D], [V]

  explicit Model(std::mt19937 &rng) {
    wq = randomVector(rng, kN * kD, 1 / std::sqrt(double(kD)));
    wk = randomVector(rng, kN * kK, 1 / std::sqrt(double(kK)));
    wv = randomVector(rng, kN, 1 / std::sqrt(double(kN)));
    embedding = randomVector(rng, kV * kE, 1.0);
    double g = 1 / std::sqrt(double(kD));
    wih = randomVector(rng, 3 * kD * kX, g);
    whh = randomVector(rng, 3 * kD * kD, g);
    bih = randomVector(rng, 3 * kD, g);
    bhh = randomVector(rng, 3 * kD, g);
    dense = randomVector(rng, kV * kD, g);
    denseBias = randomVector(rng, kV, g);
  }
};

/// What one decoder step produces, in T (float for the app, double for the
/// reference).
template <typename T> struct Step {
  std::vector<T> context; // [B, K]
  std::vector<T> hidden;  // [B, D]
  std::vector<T> logits;  // [B, V]
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

/// The GRU cell and the dense layer, shared by both paths (in T).
template <typename T>
void gruAndDense(const Model &m, const std::vector<int> &tokens, const std::vector<float> &h,
                 Step<T> &s) {
  s.hidden.assign(kB * kD, 0);
  s.logits.assign(kB * kV, 0);
  for (int64_t b = 0; b < kB; ++b) {
    std::vector<T> x(kX);
    for (int64_t c = 0; c < kK; ++c)
      x[c] = s.context[b * kK + c];
    for (int64_t e = 0; e < kE; ++e)
      x[kK + e] = m.embedding[tokens[b] * kE + e];
    std::vector<T> gi(3 * kD), gh(3 * kD);
    for (int64_t r = 0; r < 3 * kD; ++r) {
      T a = m.bih[r], c = m.bhh[r];
      for (int64_t i = 0; i < kX; ++i)
        a += T(m.wih[r * kX + i]) * x[i];
      for (int64_t i = 0; i < kD; ++i)
        c += T(m.whh[r * kD + i]) * T(h[b * kD + i]);
      gi[r] = a;
      gh[r] = c;
    }
    for (int64_t d = 0; d < kD; ++d) {
      T r = T(sigmoid(double(gi[d] + gh[d])));
      T z = T(sigmoid(double(gi[kD + d] + gh[kD + d])));
      T n = std::tanh(gi[2 * kD + d] + r * gh[2 * kD + d]);
      s.hidden[b * kD + d] = (1 - z) * n + z * T(h[b * kD + d]);
    }
    for (int64_t v = 0; v < kV; ++v) {
      T a = m.denseBias[v];
      for (int64_t d = 0; d < kD; ++d)
        a += T(m.dense[v * kD + d]) * s.hidden[b * kD + d];
      s.logits[b * kV + v] = a;
    }
  }
}

/// The float64 reference of one step, attention included (d2l's
/// AdditiveAttention with masked_softmax over the first valid_len keys).
Step<double> referenceStep(const Model &m, const std::vector<int> &tokens,
                           const std::vector<float> &h, const std::vector<float> &enc,
                           const std::vector<int32_t> &validLen) {
  Step<double> s;
  s.context.assign(kB * kK, 0);
  for (int64_t b = 0; b < kB; ++b) {
    std::vector<double> wqh(kN, 0);
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t d = 0; d < kD; ++d)
        wqh[n] += double(m.wq[n * kD + d]) * h[b * kD + d];
    std::vector<double> score(kLk, -INFINITY);
    double top = -INFINITY;
    for (int64_t j = 0; j < validLen[b]; ++j) {
      double sc = 0;
      for (int64_t n = 0; n < kN; ++n) {
        double f = wqh[n];
        for (int64_t c = 0; c < kK; ++c)
          f += double(m.wk[n * kK + c]) * enc[(b * kLk + j) * kK + c];
        sc += double(m.wv[n]) * std::tanh(f);
      }
      score[j] = sc;
      top = std::max(top, sc);
    }
    double sum = 0;
    for (int64_t j = 0; j < validLen[b]; ++j)
      sum += std::exp(score[j] - top);
    for (int64_t j = 0; j < validLen[b]; ++j)
      for (int64_t c = 0; c < kK; ++c)
        s.context[b * kK + c] += std::exp(score[j] - top) / sum * enc[(b * kLk + j) * kK + c];
  }
  gruAndDense(m, tokens, h, s);
  return s;
}

/// The app's step: the generated attention kernel, then the GRU in float.
bool kernelStep(const Model &m, const std::vector<int> &tokens, const std::vector<float> &h,
                const std::vector<float> &enc, const std::vector<int32_t> &validLen,
                Step<float> &s) {
  s.context.assign(kB * kK, 0);
  // q: [B, 1, 1, D] = the hidden state; k = v: [B, 1, Lk, K] = the encoder
  // outputs; out: [B, 1, 1, K] = the context.
  int err = bahdanau_attention_run(h.data(), enc.data(), enc.data(), m.wq.data(), m.wk.data(),
                                   m.wv.data(), validLen.data(), s.context.data(), kB, kLk);
  if (err) {
    std::fprintf(stderr, "bahdanau_attention_run failed with error %d\n", err);
    return false;
  }
  gruAndDense(m, tokens, h, s);
  return true;
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
  std::mt19937 rng(2024);
  Model model(rng);
  std::vector<float> enc = randomVector(rng, kB * kLk * kK, 1.0);
  std::vector<float> hidden = randomVector(rng, kB * kD, 1.0); // encoder's final state
  std::vector<int32_t> validLen = {9, 4, 1};
  std::vector<int> tokens = {1, 1, 1}; // <bos>

  bool ok = true;
  for (int step = 0; step < kSteps && ok; ++step) {
    Step<float> got;
    if (!kernelStep(model, tokens, hidden, enc, validLen, got))
      return 1;
    Step<double> want = referenceStep(model, tokens, hidden, enc, validLen);
    double e1 = maxError(got.context, want.context);
    double e2 = maxError(got.hidden, want.hidden);
    double e3 = maxError(got.logits, want.logits);
    ok = e1 <= 1e-4 && e2 <= 1e-4 && e3 <= 1e-4;
    // Greedy decoding: the next input is the most likely token.
    for (int64_t b = 0; b < kB; ++b)
      tokens[b] = int(std::max_element(got.logits.begin() + b * kV,
                                       got.logits.begin() + (b + 1) * kV) -
                      (got.logits.begin() + b * kV));
    std::printf("step %d: tokens %d %d %d; max error vs float64: context %.2e, hidden %.2e, "
                "logits %.2e\n",
                step, tokens[0], tokens[1], tokens[2], e1, e2, e3);
    hidden = got.hidden;
  }
  if (!ok) {
    std::fprintf(stderr, "mismatch against the float64 reference (tolerance 1e-4)\n");
    return 1;
  }
  std::printf("Success!\n");
  return 0;
}
