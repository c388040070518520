//===- BackendDecodeTest.cpp - Decode and grouped-head kernels vs float64 -===//
//
// Kernels with a fixed, short seq_q take the decode path of the back end: the
// query heads of one KV head share a tile (GQA / MQA), the key range is split
// into chunks whose partial softmax states are merged, and the dot product
// runs along d. These tests realize such kernels (fixed and dynamic seq_k,
// odd sizes, masks, weights / lse, huge scores) and compare with the float64
// reference within the bound of docs/language.md §2 (1e-4).
//
//===----------------------------------------------------------------------===//
#include "tests/unit/backend/JitKernel.h"
#include "tests/unit/backend/LowerForTest.h"
#include "tests/unit/backend/ReferenceAttention.h"
#include "tests/unit/backend/TestBuffers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace attnc;
using namespace attnc::halide_backend;
using attnc::test::uniform;
using attnc::test::view;

namespace {

struct DecodeCase {
  const char *name;
  int H, G, D, Lq;
  int fixedLk = 0; // 0: dynamic seq_k
  std::vector<MaskKind> masks;
  int window = 0;
  bool weights = false, lse = false;
  float qScale = 1.0f; // large values give huge scores
  double tolerance = 1e-4;
  SchedulePolicy policy = SchedulePolicy::Tuned;
};

KernelSpec makeSpec(const DecodeCase &c) {
  KernelSpec spec;
  spec.name = "decode_test";
  spec.heads = c.H;
  spec.kvHeads = c.G;
  spec.headDim = spec.keyDim = spec.valueDim = c.D;
  spec.score = ScoreKind::ScaledDot;
  spec.scale = 1.0 / std::sqrt((double)c.D);
  spec.seqQ = {SizeSpec::Fixed, c.Lq};
  if (c.fixedLk)
    spec.seqK = {SizeSpec::Fixed, c.fixedLk};
  for (MaskKind kind : c.masks)
    spec.masks.push_back(MaskTerm{kind, {}, kind == MaskKind::Window ? c.window : 0, nullptr});
  spec.outputWeights = c.weights;
  spec.outputLse = c.lse;
  return spec;
}

class BackendDecode : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(BackendDecode, MatchesFloat64Reference) {
  const DecodeCase &c = GetParam();
  AttentionConfig config = test::lowerSpec(makeSpec(c), "decode_test");
  test::JitKernel kernel(config, c.policy);
  if (c.H > c.G)
    EXPECT_EQ(kernel.funcs().groupP, c.H / c.G) << "query heads of one KV head share a tile";
  EXPECT_GT(kernel.funcs().splits, 1) << "keys split into chunks";

