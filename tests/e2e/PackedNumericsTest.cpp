//===- PackedNumericsTest.cpp - Packed batches vs per-sequence float64 ---===//
//
// The packed_* kernels of numerics.attn (docs/language.md, packed batches) on batches of
// sequences of unequal lengths (an empty one, Lq < Lk, Lq > Lk, lengths
// across tile and block edges), checked against the float64 reference run
// on each sequence alone: positions, masks, rotary angles, ALiBi and the
// sizes of expressions are the sequence's own. Bad cu_seqlens are errors.
//
//===----------------------------------------------------------------------===//
#include "FeatureReference.h"
#include "numerics_kernels.h"


namespace {

using namespace feature_reference;

struct Batch {
  std::vector<int> lq, lk; // per sequence
  std::vector<int32_t> cuQ, cuK;
  int Tq = 0, Tk = 0;
  explicit Batch(std::vector<int> q, std::vector<int> k) : lq(std::move(q)), lk(std::move(k)) {
    cuQ = {0};
    cuK = {0};
    for (size_t b = 0; b < lq.size(); ++b) {
      cuQ.push_back(cuQ.back() + lq[b]);
      cuK.push_back(cuK.back() + lk[b]);
    }
    Tq = cuQ.back();
    Tk = cuK.back();
  }
  int64_t B() const { return (int64_t)lq.size(); }
};

const Batch kBatches[] = {
    Batch({5, 0, 37, 1, 70}, {5, 3, 37, 40, 70}),
    Batch({33, 9, 64, 2}, {33, 4, 64, 2}),
    Batch({130}, {130}),
};

/// The float64 reference of sequence b alone (p's sizes are its own), from
/// its rows of the packed q [Tq, H, D], k [Tk, G, D], v [Tk, G, Dv].
Outputs sequenceReference(const Batch &batch, size_t b, const Problem &p, const Vec &q,
                          const Vec &k, const Vec &v) {
  return attention(p, sequenceRows(q, p.H, p.D, batch.cuQ[b], p.Lq),
                   sequenceRows(k, p.G, p.D, batch.cuK[b], p.Lk),
                   sequenceRows(v, p.G, p.Dv, batch.cuK[b], p.Lk));
}

/// docs/language.md, rotary embeddings on one sequence's rows [1, heads, L, D] (half pairs).
Ref rotated(const Ref &x, int heads, int L, int D, double base, long offset) {
  Ref r = x;
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < L; ++t)
      for (int c = 0; c < D / 2; ++c) {
        double angle = (double)(t + offset) * std::pow(base, -2.0 * c / D);
        size_t row = ((size_t)h * L + t) * D;
        double a = x[row + c], p = x[row + c + D / 2];
        r[row + c] = a * std::cos(angle) - p * std::sin(angle);
        r[row + c + D / 2] = p * std::cos(angle) + a * std::sin(angle);
      }
  return r;
}

/// Compares sequence b's reference [1, H, Lq, Dv] (and lse [1, H, Lq]) with
/// its rows of the packed results.
void expectSequence(const Batch &batch, size_t b, const Vec &out, const Vec *lse,
                    const Outputs &ref, int H, int Dv) {
  int t0 = batch.cuQ[b], L = batch.lq[b];
  std::string where = "sequence " + std::to_string(b) + " (Lq " + std::to_string(L) + ", Lk " +
                      std::to_string(batch.lk[b]) + ")";
  Vec got((size_t)H * L * Dv), gotLse((size_t)H * L);
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < L; ++t) {
      for (int c = 0; c < Dv; ++c)
        got[((size_t)h * L + t) * Dv + c] = out[((size_t)(t0 + t) * H + h) * Dv + c];
      if (lse)
        gotLse[(size_t)h * L + t] = (*lse)[(size_t)h * batch.Tq + t0 + t];
    }
  expectClose("out", got, ref.out, 1e-4, where);
  if (lse)
    expectClose("lse", gotLse, ref.lse, 1e-4 * std::max(1.0, maxAbs(ref.lse)), where);
}

