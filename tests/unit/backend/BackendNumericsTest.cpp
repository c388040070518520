//===- BackendNumericsTest.cpp - JIT pipelines vs the float64 reference ---===//
//
// Builds each kernel configuration with buildAlgorithm + applySchedule, JIT
// realizes it on uniform [-1, 1] inputs over a matrix of sizes (1, 3, 17, 257
// and Lq != Lk, which exercises bottom-right causal alignment and fully masked
// rows) and checks out / weights / lse against ReferenceAttention within
// the bound of docs/language.md §2 (1e-4).
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

struct Case {
  const char *name;
  ScoreKind score = ScoreKind::ScaledDot;
  std::vector<MaskKind> masks;
  int H = 2, G = 2, D = 64;
  Layout layout = Layout::BHSD;
  SchedulePolicy policy = SchedulePolicy::Tuned;
  bool weights = false, lse = false;
  std::optional<double> softcap;
  BiasKind bias = BiasKind::None;
  int window = 0, sink = 0;
  std::vector<std::vector<int>> groups; // a union of conjunctions of `masks`
};

KernelSpec makeSpec(const Case &c) {
  KernelSpec spec;
  spec.name = "attn_test";
  spec.heads = c.H;
  spec.kvHeads = c.G;
  spec.headDim = spec.keyDim = spec.valueDim = c.D;
  spec.score = c.score;
  spec.scale = c.score == ScoreKind::ScaledDot ? 1.0 / std::sqrt((double)c.D) : 1.0;
  spec.softcap = c.softcap;
  spec.bias = c.bias;
  for (MaskKind kind : c.masks) {
    int width = kind == MaskKind::Window ? c.window : kind == MaskKind::Sink ? c.sink : 0;
    spec.masks.push_back(MaskTerm{kind, {}, width, nullptr});
  }
  spec.maskGroups = c.groups;
  spec.layout = c.layout;
  spec.outputWeights = c.weights;
  spec.outputLse = c.lse;
  return spec;
}

class BackendNumerics : public ::testing::TestWithParam<Case> {};

TEST_P(BackendNumerics, MatchesFloat64Reference) {
  const Case &c = GetParam();
  AttentionConfig config = test::lowerSpec(makeSpec(c), "attn_test");
  test::JitKernel kernel(config, c.policy);

  const std::pair<int, int> sizes[] = {{1, 1},   {3, 3},    {17, 17}, {257, 257}, {1, 257},
                                       {3, 17},  {17, 3},   {257, 17}, {40, 100}, {64, 64}};
  std::mt19937 rng(1234);
  for (auto [Lq, Lk] : sizes) {
    SCOPED_TRACE("Lq=" + std::to_string(Lq) + " Lk=" + std::to_string(Lk));
    int B = Lq * Lk > 10000 ? 1 : 2;
    bool bshd = c.layout == Layout::BSHD;
    std::vector<int> qShape = bshd ? std::vector<int>{B, Lq, c.H, c.D}
                                   : std::vector<int>{B, c.H, Lq, c.D};
    std::vector<int> kShape = bshd ? std::vector<int>{B, Lk, c.G, c.D}
                                   : std::vector<int>{B, c.G, Lk, c.D};
    std::vector<float> q = uniform((size_t)B * c.H * Lq * c.D, rng);
    std::vector<float> k = uniform((size_t)B * c.G * Lk * c.D, rng);
    std::vector<float> v = uniform((size_t)B * c.G * Lk * c.D, rng);
    std::vector<float> w = uniform((size_t)c.D * c.D, rng);
    std::vector<int32_t> validLen(B);
    for (int b = 0; b < B; ++b)
      validLen[b] = (b * 7 + Lk / 2) % (Lk + 1); // includes 0: fully masked batches
    std::vector<uint8_t> mask((size_t)B * Lq * Lk);
    for (size_t x = 0; x < mask.size(); ++x)
      mask[x] = (rng() % 3) != 0;
    std::vector<int32_t> prefixLen(B);
    for (int b = 0; b < B; ++b)
      prefixLen[b] = (b * 5 + Lk / 3) % (Lk + 1);
    // PyTorch's key_padding_mask: nonzero = padding; the second batch pads all.
    std::vector<uint8_t> keyPadding((size_t)B * Lk);
    for (size_t x = 0; x < keyPadding.size(); ++x)
      keyPadding[x] = x >= (size_t)Lk ? 1 : (rng() % 4) == 0 ? 7 : 0;

    test::AttentionOutputs got = test::runAttention(
        kernel, config.kernel,
        {{"q", view(q, qShape)},
         {"k", view(k, kShape)},
         {"v", view(v, kShape)},
         {"score_w", view(w, {c.D, c.D})},
         {"valid_len", view(validLen, {B})},
         {"mask", view(mask, {B, Lq, Lk})},
         {"prefix_len", view(prefixLen, {B})},
         {"key_padding_mask", view(keyPadding, {B, Lk})}},
        qShape, Lk);

    test::RefInputs in{q.data(), k.data(), v.data(), validLen.data(), mask.data(), w.data(),
                       prefixLen.data(), keyPadding.data()};
    test::RefOutputs ref =
        test::referenceAttention(config.kernel, config.scale, {B, c.H, c.G, Lq, Lk, c.D, c.D}, in);
    test::expectNear(got, ref.out, ref.weights, ref.lse, config.kernel);
  }
}

