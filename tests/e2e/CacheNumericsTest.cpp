//===- CacheNumericsTest.cpp - KV caches vs float64 -----------------------===//
//
// The kernels of cache.attn (docs/language.md, KV caches): contiguous and
// paged caches, decode (Lq = 1) and chunked prefill (Lq > 1), sequences of
// unequal lengths (an empty cache included), rotary keys stored turned, a
// bf16 cache, both layouts, and fixed and dynamic capacities. Each call is
// checked three ways: the output against float64 attention over the
// sequence's cache rows and its new rows, the new rows stored bit-exactly
// where they belong, and every other byte of the caches untouched (rows past
// a sequence's length hold NaN, which must never reach an output). A
// sequence that does not fit, or a block outside the pool, fails the call
// and leaves the caches as they were.
//
//===----------------------------------------------------------------------===//
#include "FeatureReference.h"
#include "cache_kernels.h"
#include "runtime/HalfFloat.h"

#include <cstdint>
#include <cstring>
#include <tuple>

namespace {

using namespace feature_reference;
using attnc::runtime::bf16ToFloat;
using attnc::runtime::floatToBf16;

/// One cache (k or v) as the kernel stores it: contiguous [B, G, Lmax, W]
/// ([B, Lmax, G, W] with bshd) or blocks [num_blocks, G, block, W] ([.., block,
/// G, W]) reached through `table` [B, max_blocks]; f32 or bf16 bits.
struct Cache {
  bool paged = false, bshd = false, bf16 = false;
  int B = 0, G = 0, W = 0, rows = 0; // rows: Lmax, or the block size when paged
  int numBlocks = 0, maxBlocks = 0;
  std::vector<int32_t> table;
  std::vector<float> f32;
  std::vector<uint16_t> bits;

  size_t index(int b, int t, int g, int c) const {
    int outer = b, row = t;
    if (paged) {
      outer = table[(size_t)b * maxBlocks + t / rows];
      row = t % rows;
    }
    return bshd ? (((size_t)outer * rows + row) * G + g) * W + c
                : (((size_t)outer * G + g) * rows + row) * W + c;
  }
  size_t size() const { return (size_t)(paged ? numBlocks : B) * G * rows * W; }
  void fill(float value) {
    f32.assign(bf16 ? 0 : size(), value);
    bits.assign(bf16 ? size() : 0, floatToBf16(value));
  }
  /// The value the kernel would read back after storing x.
  float stored(float x) const { return bf16 ? bf16ToFloat(floatToBf16(x)) : x; }
  float get(int b, int t, int g, int c) const {
    size_t n = index(b, t, g, c);
    return bf16 ? bf16ToFloat(bits[n]) : f32[n];
  }
  void set(int b, int t, int g, int c, float x) {
    size_t n = index(b, t, g, c);
    if (bf16)
      bits[n] = floatToBf16(x);
    else
      f32[n] = x;
  }
  void *data() { return bf16 ? (void *)bits.data() : (void *)f32.data(); }
  size_t bytes() const { return bf16 ? bits.size() * 2 : f32.size() * 4; }
};

/// Half (or interleaved) rotary pairs of one row of D channels at position p.
void rotate(double *row, int D, double p, bool interleaved) {
  for (int c = 0; c < D / 2; ++c) {
    double angle = p * std::pow(10000.0, -2.0 * c / D);
    int a = interleaved ? 2 * c : c, o = interleaved ? 2 * c + 1 : c + D / 2;
    double x = row[a], y = row[o];
    row[a] = x * std::cos(angle) - y * std::sin(angle);
    row[o] = y * std::cos(angle) + x * std::sin(angle);
  }
}

/// A call's problem: sizes, the caches' contents, the new rows.
struct CacheProblem {
  int H, G, D, Dv, Lq;
  std::vector<int> lens; // cache_len per sequence
  bool rotary = false, interleaved = false, bshd = false;
  int B() const { return (int)lens.size(); }