/// ALiBi's get_slopes (the paper's reference code), written out.
std::vector<double> slopesOfPowerOfTwo(int n) {
  double start = std::pow(2.0, -std::pow(2.0, -(std::log2((double)n) - 3)));
  std::vector<double> s;
  for (int i = 0; i < n; ++i)
    s.push_back(start * std::pow(start, i));
  return s;
}
double alibiSlopeOf(int h, int H) {
  int closest = 1;
  while (closest * 2 <= H)
    closest *= 2;
  std::vector<double> s = slopesOfPowerOfTwo(closest);
  std::vector<double> more = slopesOfPowerOfTwo(2 * closest);
  for (int i = 0; (int)s.size() < H; i += 2)
    s.push_back(more[(size_t)i]);
  return s[(size_t)h];
}

class Packed : public ::testing::TestWithParam<int> {
protected:
  const Batch &batch = kBatches[GetParam()];
  std::mt19937 rng{777};
};

TEST_P(Packed, CausalGqaWithLse) {
  const int H = 4, G = 2, D = 8, Dv = 5;
  Vec q = uniform((size_t)batch.Tq * H * D, rng), k = uniform((size_t)batch.Tk * G * D, rng),
      v = uniform((size_t)batch.Tk * G * Dv, rng);
  Vec out((size_t)batch.Tq * H * Dv, NAN), lse((size_t)H * batch.Tq, NAN);
  ASSERT_EQ(packed_causal_gqa_run(q.data(), k.data(), v.data(), batch.cuQ.data(),
                                  batch.cuK.data(), out.data(), lse.data(), batch.B(), batch.Tq,
                                  batch.Tk),
            0);
  for (size_t b = 0; b < batch.lq.size(); ++b) {
    int Lq = batch.lq[b], Lk = batch.lk[b];
    Problem p{1, H, G, D, Dv, Lq, Lk, 1 / std::sqrt((double)D)};
    p.mask = [](const At &a) { return a.j <= a.ip; };
    expectSequence(batch, b, out, &lse, sequenceReference(batch, b, p, q, k, v), H, Dv);
  }
}

TEST_P(Packed, RotaryAndStreamingMask) {
  const int H = 2, D = 8;
  Vec q = uniform((size_t)batch.Tq * H * D, rng), k = uniform((size_t)batch.Tk * H * D, rng),
      v = uniform((size_t)batch.Tk * H * D, rng);
  Vec out(q.size(), NAN);
  ASSERT_EQ(packed_rotary_streaming_run(q.data(), k.data(), v.data(), batch.cuQ.data(),
                                        batch.cuK.data(), out.data(), batch.B(), batch.Tq,
                                        batch.Tk),
            0);
  for (size_t b = 0; b < batch.lq.size(); ++b) {
    int Lq = batch.lq[b], Lk = batch.lk[b];
    Problem p{1, H, H, D, D, Lq, Lk, 1 / std::sqrt((double)D)};
    p.mask = [](const At &a) { return a.j <= a.ip && (a.j > a.ip - 5 || a.j < 2); };
    Outputs r = attention(p, rotated(sequenceRows(q, H, D, batch.cuQ[b], Lq), H, Lq, D, 100, Lk - Lq),
                          rotated(sequenceRows(k, H, D, batch.cuK[b], Lk), H, Lk, D, 100, 0),
                          sequenceRows(v, H, D, batch.cuK[b], Lk));
    expectSequence(batch, b, out, nullptr, r, H, D);
  }
}