Case make(const char *name, ScoreKind score, std::vector<MaskKind> masks, int H, int G, int D) {
  Case c;
  c.name = name;
  c.score = score;
  c.masks = std::move(masks);
  c.H = H;
  c.G = G;
  c.D = D;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> all = {
      make("dot_none_mha", ScoreKind::Dot, {}, 2, 2, 64),
      make("scaled_none_mha", ScoreKind::ScaledDot, {}, 2, 2, 64),
      make("dot_causal_mha", ScoreKind::Dot, {MaskKind::Causal}, 2, 2, 64),
      make("scaled_causal_mha", ScoreKind::ScaledDot, {MaskKind::Causal}, 2, 2, 64),
      make("scaled_none_gqa", ScoreKind::ScaledDot, {}, 4, 2, 64),
      make("scaled_causal_gqa", ScoreKind::ScaledDot, {MaskKind::Causal}, 4, 2, 64),
      make("dot_causal_mqa", ScoreKind::Dot, {MaskKind::Causal}, 4, 1, 32),
      make("scaled_causal_d24", ScoreKind::ScaledDot, {MaskKind::Causal}, 2, 1, 24),
  };
  Case simple = make("simple_causal_gqa", ScoreKind::ScaledDot, {MaskKind::Causal}, 4, 2, 16);
  simple.policy = SchedulePolicy::Simple;
  all.push_back(simple);
  Case bshd = make("bshd_causal_gqa", ScoreKind::ScaledDot, {MaskKind::Causal}, 4, 2, 32);
  bshd.layout = Layout::BSHD;
  all.push_back(bshd);
  Case outs = make("weights_lse_causal", ScoreKind::ScaledDot, {MaskKind::Causal}, 2, 1, 16);
  outs.weights = outs.lse = true;
  all.push_back(outs);
  Case lseOnly = make("lse_none", ScoreKind::Dot, {}, 2, 2, 16);
  lseOnly.lse = true;
  all.push_back(lseOnly);
  Case capped = make("softcap_alibi", ScoreKind::Dot, {MaskKind::Causal}, 4, 4, 16);
  capped.softcap = 2.0;
  capped.bias = BiasKind::Alibi;
  all.push_back(capped);
  // 12 heads: not a power of two, where ALiBi's slopes interleave (BLOOM).
  Case alibi12 = make("alibi_12_heads", ScoreKind::ScaledDot, {MaskKind::Causal}, 12, 4, 16);
  alibi12.bias = BiasKind::Alibi;
  all.push_back(alibi12);
  Case window = make("window_5", ScoreKind::ScaledDot, {MaskKind::Window}, 2, 2, 16);
  window.window = 5;
  window.lse = true;
  all.push_back(window);
  Case window2 = make("window_100", ScoreKind::ScaledDot, {MaskKind::Window}, 2, 2, 16);
  window2.window = 100;
  all.push_back(window2);
  Case valid = make("valid_len", ScoreKind::ScaledDot, {MaskKind::ValidLen}, 2, 2, 16);
  valid.lse = true;
  all.push_back(valid);
  Case input = make("input_mask_causal", ScoreKind::ScaledDot,
                    {MaskKind::Input, MaskKind::Causal}, 2, 2, 16);
  input.weights = true;
  all.push_back(input);
  all.push_back(make("general", ScoreKind::General, {}, 2, 2, 16));
  // docs/language.md, mask: StreamingLLM's causal & (window(W) | sink(S)), prefix-LM's
  // causal | prefix, PyTorch's key padding, a sink alone, and a union whose
  // second group has no key-block test (every block is visited).
  Case streaming = make("causal_window_or_sink", ScoreKind::ScaledDot,
                        {MaskKind::Causal, MaskKind::Window, MaskKind::Sink}, 4, 2, 16);
  streaming.window = 5;
  streaming.sink = 3;
  streaming.groups = {{0, 1}, {0, 2}};
  streaming.lse = true;
  all.push_back(streaming);
  Case streamingSimple = streaming;
  streamingSimple.name = "causal_window_or_sink_simple";
  streamingSimple.policy = SchedulePolicy::Simple;
  streamingSimple.weights = true;
  all.push_back(streamingSimple);
  // A sink group split off as the state's start (one tile per task, MHA):
  // rows far from the start see the sinks through it alone, rows near it
  // through both groups (counted once).
  Case windowOrSink = make("window_or_sink_mha", ScoreKind::ScaledDot,
                           {MaskKind::Window, MaskKind::Sink}, 2, 2, 16);
  windowOrSink.window = 40;
  windowOrSink.sink = 6;
  windowOrSink.groups = {{0}, {1}};
  windowOrSink.lse = true;
  all.push_back(windowOrSink);
  Case prefixLm = make("causal_or_prefix", ScoreKind::ScaledDot,
                       {MaskKind::Causal, MaskKind::Prefix}, 2, 2, 16);
  prefixLm.groups = {{0}, {1}};
  prefixLm.lse = true;
  all.push_back(prefixLm);
  Case padding = make("key_padding_causal_mqa", ScoreKind::ScaledDot,
                      {MaskKind::KeyPadding, MaskKind::Causal}, 3, 1, 16);
  padding.weights = padding.lse = true;
  all.push_back(padding);
  Case sinkOnly = make("sink_4", ScoreKind::Dot, {MaskKind::Sink}, 2, 2, 16);
  sinkOnly.sink = 4;
  all.push_back(sinkOnly);
  Case windowOrInput = make("window_or_input", ScoreKind::ScaledDot,
                            {MaskKind::Window, MaskKind::Input}, 2, 2, 16);
  windowOrInput.window = 7;
  windowOrInput.groups = {{0}, {1}};
  all.push_back(windowOrInput);
  return all;
}

INSTANTIATE_TEST_SUITE_P(Kernels, BackendNumerics, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