  /// bhsd [B, heads, L, W] index of a q / k / v / out element (bshd when set).
  size_t at(int b, int h, int t, int c, int heads, int W) const {
    return bshd ? (((size_t)b * Lq + t) * heads + h) * W + c
                : (((size_t)b * heads + h) * Lq + t) * W + c;
  }
};

struct Outcome {
  Outputs ref; // per sequence, concatenated: out [B][H][Lq][Dv], lse [B][H][Lq]
  Cache kAfter, vAfter; // the caches as they must be after the call
};

/// float64 attention of every sequence over its cache rows and new rows;
/// what the caches must hold afterwards.
Outcome expected(const CacheProblem &p, const Problem &shape, const Vec &q, const Vec &k,
                 const Vec &v, const Cache &kc, const Cache &vc) {
  Outcome o{{}, kc, vc};
  for (int b = 0; b < p.B(); ++b) {
    int len = p.lens[(size_t)b], Lk = len + p.Lq;
    for (int g = 0; g < p.G; ++g)
      for (int r = 0; r < p.Lq; ++r) {
        std::vector<double> row(p.D);
        for (int c = 0; c < p.D; ++c)
          row[c] = k[p.at(b, g, r, c, p.G, p.D)];
        if (p.rotary)
          rotate(row.data(), p.D, len + r, p.interleaved);
        for (int c = 0; c < p.D; ++c)
          o.kAfter.set(b, len + r, g, c, (float)row[c]);
        for (int c = 0; c < p.Dv; ++c)
          o.vAfter.set(b, len + r, g, c, v[p.at(b, g, r, c, p.G, p.Dv)]);
      }
    Ref qb((size_t)p.H * p.Lq * p.D), kb((size_t)p.G * Lk * p.D), vb((size_t)p.G * Lk * p.Dv);
    for (int h = 0; h < p.H; ++h)
      for (int i = 0; i < p.Lq; ++i) {
        double *row = &qb[((size_t)h * p.Lq + i) * p.D];
        for (int c = 0; c < p.D; ++c)
          row[c] = q[p.at(b, h, i, c, p.H, p.D)];
        if (p.rotary)
          rotate(row, p.D, len + i, p.interleaved);
      }
    for (int g = 0; g < p.G; ++g)
      for (int t = 0; t < Lk; ++t) {
        for (int c = 0; c < p.D; ++c)
          kb[((size_t)g * Lk + t) * p.D + c] = o.kAfter.get(b, t, g, c);
        for (int c = 0; c < p.Dv; ++c)
          vb[((size_t)g * Lk + t) * p.Dv + c] = o.vAfter.get(b, t, g, c);
      }
    Problem one = shape;
    one.B = 1;
    one.Lq = p.Lq;
    one.Lk = Lk; // ip = i + Lk - Lq = cache_len + i
    Outputs r = attention(one, qb, kb, vb);
    o.ref.out.insert(o.ref.out.end(), r.out.begin(), r.out.end());
    o.ref.lse.insert(o.ref.lse.end(), r.lse.begin(), r.lse.end());
  }
  return o;
}

/// Two caches of one problem: rows below each sequence's length random,
/// every other row NaN. Paged: each sequence's blocks scattered over a pool
/// with spare blocks, unused table entries -1 (never read).
std::pair<Cache, Cache> makeCaches(const CacheProblem &p, bool paged, int rows, bool bf16,
                                   std::mt19937 &rng) {
  Cache k;
  k.paged = paged;
  k.bshd = p.bshd;
  k.bf16 = bf16;
  k.B = p.B();
  k.G = p.G;
  k.rows = rows;
  if (paged) {
    int most = 0, total = 0;
    for (int len : p.lens) {
      int need = (len + p.Lq + rows - 1) / rows;
      most = std::max(most, need);
      total += need;
    }
    k.maxBlocks = most + 1;
    k.numBlocks = total + 3;
    std::vector<int32_t> pool(k.numBlocks);
    for (int n = 0; n < k.numBlocks; ++n)
      pool[n] = k.numBlocks - 1 - n; // sequences' blocks in reverse pool order
    k.table.assign((size_t)k.B * k.maxBlocks, -1);
    size_t next = 0;
    for (int b = 0; b < k.B; ++b)
      for (int s = 0; s < (p.lens[b] + p.Lq + rows - 1) / rows; ++s)
        k.table[(size_t)b * k.maxBlocks + s] = pool[next++];
  }
  Cache v = k;
  k.W = p.D;
  v.W = p.Dv;
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (Cache *c : {&k, &v}) {
    c->fill(NAN);
    for (int b = 0; b < p.B(); ++b)
      for (int t = 0; t < p.lens[b]; ++t)
        for (int g = 0; g < p.G; ++g)
          for (int w = 0; w < c->W; ++w)
            c->set(b, t, g, w, dist(rng));
  }
  return {k, v};
}

void expectSameBytes(const Cache &got, const Cache &want, const char *what) {
  ASSERT_EQ(got.bytes(), want.bytes());
  const void *a = got.bf16 ? (const void *)got.bits.data() : (const void *)got.f32.data();
  const void *b = want.bf16 ? (const void *)want.bits.data() : (const void *)want.f32.data();
  EXPECT_EQ(std::memcmp(a, b, got.bytes()), 0) << what << ": stored rows differ, or a row "
                                                   "outside the new ones changed";
}

/// The new tokens of `p`: q [B, H, Lq, D], k [B, G, Lq, D], v [B, G, Lq, Dv].
struct NewTokens {
  Vec q, k, v;
};
NewTokens newTokens(const CacheProblem &p, std::mt19937 &rng) {
  return {uniform((size_t)p.B() * p.H * p.Lq * p.D, rng),
          uniform((size_t)p.B() * p.G * p.Lq * p.D, rng),
          uniform((size_t)p.B() * p.G * p.Lq * p.Dv, rng)};
}

/// Sequences of unequal lengths (an empty one first), decode and prefill.
const std::vector<std::pair<int, std::vector<int>>> kCalls = {
    {1, {0, 5, 33}}, {7, {0, 9, 20}}, {16, {3}}, {1, {70}}};

class Caches : public ::testing::TestWithParam<int> {
protected:
  std::mt19937 rng{77};
  int Lq = kCalls[(size_t)GetParam()].first;
  std::vector<int> lens = kCalls[(size_t)GetParam()].second;
  std::string where = "Lq " + std::to_string(Lq) + ", call " + std::to_string(GetParam());
};

TEST_P(Caches, ContiguousRotaryGqaCausal) {
  CacheProblem p{4, 2, 8, 8, Lq, lens, /*rotary=*/true};
  const int Lmax = 100;
  auto [kc, vc] = makeCaches(p, false, Lmax, false, rng);
  NewTokens t = newTokens(p, rng);
  Problem shape{1, p.H, p.G, p.D, p.Dv, 0, 0, 1 / std::sqrt(8.0)};
  shape.mask = [](const At &a) { return a.j <= a.ip; };
  Outcome want = expected(p, shape, t.q, t.k, t.v, kc, vc);
  Vec out((size_t)p.B() * p.H * Lq * p.Dv, NAN), lse((size_t)p.B() * p.H * Lq, NAN);
  ASSERT_EQ(cache_rotary_gqa_run(t.q.data(), t.k.data(), t.v.data(), kc.f32.data(),
                                 vc.f32.data(), lens.data(), out.data(), lse.data(), p.B(), Lq,
                                 Lmax),
            0);
  expectClose("out", out, want.ref.out, 1e-4, where);
  expectClose("lse", lse, want.ref.lse, 1e-4 * std::max(1.0, maxAbs(want.ref.lse)), where);
  // Keys turned in float32 against float64: equal to within rounding.
  for (size_t n = 0; n < kc.f32.size(); ++n)
    if (!(std::isnan(kc.f32[n]) && std::isnan(want.kAfter.f32[n])))
      ASSERT_NEAR(kc.f32[n], want.kAfter.f32[n], 1e-5) << "k_cache[" << n << "] " << where;
  expectSameBytes(vc, want.vAfter, "v_cache");
}

TEST_P(Caches, PagedBf16StreamingMask) {
  CacheProblem p{2, 2, 8, 6, Lq, lens};
  auto [kc, vc] = makeCaches(p, true, 4, true, rng);
  NewTokens t = newTokens(p, rng);
  std::vector<uint16_t> k16(t.k.size()), v16(t.v.size());
  for (size_t n = 0; n < k16.size(); ++n)
    t.k[n] = bf16ToFloat(k16[n] = floatToBf16(t.k[n]));
  for (size_t n = 0; n < v16.size(); ++n)
    t.v[n] = bf16ToFloat(v16[n] = floatToBf16(t.v[n]));
  Problem shape{1, p.H, p.G, p.D, p.Dv, 0, 0, 1 / std::sqrt(8.0)};
  shape.mask = [](const At &a) { return a.j <= a.ip && (a.j > a.ip - 6 || a.j < 2); };
  Outcome want = expected(p, shape, t.q, t.k, t.v, kc, vc);
  Vec out((size_t)p.B() * p.H * Lq * p.Dv, NAN);
  ASSERT_EQ(cache_paged_streaming_run(t.q.data(), k16.data(), v16.data(), kc.bits.data(),
                                      vc.bits.data(), lens.data(), kc.table.data(), out.data(),
                                      p.B(), Lq, kc.numBlocks, kc.maxBlocks),
            0);
  expectClose("out", out, want.ref.out, 8e-3, where);
  expectSameBytes(kc, want.kAfter, "k_cache");
  expectSameBytes(vc, want.vAfter, "v_cache");
}

TEST_P(Caches, ContiguousBshdAlibiFixedCapacity) {
  CacheProblem p{3, 3, 8, 8, Lq, lens};
  p.bshd = true;
  const int Lmax = 40;
  if (*std::max_element(lens.begin(), lens.end()) + Lq > Lmax)
    GTEST_SKIP() << "beyond this kernel's fixed capacity (the overflow test covers it)";
  auto [kc, vc] = makeCaches(p, false, Lmax, false, rng);
  NewTokens t = newTokens(p, rng);
  Problem shape{1, p.H, p.G, p.D, p.Dv, 0, 0, 1 / std::sqrt(8.0)};
  shape.bias = [](const At &a) {
    const double slopes[] = {std::pow(2.0, -4), std::pow(2.0, -8), std::pow(2.0, -2)};
    return -slopes[a.h] * (double)(a.ip - a.j);
  };
  Outcome want = expected(p, shape, t.q, t.k, t.v, kc, vc);
  Vec out((size_t)p.B() * p.H * Lq * p.Dv, NAN);
  ASSERT_EQ(cache_bshd_alibi_fixed_run(t.q.data(), t.k.data(), t.v.data(), kc.f32.data(),
                                       vc.f32.data(), lens.data(), out.data(), p.B(), Lq),
            0);
  // out is bshd: [B, Lq, H, Dv]; the reference is [B][H][Lq][Dv].
  Vec bhsd(out.size());
  for (int b = 0; b < p.B(); ++b)
    for (int h = 0; h < p.H; ++h)
      for (int i = 0; i < Lq; ++i)
        for (int c = 0; c < p.Dv; ++c)
          bhsd[(((size_t)b * p.H + h) * Lq + i) * p.Dv + c] = out[p.at(b, h, i, c, p.H, p.Dv)];
  expectClose("out", bhsd, want.ref.out, 1e-4, where);
  expectSameBytes(kc, want.kAfter, "k_cache");
  expectSameBytes(vc, want.vAfter, "v_cache");
}

TEST_P(Caches, PagedInterleavedRotaryExpressionBias) {
  CacheProblem p{2, 1, 8, 8, Lq, lens, /*rotary=*/true, /*interleaved=*/true};
  auto [kc, vc] = makeCaches(p, true, 16, false, rng);
  NewTokens t = newTokens(p, rng);
  Problem shape{1, p.H, p.G, p.D, p.Dv, 0, 0, 1 / std::sqrt(8.0)};
  shape.mask = [](const At &a) { return a.j <= a.ip; };
  // Lk of an expression is the sequence's key count, cache_len + Lq = ip - i + Lq.
  shape.bias = [&](const At &a) {
    return -0.1 * std::abs((double)(a.ip - a.j)) + 0.01 * (double)(a.ip - a.i + Lq);
  };
  Outcome want = expected(p, shape, t.q, t.k, t.v, kc, vc);
  Vec out((size_t)p.B() * p.H * Lq * p.Dv, NAN), lse((size_t)p.B() * p.H * Lq, NAN);
  ASSERT_EQ(cache_paged_expression_run(t.q.data(), t.k.data(), t.v.data(), kc.f32.data(),
                                       vc.f32.data(), lens.data(), kc.table.data(), out.data(),
                                       lse.data(), p.B(), Lq, kc.numBlocks, kc.maxBlocks),
            0);
  expectClose("out", out, want.ref.out, 1e-4, where);
  expectClose("lse", lse, want.ref.lse, 1e-4 * std::max(1.0, maxAbs(want.ref.lse)), where);
  expectSameBytes(vc, want.vAfter, "v_cache");
}

INSTANTIATE_TEST_SUITE_P(Calls, Caches, ::testing::Range(0, (int)kCalls.size()));

TEST(CacheErrors, OverflowWritesNothing) {
  std::mt19937 rng{5};
  CacheProblem p{4, 2, 8, 8, 4, {10, 97, 3}};
  const int Lmax = 100; // sequence 1 needs 101 rows
  auto [kc, vc] = makeCaches(p, false, Lmax, false, rng);
  Cache kBefore = kc, vBefore = vc;
  NewTokens t = newTokens(p, rng);
  Vec out((size_t)p.B() * p.H * p.Lq * p.Dv), lse((size_t)p.B() * p.H * p.Lq);
  EXPECT_EQ(cache_rotary_gqa_run(t.q.data(), t.k.data(), t.v.data(), kc.f32.data(),
                                 vc.f32.data(), p.lens.data(), out.data(), lse.data(), p.B(),
                                 p.Lq, Lmax),
            -4);
  expectSameBytes(kc, kBefore, "k_cache");
  expectSameBytes(vc, vBefore, "v_cache");
  std::vector<int> negative = {10, -1, 3};
  EXPECT_EQ(cache_rotary_gqa_run(t.q.data(), t.k.data(), t.v.data(), kc.f32.data(),
                                 vc.f32.data(), negative.data(), out.data(), lse.data(), p.B(),
                                 p.Lq, Lmax),
            -4);
  expectSameBytes(kc, kBefore, "k_cache");
}

TEST(CacheErrors, BlockOutsideThePoolWritesNothing) {
  std::mt19937 rng{6};
  CacheProblem p{2, 1, 8, 8, 3, {5, 30}};
  Cache kc, vc; // (not a structured binding: the lambda below captures them)
  std::tie(kc, vc) = makeCaches(p, true, 16, false, rng);
  NewTokens t = newTokens(p, rng);
  Vec out((size_t)p.B() * p.H * p.Lq * p.Dv), lse((size_t)p.B() * p.H * p.Lq);
  auto run = [&](std::vector<int32_t> table) {
    return cache_paged_expression_run(t.q.data(), t.k.data(), t.v.data(), kc.f32.data(),
                                      vc.f32.data(), p.lens.data(), table.data(), out.data(),
                                      lse.data(), p.B(), p.Lq, kc.numBlocks, kc.maxBlocks);
  };
  Cache kBefore = kc;
  std::vector<int32_t> bad = kc.table;
  bad[(size_t)1 * kc.maxBlocks + 1] = kc.numBlocks; // sequence 1's second block
  EXPECT_EQ(run(bad), -4);
  expectSameBytes(kc, kBefore, "k_cache");
  // Entries past a sequence's used blocks are neither read nor checked.
  std::vector<int32_t> padded = kc.table;
  padded[(size_t)0 * kc.maxBlocks + kc.maxBlocks - 1] = 1 << 30;
  EXPECT_EQ(run(padded), 0);
}

} // namespace