TEST_P(Packed, AlibiWithPrefix) {
  const int H = 3, D = 8;
  Vec q = uniform((size_t)batch.Tq * H * D, rng), k = uniform((size_t)batch.Tk * H * D, rng),
      v = uniform((size_t)batch.Tk * H * D, rng);
  std::vector<int32_t> prefix;
  for (size_t b = 0; b < batch.lq.size(); ++b)
    prefix.push_back((int32_t)(b * 7 % 11));
  Vec out(q.size(), NAN);
  ASSERT_EQ(packed_alibi_prefix_run(q.data(), k.data(), v.data(), batch.cuQ.data(),
                                    batch.cuK.data(), prefix.data(), out.data(), batch.B(),
                                    batch.Tq, batch.Tk),
            0);
  for (size_t b = 0; b < batch.lq.size(); ++b) {
    int Lq = batch.lq[b], Lk = batch.lk[b], pre = prefix[b];
    Problem p{1, H, H, D, D, Lq, Lk, 1 / std::sqrt((double)D)};
    p.mask = [pre](const At &a) { return a.j <= a.ip || a.j < pre; };
    p.bias = [H](const At &a) { return -alibiSlopeOf(a.h, H) * (double)(a.ip - a.j); };
    expectSequence(batch, b, out, nullptr, sequenceReference(batch, b, p, q, k, v), H, D);
  }
}

TEST_P(Packed, ExpressionsSeeTheSequencesSizes) {
  const int H = 2, D = 8;
  Vec q = uniform((size_t)batch.Tq * H * D, rng), k = uniform((size_t)batch.Tk * H * D, rng),
      v = uniform((size_t)batch.Tk * H * D, rng);
  Vec out(q.size(), NAN);
  ASSERT_EQ(packed_expressions_run(q.data(), k.data(), v.data(), batch.cuQ.data(),
                                   batch.cuK.data(), out.data(), batch.B(), batch.Tq, batch.Tk),
            0);
  for (size_t b = 0; b < batch.lq.size(); ++b) {
    int Lq = batch.lq[b], Lk = batch.lk[b];
    Problem p{1, H, H, D, D, Lq, Lk, 1 / std::sqrt((double)D)};
    p.mask = [](const At &a) { return a.j <= a.ip && a.j > a.ip - 9; };
    p.bias = [Lq, Lk, b](const At &a) {
      return -0.05 * std::abs((double)(a.ip - a.j)) + 0.01 * (Lk - Lq) + 0.1 * (double)b;
    };
    expectSequence(batch, b, out, nullptr, sequenceReference(batch, b, p, q, k, v), H, D);
  }
}

/// Token rows [t0, t0 + L) of x [T, M] as one sequence [1, L, M].
Vec tokenRows(const Vec &x, int M, int t0, int L) {
  return Vec(x.begin() + (size_t)t0 * M, x.begin() + (size_t)(t0 + L) * M);
}

TEST_P(Packed, LlamaLayerWithProjections) {
  // Self-attention: the keys are the query tokens, grouped alike.
  const int H = 4, G = 2, D = 6, M = 8;
  const Batch self(batch.lq, batch.lq);
  Vec x = uniform((size_t)self.Tq * M, rng);
  Vec wq = uniform((size_t)H * D * M, rng), wk = uniform((size_t)G * D * M, rng),
      wv = uniform((size_t)G * D * M, rng), wo = uniform((size_t)M * H * D, rng);
  Vec out((size_t)self.Tq * M, NAN);
  ASSERT_EQ(packed_llama_run(x.data(), self.cuQ.data(), self.cuK.data(), wq.data(), wk.data(),
                             wv.data(), wo.data(), out.data(), self.B(), self.Tq),
            0);
  for (size_t b = 0; b < self.lq.size(); ++b) {
    int L = self.lq[b], t0 = self.cuQ[b];
    Vec xb = tokenRows(x, M, t0, L);
    Ref q = rotated(projectHeads(xb, wq, nullptr, 1, L, M, H, D, false), H, L, D, 100, 0);
    Ref k = rotated(projectHeads(xb, wk, nullptr, 1, L, M, G, D, false), G, L, D, 100, 0);
    Ref v = projectHeads(xb, wv, nullptr, 1, L, M, G, D, false);
    Problem p{1, H, G, D, D, L, L, 1 / std::sqrt((double)D)};
    p.mask = [](const At &a) { return a.j <= a.ip; };
    Ref ref = outputProject(attention(p, q, k, v).out, wo, nullptr, 1, L, H, D, M);
    Vec got = tokenRows(out, M, t0, L);
    expectClose("out", got, ref, 1e-4 * std::max(1.0, maxAbs(ref)),
                "sequence " + std::to_string(b));
  }
}