  std::vector<int> lks = {1, 3, 17, 1000, 4097};
  if (c.fixedLk)
    lks = {c.fixedLk};
  std::mt19937 rng(4321);
  for (int Lk : lks) {
    SCOPED_TRACE("Lk=" + std::to_string(Lk));
    const int B = 2, Lq = c.Lq;
    std::vector<float> q = uniform((size_t)B * c.H * Lq * c.D, rng, c.qScale);
    std::vector<float> k = uniform((size_t)B * c.G * Lk * c.D, rng);
    std::vector<float> v = uniform((size_t)B * c.G * Lk * c.D, rng);
    std::vector<int32_t> validLen = {Lk / 2, Lk};
    test::AttentionOutputs got =
        test::runAttention(kernel, config.kernel,
                           {{"q", view(q, {B, c.H, Lq, c.D})},
                            {"k", view(k, {B, c.G, Lk, c.D})},
                            {"v", view(v, {B, c.G, Lk, c.D})},
                            {"valid_len", view(validLen, {B})}},
                           {B, c.H, Lq, c.D}, Lk);

    test::RefInputs in{q.data(), k.data(), v.data(), validLen.data(), nullptr, nullptr};
    test::RefOutputs ref =
        test::referenceAttention(config.kernel, config.scale, {B, c.H, c.G, Lq, Lk, c.D, c.D}, in);
    test::expectNear(got, ref.out, ref.weights, ref.lse, config.kernel, c.tolerance);
  }
}

std::vector<DecodeCase> cases() {
  DecodeCase mha{"mha", 4, 4, 32, 1};
  DecodeCase gqa{"gqa4", 8, 2, 32, 1};
  gqa.lse = true;
  DecodeCase mqa{"mqa_fixed_lk", 4, 1, 32, 1, 1000};
  DecodeCase odd{"gqa3_lq3_causal", 6, 2, 32, 3};
  odd.masks = {MaskKind::Causal};
  odd.weights = odd.lse = true;
  DecodeCase d24{"d24_window", 4, 2, 24, 1};
  d24.masks = {MaskKind::Window};
  d24.window = 100;
  DecodeCase valid{"valid_len", 4, 2, 128, 1};
  valid.masks = {MaskKind::ValidLen};
  valid.lse = true;
  DecodeCase huge{"huge_scores", 4, 2, 64, 1};
  huge.qScale = 6000.0f; // |s| up to ~1e4
  // f32 scores of that size carry ~1e-3 absolute rounding: only near-ties
  // could differ more than that from float64, and nothing may overflow.
  huge.tolerance = 2e-3;
  DecodeCase simple{"simple_gqa", 8, 2, 32, 2};
  simple.policy = SchedulePolicy::Simple;
  return {mha, gqa, mqa, odd, d24, valid, huge, simple};
}

// Bahdanau's additive score on the decode path: one query per batch row,
// hidden units a multiple of the vector width (the rfactored reduction), and
// W_q q, W_k k hoisted as matrix products over transposed W.
TEST(BackendDecodeAdditive, MatchesFloat64Reference) {
  const int B = 3, Lq = 1, D = 24, N = 32;
  KernelSpec spec;
  spec.name = "additive_decode";
  spec.headDim = spec.keyDim = spec.valueDim = D;
  spec.score = ScoreKind::Additive;
  spec.additiveHidden = N;
  spec.scale = 1.0;
  spec.seqQ = {SizeSpec::Fixed, Lq};
  AttentionConfig config = test::lowerSpec(spec, "additive_decode");
  test::JitKernel kernel(config);
  std::mt19937 rng(99);
  for (int Lk : {1, 37, 1000}) {
    SCOPED_TRACE("Lk=" + std::to_string(Lk));
    std::vector<float> q = uniform(B * Lq * D, rng), k = uniform((size_t)B * Lk * D, rng),
                       v = uniform((size_t)B * Lk * D, rng), wq = uniform(N * D, rng),
                       wk = uniform(N * D, rng), wv = uniform(N, rng);
    std::vector<float> out =
        test::runAttention(kernel, config.kernel,
                           {{"q", view(q, {B, 1, Lq, D})},
                            {"k", view(k, {B, 1, Lk, D})},
                            {"v", view(v, {B, 1, Lk, D})},
                            {"score_wq", view(wq, {N, D})},
                            {"score_wk", view(wk, {N, D})},
                            {"score_wv", view(wv, {N})}},
                           {B, 1, Lq, D}, Lk)
            .out;
    for (int b = 0; b < B; ++b) {
      std::vector<double> sc(Lk);
      double m = -1e300, l = 0;
      for (int j = 0; j < Lk; ++j) {
        double total = 0;
        for (int n = 0; n < N; ++n) {
          double a = 0;
          for (int d = 0; d < D; ++d)
            a += (double)wq[n * D + d] * q[b * D + d] +
                 (double)wk[n * D + d] * k[((size_t)b * Lk + j) * D + d];
          total += wv[n] * std::tanh(a);
        }
        sc[j] = total;
        m = std::max(m, total);
      }
      for (int j = 0; j < Lk; ++j)
        l += std::exp(sc[j] - m);
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < Lk; ++j)
          acc += std::exp(sc[j] - m) / l * v[((size_t)b * Lk + j) * D + d];
        EXPECT_NEAR(out[b * D + d], acc, 1e-4) << "b=" << b << " d=" << d;
      }
    }
  }
}

// Decode left to the core's prefetchers (an AMD host) takes 256-key blocks
// because it streams K and V; the additive score is bound by its W_k k
// products instead, and keeps 128-key blocks in two chunks at d2l's Lk = 512
// (with 256 its W_k k became one root buffer of every key: 2x slower).
TEST(BackendDecodeBlocks, HardwarePrefetchLongBlocksOnlyForStreamingScores) {
  KernelSpec spec;
  spec.name = "decode_blocks";
  spec.batch = {SizeSpec::Fixed, 64};
  spec.headDim = spec.keyDim = spec.valueDim = 256;
  spec.seqQ = {SizeSpec::Fixed, 1};
  spec.seqK = {SizeSpec::Fixed, 512};
  spec.score = ScoreKind::ScaledDot;
  spec.scale = 1.0 / 16;
  AlgorithmFuncs dot =
      buildAlgorithm(test::lowerSpec(spec, "decode_blocks"), Halide::Target(),
                     Bf16Products::None, DecodeRows::HardwarePrefetch);
  EXPECT_TRUE(dot.decodeRowsByHardware);
  EXPECT_EQ(dot.blockK, 256);
  spec.score = ScoreKind::Additive;
  spec.additiveHidden = 256;
  spec.scale = 1.0;
  AlgorithmFuncs additive =
      buildAlgorithm(test::lowerSpec(spec, "decode_blocks"), Halide::Target(),
                     Bf16Products::None, DecodeRows::HardwarePrefetch);
  EXPECT_FALSE(additive.decodeRowsByHardware);
  EXPECT_EQ(additive.blockK, 128);
  EXPECT_EQ(additive.splits, 2);
}

INSTANTIATE_TEST_SUITE_P(Kernels, BackendDecode, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<DecodeCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
