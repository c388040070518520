//===- ScoreFunctions.cpp - What each score kind computes ---------------===//
//
// docs/language.md §4 (`score`) in Halide: the dot product (dot, scaled_dot, custom
// scores that call dot(q, k)), Luong's general score as a dot product with
// W-transformed queries, and Bahdanau's additive score with W_q q and W_k k
// hoisted out of the (i, j) loops. Then scale, softcap and bias (section 1).
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AlgorithmParts.h"
#include "compiler/HalideBackend/BackendError.h"

using namespace Halide;

namespace attnc::halide_backend {

// attnc::Expr is the frontend's AST node; here Expr means Halide's.
using Halide::Expr;

static bool scaleFoldedIntoQuery(const AttentionConfig &config) {
  // A scale can only move into q when the score is linear in q.
  ScoreKind kind = config.spec.score;
  return config.scaleOnQuery && kind != ScoreKind::Additive;
}

void defineScoreInputs(ScoreInputs &in) {
  AlgorithmFuncs &f = in.f;
  const KernelSpec &spec = in.config.spec;
  Expr qScale = scaleFoldedIntoQuery(in.config) ? Expr((float)in.config.scale) : Expr(1.0f);
  switch (spec.score) {
  case ScoreKind::Dot:
  case ScoreKind::ScaledDot:
  case ScoreKind::Custom:
    f.rd = RDom(0, f.Dk, "rd");
    f.qs(f.d, f.i, f.h, f.b) = f.qIn(f.d, f.i, f.h, f.b) * qScale;
    break;
  case ScoreKind::General: {
    // q^T W k = (W^T q) . k: transform each query once, then a plain dot.
    ImageParam w = in.param("score_w"); // logical [D, Dk]
    RDom r(0, f.D, "rw");
    Func qw = exactFunc("q_general");
    qw(f.d, f.i, f.h, f.b) = 0.0f;
    qw(f.d, f.i, f.h, f.b) += f.qIn(r, f.i, f.h, f.b) * w(f.d, r);
    f.qs(f.d, f.i, f.h, f.b) = qw(f.d, f.i, f.h, f.b) * qScale;
    f.qHoist = qw;
    f.rd = RDom(0, f.Dk, "rd");
    break;
  }
  case ScoreKind::Additive: {
    if (spec.additiveHidden <= 0)
      throw BackendError("kernel '" + in.config.name + "': additive score needs hidden > 0");
    ImageParam wq = in.param("score_wq"), wk = in.param("score_wk"); // [N, D], [N, Dk]
    RDom rq(0, f.D, "rq"), rkk(0, f.Dk, "rkd");
    f.qHoist(f.n, f.i, f.h, f.b) = 0.0f;
    f.qHoist(f.n, f.i, f.h, f.b) += wq(rq, f.n) * f.qIn(rq, f.i, f.h, f.b);
    f.kHoist(f.n, f.j, f.g, f.b) = 0.0f;
    f.kHoist(f.n, f.j, f.g, f.b) += wk(rkk, f.n) * f.kIn(rkk, f.j, f.g, f.b);
    f.rd = RDom(0, (int32_t)spec.additiveHidden, "rn");
    break;
  }
  }
}

void defineScoreReduction(AlgorithmFuncs &f, const AttentionConfig &config, Func qk,
                          bool blockRows) {
  // Over block rows, h is the row group (H / P of them, G / (H / P) per KV head).
  const int64_t H = *Halide::Internal::as_const_int(f.H),
                G = *Halide::Internal::as_const_int(f.G);
  Expr g = f.h / (int32_t)(blockRows ? H / f.groupP / G : H / G);
  Func q = blockRows ? f.qRow : f.qs;
  qk(f.j, f.i, f.h, f.b) = 0.0f;
  switch (config.spec.score) {
  case ScoreKind::Additive: {
    ImageParam wvParam;
    for (const ImageParam &p : f.inputs)
      if (p.name() == "score_wv")
        wvParam = p;
    if (!wvParam.defined())
      throw BackendError("kernel '" + config.name + "': missing argument 'score_wv'");
    qk(f.j, f.i, f.h, f.b) +=
        wvParam(f.rd) * approxTanh(f.qHoist(f.rd, f.i, f.h, f.b) + f.kHoist(f.rd, f.j, g, f.b));
    break;
  }
  default:
    qk(f.j, f.i, f.h, f.b) += q(f.rd, f.i, f.h, f.b) * f.kIn(f.rd, f.j, g, f.b);
    break;
  }
}

ScoreParts finishScore(AlgorithmFuncs &f, const AttentionConfig &config, ExprEnv env,
                       const Expr &raw) {
  const KernelSpec &spec = config.spec;
  Expr s = raw;
  if (spec.score == ScoreKind::Custom) {
    if (!config.customScore)
      throw BackendError("kernel '" + config.name + "': custom score without an expression");
    env.dot = raw;
    s = cast<float>(config.customScore(env));
  }
  if (config.scale != 1.0 && !scaleFoldedIntoQuery(config))
    s = s * (float)config.scale;
  if (spec.softcap) {
    s = softcapScore(s, (float)*spec.softcap);
  }
  switch (spec.bias) {
  case BiasKind::None:
    break;
  case BiasKind::Alibi: {
    // m_h = 2^(-8 (h + 1) / H); bias = -m_h * (ip - j).
    Expr slope = Halide::pow(2.0f, -8.0f * cast<float>(env.h + 1) / cast<float>(f.H));
    s = s - slope * cast<float>(env.ip - env.j);
    break;
  }
  case BiasKind::Custom:
    if (!config.customBias)
      throw BackendError("kernel '" + config.name + "': custom bias without an expression");
    s = s + cast<float>(config.customBias(env));
    break;
  }
  return {s};
}

} // namespace attnc::halide_backend