TEST_P(Packed, CrossAttentionWithKvModelDim) {
  const int H = 2, D = 4, M = 6, Mkv = 10;
  Vec xq = uniform((size_t)batch.Tq * M, rng), xkv = uniform((size_t)batch.Tk * Mkv, rng);
  Vec wq = uniform((size_t)H * D * M, rng), wk = uniform((size_t)H * D * Mkv, rng),
      wv = uniform((size_t)H * D * Mkv, rng);
  Vec bq = uniform((size_t)H * D, rng), bk = uniform((size_t)H * D, rng),
      bv = uniform((size_t)H * D, rng);
  Vec out((size_t)batch.Tq * H * D, NAN), lse((size_t)H * batch.Tq, NAN);
  ASSERT_EQ(packed_cross_kdim_run(xq.data(), xkv.data(), batch.cuQ.data(), batch.cuK.data(),
                                  wq.data(), wk.data(), wv.data(), bq.data(), bk.data(),
                                  bv.data(), out.data(), lse.data(), batch.B(), batch.Tq,
                                  batch.Tk),
            0);
  for (size_t b = 0; b < batch.lq.size(); ++b) {
    int Lq = batch.lq[b], Lk = batch.lk[b];
    Ref q = projectHeads(tokenRows(xq, M, batch.cuQ[b], Lq), wq, &bq, 1, Lq, M, H, D, false);
    Ref k = projectHeads(tokenRows(xkv, Mkv, batch.cuK[b], Lk), wk, &bk, 1, Lk, Mkv, H, D, false);
    Ref v = projectHeads(tokenRows(xkv, Mkv, batch.cuK[b], Lk), wv, &bv, 1, Lk, Mkv, H, D, false);
    Problem p{1, H, H, D, D, Lq, Lk, 1 / std::sqrt((double)D)};
    expectSequence(batch, b, out, &lse, attention(p, q, k, v), H, D);
  }
}

INSTANTIATE_TEST_SUITE_P(Batches, Packed, ::testing::Range(0, (int)std::size(kBatches)));

/// cu_seqlens that do not start at 0, decrease, or do not end at the token
/// count are refused by NAME_run with -3 before anything is read out of
/// bounds or written (the kernel's own check, for callers that pass Halide
/// buffers, is tested through libattnrt in tests/python/test_packed.py).
TEST(PackedErrors, BadCuSeqlensAreRefused) {
  const int H = 4, G = 2, D = 8, Dv = 5, T = 10;
  std::vector<float> q(T * H * D, 0.5f), k(T * G * D, 0.5f), v(T * G * Dv, 0.5f);
  std::vector<float> out(T * H * Dv, -7.f), lse(H * T, -7.f);
  const std::vector<std::vector<int32_t>> bad = {
      {1, 5, 10}, {0, 7, 5, 10}, {0, 5, 9}, {0, 5, 1000000}, {0, -3, 10}};
  for (const std::vector<int32_t> &cu : bad) {
    std::vector<int32_t> good(cu.size());
    for (size_t n = 0; n < cu.size(); ++n)
      good[n] = (int32_t)(n * T / (cu.size() - 1));
    good.back() = T;
    for (int side = 0; side < 2; ++side) {
      const int32_t *cuQ = side == 0 ? cu.data() : good.data();
      const int32_t *cuK = side == 0 ? good.data() : cu.data();
      EXPECT_EQ(packed_causal_gqa_run(q.data(), k.data(), v.data(), cuQ, cuK, out.data(),
                                      lse.data(), (int64_t)cu.size() - 1, T, T),
                -3)
          << "cu_seqlens " << ::testing::PrintToString(cu) << " side " << side;
    }
  }
  for (float x : out)
    EXPECT_EQ(x, -7.f) << "nothing is written";
}

} // namespace
