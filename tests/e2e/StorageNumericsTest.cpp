//===- StorageNumericsTest.cpp - f16 / bf16 storage vs float64 ------------===//
//
// The kernels of storage.attn (docs/language.md, storage types): 16-bit q, k, v, x, weights
// and biases, f32 arithmetic, results rounded once. The float64 reference is
// computed from the same rounded inputs, and the bound is the spec's:
// 8e-3 * max(1, max |v|) for bf16, 2e-3 * max(1, max |v|) for f16 (max |ref
// out| with projections); weights have the same relative bound and lse the
// bound absolutely. Odd sizes, fully masked rows (Lq > Lk under causal) and
// scores near +-1e4.
//
//===----------------------------------------------------------------------===//
#include "FeatureReference.h"
#include "runtime/HalfFloat.h"
#include "storage_generic_kernels.h"
#include "storage_kernels.h"

#include <cstdint>

namespace {

using namespace feature_reference;
using namespace attnc::runtime;

enum class Half { F16, BF16 };

/// The spec's bound factor of a storage type.
double boundOf(Half t) { return t == Half::BF16 ? 8e-3 : 2e-3; }

/// A tensor stored in 16 bits: its bits and their exact float values.
struct Stored {
  std::vector<uint16_t> bits;
  Vec values;
};

Stored store(const Vec &x, Half t) {
  Stored s{std::vector<uint16_t>(x.size()), Vec(x.size())};
  for (size_t n = 0; n < x.size(); ++n) {
    s.bits[n] = t == Half::BF16 ? floatToBf16(x[n]) : floatToF16(x[n]);
    s.values[n] = t == Half::BF16 ? bf16ToFloat(s.bits[n]) : f16ToFloat(s.bits[n]);
  }
  return s;
}

Stored uniformStored(size_t n, std::mt19937 &rng, Half t, float range = 1.f) {
  Vec x = uniform(n, rng);
  for (float &e : x)
    e *= range;
  return store(x, t);
}

/// A 16-bit result as floats (NaN bits stay NaN: expectClose then fails).
Vec loaded(const std::vector<uint16_t> &bits, Half t) {
  Vec x(bits.size());
  for (size_t n = 0; n < bits.size(); ++n)
    x[n] = t == Half::BF16 ? bf16ToFloat(bits[n]) : f16ToFloat(bits[n]);
  return x;
}

std::vector<uint16_t> nanBits(size_t n) { return std::vector<uint16_t>(n, 0x7fff); }

double boundFor(Half t, const Ref &scaleOf) { return boundOf(t) * std::max(1.0, maxAbs(scaleOf)); }

class Storage : public Features {};

TEST_P(Storage, Bf16CausalGqaWithWeightsAndLse) {
  const int H = 4, G = 2, D = 12, Dv = 5;
  for (float range : {1.f, 60.f}) { // 60: scores up to ~1e4
    Stored q = uniformStored((size_t)s.B * H * s.Lq * D, rng, Half::BF16, range),
           k = uniformStored((size_t)s.B * G * s.Lk * D, rng, Half::BF16, range),
           v = uniformStored((size_t)s.B * G * s.Lk * Dv, rng, Half::BF16);
    std::vector<uint16_t> out = nanBits((size_t)s.B * H * s.Lq * Dv),
                          weights = nanBits((size_t)s.B * H * s.Lq * s.Lk);
    Vec lse((size_t)s.B * H * s.Lq, NAN);
    ASSERT_EQ(bf16_causal_gqa_run(q.bits.data(), k.bits.data(), v.bits.data(), out.data(),
                                  weights.data(), lse.data(), s.B, s.Lq, s.Lk),
              0);
    Problem p{s.B, H, G, D, Dv, s.Lq, s.Lk, 1 / std::sqrt((double)D)};
    p.mask = [](const At &a) { return a.j <= a.ip; };
    Outputs r = attention(p, widen(q.values), widen(k.values), widen(v.values));
    std::string where = name(s) + " range " + std::to_string(range);
    double bound = boundFor(Half::BF16, widen(v.values));
    expectClose("out", loaded(out, Half::BF16), r.out, bound, where);
    expectClose("weights", loaded(weights, Half::BF16), r.weights, boundOf(Half::BF16), where);
    expectClose("lse", lse, r.lse, boundOf(Half::BF16), where);
  }
}

TEST_P(Storage, F16WindowOrSinkWithAlibiBshd) {
  const int H = 3, D = 8;
  Stored q = uniformStored((size_t)s.B * s.Lq * H * D, rng, Half::F16),
         k = uniformStored((size_t)s.B * s.Lk * H * D, rng, Half::F16),
         v = uniformStored((size_t)s.B * s.Lk * H * D, rng, Half::F16, 3.f);
  std::vector<uint16_t> out = nanBits(q.bits.size());
  Vec lse((size_t)s.B * H * s.Lq, NAN);
  ASSERT_EQ(f16_window_alibi_bshd_run(q.bits.data(), k.bits.data(), v.bits.data(), out.data(),
                                      lse.data(), s.B, s.Lq, s.Lk),
            0);
  Problem p{s.B, H, H, D, D, s.Lq, s.Lk, 1 / std::sqrt((double)D)};
  p.mask = [](const At &a) { return (a.j <= a.ip && a.j > a.ip - 5) || a.j < 2; };
  // ALiBi's slopes for 3 heads: 2^-4 and 2^-8 of the 2-head table, then 2^-2.
  p.bias = [](const At &a) {
    const double slopes[] = {std::pow(2.0, -4), std::pow(2.0, -8), std::pow(2.0, -2)};
    return -slopes[a.h] * (double)(a.ip - a.j);
  };
  Outputs r = attention(p, swapMiddle(widen(q.values), s.B, s.Lq, H, D),
                        swapMiddle(widen(k.values), s.B, s.Lk, H, D),
                        swapMiddle(widen(v.values), s.B, s.Lk, H, D));
  double bound = boundFor(Half::F16, widen(v.values));
  expectClose("out", loaded(out, Half::F16), swapMiddle(r.out, s.B, H, s.Lq, D), bound, name(s));
  expectClose("lse", lse, r.lse, boundOf(Half::F16), name(s));
}

TEST_P(Storage, Bf16CacheUnderF32Queries) {
  const int H = 4, G = 1, D = 16;
  Vec q = uniform((size_t)s.B * H * s.Lq * D, rng);
  Stored k = uniformStored((size_t)s.B * G * s.Lk * D, rng, Half::BF16, 4.f),
         v = uniformStored((size_t)s.B * G * s.Lk * D, rng, Half::BF16);
  Vec out((size_t)s.B * H * s.Lq * D, NAN), lse((size_t)s.B * H * s.Lq, NAN);
  ASSERT_EQ(bf16_kv_over_f32_queries_run(q.data(), k.bits.data(), v.bits.data(), out.data(),
                                         lse.data(), s.B, s.Lq, s.Lk),
            0);
  Problem p{s.B, H, G, D, D, s.Lq, s.Lk, 0.25};
  p.mask = [](const At &a) { return a.j <= a.ip; };
  Outputs r = attention(p, widen(q), widen(k.values), widen(v.values));
  expectClose("out", out, r.out, boundFor(Half::BF16, widen(v.values)), name(s));
  expectClose("lse", lse, r.lse, boundOf(Half::BF16), name(s));
}

TEST_P(Storage, F16CacheUnderBf16Queries) {
  const int H = 2, D = 8;
  Stored q = uniformStored((size_t)s.B * H * s.Lq * D, rng, Half::BF16),
         k = uniformStored((size_t)s.B * H * s.Lk * D, rng, Half::F16),
         v = uniformStored((size_t)s.B * H * s.Lk * D, rng, Half::F16);
  std::vector<uint16_t> out = nanBits(q.bits.size());
  ASSERT_EQ(f16_kv_over_bf16_queries_run(q.bits.data(), k.bits.data(), v.bits.data(), out.data(),
                                         s.B, s.Lq, s.Lk),
            0);
  Problem p{s.B, H, H, D, D, s.Lq, s.Lk, 1 / std::sqrt((double)D)};
  Outputs r = attention(p, widen(q.values), widen(k.values), widen(v.values));
  expectClose("out", loaded(out, Half::BF16), r.out, boundFor(Half::BF16, widen(v.values)),
              name(s));
}

/// docs/language.md, rotary embeddings in float64 on [B, heads, L, D] rows (half pairs, base 10000).
Ref rotatedRows(const Ref &x, int B, int heads, int L, int D) {
  Ref r = x;
  for (size_t row = 0; row < (size_t)B * heads * L; ++row) {
    long t = (long)(row % (size_t)L);
    for (int c = 0; c < D / 2; ++c) {
      double angle = (double)t * std::pow(10000.0, -2.0 * c / D);
      double a = x[row * D + c], b = x[row * D + c + D / 2];
      r[row * D + c] = a * std::cos(angle) - b * std::sin(angle);
      r[row * D + c + D / 2] = b * std::cos(angle) + a * std::sin(angle);
    }
  }
  return r;
}

TEST_P(Storage, Bf16LlamaLayerWithProjectionBiases) {
  const int H = 4, G = 2, D = 6, M = 8, L = s.Lq;
  auto st = [&](size_t n) { return uniformStored(n, rng, Half::BF16); };
  Stored x = st((size_t)s.B * L * M), wq = st((size_t)H * D * M), wk = st((size_t)G * D * M),
         wv = st((size_t)G * D * M), wo = st((size_t)M * H * D), bq = st((size_t)H * D),
         bv = st((size_t)G * D), bo = st((size_t)M);
  std::vector<uint16_t> out = nanBits((size_t)s.B * L * M);
  ASSERT_EQ(bf16_llama_layer_run(x.bits.data(), wq.bits.data(), wk.bits.data(), wv.bits.data(),
                                 wo.bits.data(), bq.bits.data(), bv.bits.data(), bo.bits.data(),
                                 out.data(), s.B, L),
            0);
  Ref q = rotatedRows(projectHeads(x.values, wq.values, &bq.values, s.B, L, M, H, D, false), s.B,
                      H, L, D);
  Ref k = rotatedRows(projectHeads(x.values, wk.values, nullptr, s.B, L, M, G, D, false), s.B, G,
                      L, D);
  Ref v = projectHeads(x.values, wv.values, &bv.values, s.B, L, M, G, D, false);
  Problem p{s.B, H, G, D, D, L, L, 1 / std::sqrt((double)D)};
  p.mask = [](const At &a) { return a.j <= a.ip; };
  Ref ref = outputProject(attention(p, q, k, v).out, wo.values, &bo.values, s.B, L, H, D, M);
  expectClose("out", loaded(out, Half::BF16), ref, boundFor(Half::BF16, ref), name(s));
}

TEST_P(Storage, F16AdditiveWithValidLenAndWeights) {
  const int H = 2, D = 6, Dv = 4, N = 5;
  auto st = [&](size_t n) { return uniformStored(n, rng, Half::F16); };
  Stored q = st((size_t)s.B * H * s.Lq * D), k = st((size_t)s.B * H * s.Lk * D),
         v = st((size_t)s.B * H * s.Lk * Dv), wq = st((size_t)N * D), wk = st((size_t)N * D),
         wv = st((size_t)N);
  std::vector<int32_t> validLen;
  for (int b = 0; b < s.B; ++b)
    validLen.push_back((b * 5 + 2) % (s.Lk + 1)); // 0 included: fully masked rows
  std::vector<uint16_t> out = nanBits((size_t)s.B * H * s.Lq * Dv),
                        weights = nanBits((size_t)s.B * H * s.Lq * s.Lk);
  ASSERT_EQ(f16_additive_valid_len_run(q.bits.data(), k.bits.data(), v.bits.data(),
                                       wq.bits.data(), wk.bits.data(), wv.bits.data(),
                                       validLen.data(), out.data(), weights.data(), s.B, s.Lq,
                                       s.Lk),
            0);
  Ref qr = widen(q.values), kr = widen(k.values);
  Problem p{s.B, H, H, D, Dv, s.Lq, s.Lk, 1.0};
  p.score = [&](const At &a, double) {
    double score = 0;
    for (int n = 0; n < N; ++n) {
      double hidden = 0;
      for (int d = 0; d < D; ++d)
        hidden += wq.values[(size_t)n * D + d] *
                      qr[(((size_t)a.b * H + a.h) * s.Lq + a.i) * D + d] +
                  wk.values[(size_t)n * D + d] * kr[(((size_t)a.b * H + a.g) * s.Lk + a.j) * D + d];
      score += wv.values[(size_t)n] * std::tanh(hidden);
    }
    return score;
  };
  p.mask = [&](const At &a) { return a.j < validLen[(size_t)a.b]; };
  Outputs r = attention(p, qr, kr, widen(v.values));
  expectClose("out", loaded(out, Half::F16), r.out, boundFor(Half::F16, widen(v.values)), name(s));
  expectClose("weights", loaded(weights, Half::F16), r.weights, boundOf(Half::F16), name(s));
}

TEST_P(Storage, Bf16GeneralScoreSoftcapAndF32ExpressionInput) {
  const int H = 2, D = 8;
  Stored q = uniformStored((size_t)s.B * H * s.Lq * D, rng, Half::BF16, 4.f),
         k = uniformStored((size_t)s.B * H * s.Lk * D, rng, Half::BF16, 4.f),
         v = uniformStored((size_t)s.B * H * s.Lk * D, rng, Half::BF16),
         w = uniformStored((size_t)D * D, rng, Half::BF16);
  Vec slopes = {0.25f, 0.0625f}; // a declared input keeps f32
  std::vector<uint16_t> out = nanBits(q.bits.size());
  ASSERT_EQ(bf16_general_softcap_expr_bias_run(q.bits.data(), k.bits.data(), v.bits.data(),
                                               w.bits.data(), slopes.data(), out.data(), s.B,
                                               s.Lq, s.Lk),
            0);
  Ref qr = widen(q.values), kr = widen(k.values);
  Problem p{s.B, H, H, D, D, s.Lq, s.Lk, 1.0};
  p.score = [&](const At &a, double) { // softcap(q^T W k) (W : [D, Dk], scale 1)
    double score = 0;
    for (int c = 0; c < D; ++c)
      for (int e = 0; e < D; ++e)
        score += qr[(((size_t)a.b * H + a.h) * s.Lq + a.i) * D + c] * w.values[(size_t)c * D + e] *
                 kr[(((size_t)a.b * H + a.g) * s.Lk + a.j) * D + e];
    return 20 * std::tanh(score / 20);
  };
  p.bias = [&](const At &a) { return -slopes[(size_t)a.h] * std::abs((double)(a.ip - a.j)); };
  Outputs r = attention(p, qr, kr, widen(v.values));
  expectClose("out", loaded(out, Half::BF16), r.out, boundFor(Half::BF16, widen(v.values)),
              name(s));
}

TEST_P(Storage, F16PackedCausalAgainstEachSequence) {
  const int H = 2, G = 1, D = 8;
  const std::vector<int> lq = {s.Lq, 1, s.Lq}, lk = {s.Lk, 3, s.Lq};
  std::vector<int32_t> cuQ = {0}, cuK = {0};
  for (size_t b = 0; b < lq.size(); ++b) {
    cuQ.push_back(cuQ.back() + lq[b]);
    cuK.push_back(cuK.back() + lk[b]);
  }
  int Tq = cuQ.back(), Tk = cuK.back();
  Stored q = uniformStored((size_t)Tq * H * D, rng, Half::F16),
         k = uniformStored((size_t)Tk * G * D, rng, Half::F16),
         v = uniformStored((size_t)Tk * G * D, rng, Half::F16);
  std::vector<uint16_t> out = nanBits(q.bits.size());
  Vec lse((size_t)H * Tq, NAN);
  ASSERT_EQ(f16_packed_causal_run(q.bits.data(), k.bits.data(), v.bits.data(), cuQ.data(),
                                  cuK.data(), out.data(), lse.data(), (int64_t)lq.size(), Tq, Tk),
            0);
  Vec got = loaded(out, Half::F16);
  double bound = boundFor(Half::F16, widen(v.values));
  for (size_t b = 0; b < lq.size(); ++b) {
    Problem p{1, H, G, D, D, lq[b], lk[b], 1 / std::sqrt((double)D)};
    p.mask = [](const At &a) { return a.j <= a.ip; };
    Outputs r = attention(p, sequenceRows(q.values, H, D, cuQ[b], lq[b]),
                          sequenceRows(k.values, G, D, cuK[b], lk[b]),
                          sequenceRows(v.values, G, D, cuK[b], lk[b]));
    Ref sequence = sequenceRows(got, H, D, cuQ[b], lq[b]);
    double err = 0;
    for (size_t n = 0; n < r.out.size(); ++n)
      err = std::max(err, std::abs(sequence[n] - r.out[n]));
    EXPECT_LE(err, bound) << "sequence " << b << " " << name(s);
  }
}

/// A kernel of one key and head_dim 1 (out = v) over 16-bit K and V.
using ValuesRun = int (*)(const float *q, const uint16_t *k, const uint16_t *v, float *out,
                          int64_t B);

/// Every one of the 65536 bit patterns, widened by the kernel exactly (NaN
/// stays NaN, subnormal halves become normal floats): with one key, out = v.
void expectEveryValueWidens(Half t, ValuesRun run) {
  const int64_t B = 65536;
  std::vector<uint16_t> bits(B), k(B, 0);
  for (int64_t n = 0; n < B; ++n)
    bits[(size_t)n] = (uint16_t)n;
  Vec q(B, 0.f), out(B, -1.f);
  ASSERT_EQ(run(q.data(), k.data(), bits.data(), out.data(), B), 0);
  for (int64_t n = 0; n < B; ++n) {
    float want = t == Half::F16 ? f16ToFloat((uint16_t)n) : bf16ToFloat((uint16_t)n);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(out[(size_t)n])) << std::hex << n;
    else
      EXPECT_EQ(out[(size_t)n], want) << std::hex << n;
  }
}

TEST(StorageValues, EveryF16ValueWidensExactly) {
  expectEveryValueWidens(Half::F16, f16_values_run);
}
TEST(StorageValues, EveryBf16ValueWidensExactly) {
  expectEveryValueWidens(Half::BF16, bf16_values_run);
}
TEST(StorageValues, EveryF16ValueWidensExactlyWithoutF16C) {
  expectEveryValueWidens(Half::F16, f16_values_generic_run);
}

INSTANTIATE_TEST_SUITE_P(Sizes, Storage,
                         ::testing::Range(0, (int)(sizeof(kSizes) / sizeof(kSizes[0]))));

} // namespace
