//===- ScoreFunctions.cpp - What each score kind computes ---------------===//
//
// docs/language.md §4 (`score`) in Halide, one row of kScoreBuilders per score kind:
// the dot product (dot, scaled_dot, custom scores that call dot(q, k)),
// Luong's general score as a dot product with W-transformed queries,
// Bahdanau's additive score with W_q q and W_k k hoisted out of the (i, j)
// loops, and the cosine score over unit rows. Then scale, softcap and bias
// (section 1).
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AlgorithmParts.h"
#include "compiler/HalideBackend/BackendError.h"

#include <iterator>

using namespace Halide;

namespace attnc::halide_backend {

// Expr means Halide's here.
using Halide::Expr;

bool scaleFoldedIntoQuery(const AttentionConfig &config, const AlgorithmFuncs &f) {
  // A scale can only move into q when the score is linear in q.
  return config.scaleOnQuery && kindInfo(config.kernel.score).scaleCommutesWithQuery &&
         !f.bf16Products;
}

namespace {

/// One row per score kind (resize's kernel_info[] style): how the kind
/// prepares queries and keys, and one term of its reduction over f.rd.
struct ScoreBuilder {
  ScoreKind kind;
  void (*inputs)(ScoreInputs &in, const Expr &qScale);
  Expr (*term)(AlgorithmFuncs &f, const AttentionConfig &config, Func q, const Expr &g);
};

// dot, scaled_dot, custom (its expression reads dot(q, k)): q . k.
void dotInputs(ScoreInputs &in, const Expr &qScale) {
  AlgorithmFuncs &f = in.f;
  f.rd = RDom(0, f.Dk, "rd");
  f.qs(f.d, f.i, f.h, f.b) = f.qIn(f.d, f.i, f.h, f.b) * qScale;
}

Expr dotTerm(AlgorithmFuncs &f, const AttentionConfig &, Func q, const Expr &g) {
  return q(f.rd, f.i, f.h, f.b) * f.kIn(f.rd, f.j, g, f.b);
}

// general: q^T W k = (W^T q) . k: transform each query once, then a plain dot.
void generalInputs(ScoreInputs &in, const Expr &qScale) {
  AlgorithmFuncs &f = in.f;
  ImageParam w = in.param("score_w"); // logical [D, Dk]
  RDom r(0, f.D, "rw");
  Func qw = exactFunc("q_general");
  qw(f.d, f.i, f.h, f.b) = 0.0f;
  qw(f.d, f.i, f.h, f.b) += f.qIn(r, f.i, f.h, f.b) * widened(w(f.d, r));
  f.qs(f.d, f.i, f.h, f.b) = qw(f.d, f.i, f.h, f.b) * qScale;
  f.qHoist = qw;
  f.rd = RDom(0, f.Dk, "rd");
}

// additive (Bahdanau): w_v . tanh(W_q q + W_k k), with W_q q and W_k k
// hoisted out of the (i, j) loops.
void additiveInputs(ScoreInputs &in, const Expr &) {
  AlgorithmFuncs &f = in.f;
  const KernelDesc &spec = in.config.kernel;
  if (spec.additiveHidden <= 0)
    throw BackendError("kernel '" + in.config.name + "': additive score needs hidden > 0");
  ImageParam wq = in.param("score_wq"), wk = in.param("score_wk"); // [N, D], [N, Dk]
  RDom rq(0, f.D, "rq"), rkk(0, f.Dk, "rkd");
  f.qHoist(f.n, f.i, f.h, f.b) = 0.0f;
  f.qHoist(f.n, f.i, f.h, f.b) += widened(wq(rq, f.n)) * f.qIn(rq, f.i, f.h, f.b);
  f.kHoist(f.n, f.j, f.g, f.b) = 0.0f;
  f.kHoist(f.n, f.j, f.g, f.b) += widened(wk(rkk, f.n)) * f.kIn(rkk, f.j, f.g, f.b);
  f.rd = RDom(0, (int32_t)spec.additiveHidden, "rn");
}

Expr additiveTerm(AlgorithmFuncs &f, const AttentionConfig &config, Func, const Expr &g) {
  ImageParam wvParam;
  for (const ImageParam &p : f.inputs)
    if (p.name() == "score_wv")
      wvParam = p;
  if (!wvParam.defined())
    throw BackendError("kernel '" + config.name + "': missing argument 'score_wv'");
  return widened(wvParam(f.rd)) * approxTanh(f.qHoist(f.rd, f.i, f.h, f.b) + f.kHoist(f.rd, f.j, g, f.b));
}

// cosine: (q/|q|) . (k/|k|), each norm clamped below at 1e-12 as PyTorch's
// F.normalize does, so a zero row scores 0 with every key. The scale
// multiplies the scores (a scale of q would cancel in the normalization).
void cosineInputs(ScoreInputs &in, const Expr &) {
  AlgorithmFuncs &f = in.f;
  const Expr eps = 1e-12f;
  RDom rq(0, f.D, "rcq"), rk(0, f.Dk, "rck");
  f.qNormSq(f.i, f.h, f.b) = 0.0f;
  f.qNormSq(f.i, f.h, f.b) += f.qIn(rq, f.i, f.h, f.b) * f.qIn(rq, f.i, f.h, f.b);
  f.kNormSq(f.j, f.g, f.b) = 0.0f;
  f.kNormSq(f.j, f.g, f.b) += f.kIn(rk, f.j, f.g, f.b) * f.kIn(rk, f.j, f.g, f.b);
  f.qs(f.d, f.i, f.h, f.b) =
      f.qIn(f.d, f.i, f.h, f.b) / Halide::max(Halide::sqrt(f.qNormSq(f.i, f.h, f.b)), eps);
  f.kUnit(f.d, f.j, f.g, f.b) =
      f.kIn(f.d, f.j, f.g, f.b) / Halide::max(Halide::sqrt(f.kNormSq(f.j, f.g, f.b)), eps);
  f.rd = RDom(0, f.Dk, "rd");
}

Expr cosineTerm(AlgorithmFuncs &f, const AttentionConfig &, Func q, const Expr &g) {
  return q(f.rd, f.i, f.h, f.b) * f.kUnit(f.rd, f.j, g, f.b);
}

const ScoreBuilder kScoreBuilders[] = {
    {ScoreKind::Dot, dotInputs, dotTerm},
    {ScoreKind::ScaledDot, dotInputs, dotTerm},
    {ScoreKind::General, generalInputs, dotTerm},
    {ScoreKind::Additive, additiveInputs, additiveTerm},
    {ScoreKind::Custom, dotInputs, dotTerm},
    {ScoreKind::Cosine, cosineInputs, cosineTerm},
};
static_assert(std::size(kScoreBuilders) == std::size(kScoreKinds),
              "one ScoreBuilder per row of kScoreKinds");

const ScoreBuilder &builderFor(const AttentionConfig &config) {
  for (const ScoreBuilder &row : kScoreBuilders)
    if (row.kind == config.kernel.score)
      return row;
  throw BackendError("kernel '" + config.name + "': score kind '" +
                     toString(config.kernel.score) + "' has no Halide builder");
}

/// The custom bias at env's (query, key) pair. A bias that reads the two
/// positions only as their difference (T5's relative buckets: a log2, a float
/// and an int conversion and four selects per pair, 1.9x the time of the
/// attention without them) is read from f.biasTable: its values per
/// (j - i, h, b), computed once per call for the differences the kernel's tiles
/// need. The test is symbolic: the bias built at i = x, j = x + delta
/// simplifies to an expression free of x, which defines the table (the same
/// operations, so the same bits). Caches and packed
/// batches, whose positions are per sequence, keep the expression per pair.
Expr customBias(AlgorithmFuncs &f, const AttentionConfig &config, const ExprEnv &env) {
  const KernelDesc &spec = config.kernel;
  if (!f.biasTableChecked) {
    f.biasTableChecked = true;
    if (!spec.cache.any() && !spec.packed) {
      Var x("bias_x"), delta("bias_delta"), h("bias_h"), b("bias_b");
      ExprEnv at = env;
      at.i = x;
      at.j = x + delta;
      at.ip = x + (env.Lk - env.Lq);
      at.h = h;
      at.g = h / (env.H / env.G);
      at.b = b;
      at.dot = Halide::Internal::Variable::make(Float(32), "bias_dot");
      Expr bias = Halide::Internal::simplify(buildExpr(config.customBias, at));
      using Halide::Internal::expr_uses_var;
      if (!expr_uses_var(bias, x.name()) && !expr_uses_var(bias, "bias_dot") &&
          expr_uses_var(bias, delta.name()))
        f.biasTable(delta, h, b) = cast<float>(bias);
    }
  }
  if (!f.biasTable.defined())
    return buildExpr(config.customBias, env);
  // Heads and batch rows the bias does not read collapse to one.
  using Halide::Internal::expr_uses_var;
  const Expr &value = f.biasTable.function().definition().values()[0];
  return f.biasTable(env.j - env.i, expr_uses_var(value, "bias_h") ? env.h : Expr(0),
                     expr_uses_var(value, "bias_b") ? env.b : Expr(0));
}

} // namespace

void defineScoreInputs(ScoreInputs &in) {
  Expr qScale = scaleFoldedIntoQuery(in.config, in.f) ? Expr((float)in.config.scale) : Expr(1.0f);
  builderFor(in.config).inputs(in, qScale);
}

void defineScoreReduction(AlgorithmFuncs &f, const AttentionConfig &config, Func qk,
                          bool blockRows) {
  // Over block rows, h is the row group (H / P of them, G / (H / P) per KV head).
  const int64_t H = *Halide::Internal::as_const_int(f.H),
                G = *Halide::Internal::as_const_int(f.G);
  Expr g = f.h / (int32_t)(blockRows ? H / f.groupP / G : H / G);
  Func q = blockRows ? f.qRow : f.qs;
  qk(f.j, f.i, f.h, f.b) = 0.0f;
  if (blockRows && f.evenOddLanes) // q_rows in slot order: k's channels to match
    qk(f.j, f.i, f.h, f.b) += q(f.rd, f.i, f.h, f.b) * f.kIn(f.channelAt(f.rd), f.j, g, f.b);
  else
    qk(f.j, f.i, f.h, f.b) += builderFor(config).term(f, config, q, g);
}

ScoreParts finishScore(AlgorithmFuncs &f, const AttentionConfig &config, ExprEnv env,
                       const Expr &raw, bool withSlope) {
  const KernelDesc &spec = config.kernel;
  // d s / d raw = (d custom / d raw) * post, post = d s / d custom (the
  // scale's and softcap's part); kept only withSlope.
  Expr s = raw, slope = 1.0f, post = 1.0f;
  if (spec.score == ScoreKind::Custom) {
    if (!config.customScore.defined())
      throw BackendError("kernel '" + config.name + "': custom score without an expression");
    env.dot = raw;
    if (withSlope) {
      auto [value, dValue] = buildExprWithDerivative(config.customScore, env, "dot");
      s = cast<float>(value);
      slope = dValue;
    } else {
      s = cast<float>(buildExpr(config.customScore, env));
    }
  }
  if (config.scale != 1.0 && !scaleFoldedIntoQuery(config, f)) {
    s = s * (float)config.scale;
    post = post * (float)config.scale;
  }
  if (spec.softcap) {
    // d/dx c tanh(x / c) = 1 - tanh^2(x / c)
    const float c = (float)*spec.softcap;
    s = softcapScore(s, c);
    post = post * (1.0f - (s / c) * (s / c));
  }
  switch (spec.bias) {
  case BiasKind::None:
    break;
  case BiasKind::Alibi: {
    // bias = -m_h * (ip - j), m_h as alibiSlope() gives it: with P the
    // largest power of two <= H (fixed), 2^(-8 (h + 1) / P) for h < P, else
    // 2^(-8 (2 (h - P) + 1) / 2P).
    const int32_t P = (int32_t)largestPowerOfTwoAtMost(*Halide::Internal::as_const_int(f.H));
    Expr h = env.h;
    Expr exponent = select(h < P, -8.0f * cast<float>(h + 1) / (float)P,
                           -4.0f * cast<float>(2 * (h - P) + 1) / (float)P);
    s = s - Halide::pow(2.0f, exponent) * cast<float>(env.ip - env.j);
    break;
  }
  case BiasKind::Custom:
    if (!config.customBias.defined())
      throw BackendError("kernel '" + config.name + "': custom bias without an expression");
    s = s + cast<float>(customBias(f, config, env));
    break;
  }
  if (!withSlope)
    return {s, Expr(), Expr()};
  return {s, slope * post, post};
}

} // namespace attnc::halide_backend
