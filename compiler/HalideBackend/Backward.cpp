//===- Backward.cpp - NAME_backward: the gradients of one kernel ----------===//
//
// FlashAttention-2's backward (docs/language.md, training), with nothing of
// size Lq x Lk: every (query tile, key block) tile recomputes its scores S,
// P = exp(S - lse), dP = dO . V^T and dS = P * (dP - D) * dS/draw, where
// D = rowsum(dO * O) and dS/draw is the chain rule through a custom score,
// the scale and the softcap (finishScore's slope). Two passes:
//  * the key pass, one task per (key block, KV head, batch row), sums
//    dV += P^T dO and dK += dS^T Q over every query tile of the block; the
//    rows of a tile are those of the P query heads sharing the KV head, so
//    a group's K/V gradients are summed on the way (GQA, MQA);
//  * the query pass, one task per (query tile, KV head, batch row), sums
//    dQ += dS K over the key blocks.
// Each gradient element has one writer: no thread ever races on a sum.
// The chain rule then takes dQ and dK through the score's inputs (the
// scale folded into q, general's W, cosine's normalization) to the
// arguments; masks have no gradient (their keys have P = 0).
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AlgorithmParts.h"
#include "compiler/HalideBackend/BackendError.h"

using namespace Halide;

namespace attnc::halide_backend {

using Halide::Expr;

namespace {

class GradientBuilder {
public:
  explicit GradientBuilder(GradientInputs &in)
      : in(in), f(in.f), config(in.config), spec(in.config.kernel), g(f.grad) {}

  void build() {
    const int64_t H = *Internal::as_const_int(f.H), G = *Internal::as_const_int(f.G);
    if (f.groupP != H / G)
      throw BackendError("kernel '" + config.name +
                         "': the backward needs the query heads of a KV head in one row group");
    P = Expr((int32_t)f.groupP);
    rows = f.Lq * P;
    nRowTiles = (rows + (f.tileQ - 1)) / f.tileQ;
    f.nBlocks = (f.Lk + (f.blockK - 1)) / f.blockK;
    kKey = spec.score == ScoreKind::Cosine ? f.kUnit : f.kIn;
    defineRowStats();
    g.keyTile = defineTile("_kv");
    g.queryTile = defineTile("_q");
    defineKeyPass();
    defineQueryPass();
    defineOutputs();
  }

private:
  GradientInputs &in;
  AlgorithmFuncs &f;
  const AttentionConfig &config;
  const KernelDesc &spec;
  AlgorithmFuncs::Gradients &g;
  Expr P, rows, nRowTiles;
  Func kKey;                         // the keys the score's dot product reads
  Func doutIn = exactFunc("d_out_in"); // (d, i, h, b), widened
  Expr tilePredicate;                // in (qt, kb, b): some row of the tile sees the block

  bool bshd() const { return spec.layout == Layout::BSHD; }

  /// A (d, row, head, b) view of a [B, H, L, W] / [B, L, H, W] argument.
  Expr atLayout(ImageParam p, const Expr &d, const Expr &row, const Expr &head, const Expr &b) {
    return bshd() ? p(d, head, row, b) : p(d, row, head, b);
  }

  /// Row r of row group hb is query r / P of head hb * P + r % P.
  Expr queryOf(const Expr &r) { return r / P; }
  Expr headOf(const Expr &r, const Expr &hb) { return hb * P + r % P; }

  void defineRowStats() {
    Var d = f.d, i = f.i, h = f.h, b = f.b;
    Expr ci = clamp(i, 0, f.Lq - 1);
    doutIn(d, i, h, b) = widened(atLayout(in.param("d_out"), d, ci, h, b));
    RDom rv(0, f.Dv, "rv_rowsum");
    Expr oi = widened(atLayout(in.param("out"), rv, ci, h, b));
    Expr lse = in.param("lse")(ci, h, b);
    // A fully masked row has lse = -inf; its keys are all masked, so P = 0
    // wherever it is read. Any other non-finite lse (a caller's mistake)
    // becomes +huge, so exp(S - lse) is 0 rather than inf or NaN.
    Expr exponent = reinterpret<uint32_t>(lse) & cast<uint32_t>(0x7f800000);
    Expr nonFinite = exponent == cast<uint32_t>(0x7f800000);
    g.rowStats(i, h, b) = Tuple(sum(doutIn(rv, i, h, b) * oi, "row_dot"),
                                select(nonFinite, 1e30f, lse));
  }

  /// The P, dP and dS of one (query tile, key block) tile.
  AlgorithmFuncs::Gradients::Tile defineTile(const std::string &suffix) {
    AlgorithmFuncs::Gradients::Tile t{exactFunc("qk" + suffix),  exactFunc("dp" + suffix),
                                      exactFunc("p" + suffix),   exactFunc("ds" + suffix),
                                      exactFunc("q_t" + suffix), exactFunc("d_out_t" + suffix)};
    Var d = f.d, i = f.i, j = f.j, h = f.h, b = f.b;
    Var jj = f.jj, ii = f.ii, qt = f.qt, kb = f.kb;
    // Rows transposed per tile (row innermost), so the products run over
    // vectors of rows.
    t.qT(i, d, h, b) = f.qRow(d, i, h, b);
    t.doT(i, d, h, b) = doutIn(d, queryOf(i), headOf(i, h), b);
    // The score's reduction (q . k per key and row) and dO . V^T, both
    // (j, r, hb, b); the KV head of row group hb is hb (P = H / G).
    t.qk(j, i, h, b) = 0.0f;
    t.qk(j, i, h, b) += t.qT(i, f.rd, h, b) * kKey(f.rd, j, h, b);
    RDom rv(0, f.Dv, "rv" + suffix);
    t.dp(j, i, h, b) = 0.0f;
    t.dp(j, i, h, b) += t.doT(i, rv, h, b) * f.vIn(rv, j, h, b);

    Expr r = qt * f.tileQ + ii, key = kb * f.blockK + jj;
    Expr query = queryOf(r), head = headOf(r, h);
    ExprEnv env = in.env(query, key, head, b);
    ScoreParts parts = finishScore(f, config, env, t.qk(key, r, h, b), /*withSlope=*/true);
    MaskParts mask = in.mask(env);
    Expr visible = r < rows && key < f.Lk && mask.visible;
    Tuple stats = g.rowStats(min(query, f.Lq - 1), head, b);
    t.p(jj, ii, qt, kb, h, b) = select(visible, clampedExp(parts.score - stats[1]), 0.0f);
    Expr p = t.p(jj, ii, qt, kb, h, b);
    t.ds(jj, ii, qt, kb, h, b) = p * (t.dp(key, r, h, b) - stats[0]) * parts.slope;
    tilePredicate = mask.blockVisible;
    return t;
  }

  /// The tile predicate with the tile's variables replaced.
  Expr tileSeen(const Expr &qt, const Expr &kb) {
    if (!tilePredicate.defined())
      return Expr();
    return substitute(f.kb.name(), kb, substitute(f.qt.name(), qt, tilePredicate));
  }

  void defineKeyPass() {
    Var d = f.d, jj = f.jj, kb = f.kb, h = f.h, b = f.b;
    g.rowTiles = RDom(0, f.tileQ, 0, nRowTiles, "row_tiles");
    RVar x = g.rowTiles.x, y = g.rowTiles.y;
    if (Expr seen = tileSeen(y, kb); seen.defined())
      g.rowTiles.where(seen);
    Expr r = y * f.tileQ + x;
    // dK and dV share the tile's P and dS; with key_dim != value_dim the
    // narrower one repeats its last column (never stored).
    Expr dk = min(d, f.Dk - 1), dv = min(d, f.Dv - 1);
    const AlgorithmFuncs::Gradients::Tile &t = g.keyTile;
    g.dKV(d, jj, kb, h, b) = Tuple(0.0f, 0.0f);
    g.dKV(d, jj, kb, h, b) =
        Tuple(g.dKV(d, jj, kb, h, b)[0] + t.ds(jj, x, y, kb, h, b) * f.qRow(dk, r, h, b),
              g.dKV(d, jj, kb, h, b)[1] + t.p(jj, x, y, kb, h, b) *
                                              doutIn(dv, queryOf(r), headOf(r, h), b));
  }

  void defineQueryPass() {
    Var d = f.d, ii = f.ii, qt = f.qt, h = f.h, b = f.b;
    g.keyBlocks = RDom(0, f.blockK, 0, f.nBlocks, "key_blocks");
    RVar x = g.keyBlocks.x, y = g.keyBlocks.y;
    if (Expr seen = tileSeen(qt, y); seen.defined())
      g.keyBlocks.where(seen);
    g.dQ(d, ii, qt, h, b) = 0.0f;
    g.dQ(d, ii, qt, h, b) +=
        g.queryTile.ds(x, ii, qt, y, h, b) * kKey(d, y * f.blockK + x, h, b);
  }

  //--- The chain rule to the arguments ---------------------------------------//

  /// d(score's q) of query i, head h: (d, i, h, b).
  Expr dScoreQuery(const Expr &d, const Expr &i, const Expr &h, const Expr &b) {
    Expr r = i * P + h % P;
    return g.dQ(d, r % f.tileQ, r / f.tileQ, h / P, b);
  }
  /// dK (w.r.t. the keys the dot product reads) and dV of key j.
  Expr dKeyRows(const Expr &d, const Expr &j, const Expr &gh, const Expr &b, int which) {
    return g.dKV(d, j % f.blockK, j / f.blockK, gh, b)[which];
  }

  /// x / max(|x|, eps) backward: (dy - y (y . dy)) / |x|, or dy / eps when
  /// the norm was clamped. `norm2` is |x|^2 and `yDotDy` the row's y . dy.
  static Expr unitBackward(const Expr &dy, const Expr &y, const Expr &norm2, const Expr &yDotDy) {
    const float eps = 1e-12f;
    Expr norm = sqrt(norm2);
    return select(norm > eps, (dy - y * yDotDy) / norm, dy / eps);
  }

  /// d_q (d, i, h, b) before the layout.
  Func queryGradient() {
    Var d = f.d, i = f.i, h = f.h, b = f.b;
    Func dq = exactFunc("d_q_in");
    const float qScale = scaleFoldedIntoQuery(config) ? (float)config.scale : 1.0f;
    switch (spec.score) {
    case ScoreKind::General: {
      // qs = (q W) * scale: d(qW) = dqs * scale; dq = d(qW) W^T, and
      // dW = sum over rows of q^T d(qW) (definedScoreWeight).
      Func dqw = exactFunc("d_q_general");
      dqw(d, i, h, b) = dScoreQuery(d, i, h, b) * qScale;
      g.chain.push_back(dqw);
      RDom rw(0, f.Dk, "rw_back");
      dq(d, i, h, b) = 0.0f;
      dq(d, i, h, b) += dqw(rw, i, h, b) * widened(in.param("score_w")(rw, d));
      g.chain.push_back(dq);
      dqGeneral = dqw;
      return dq;
    }
    case ScoreKind::Cosine: {
      Func dot = exactFunc("d_q_unit_dot");
      RDom rc(0, f.D, "rc_back");
      dot(i, h, b) = 0.0f;
      dot(i, h, b) += f.qs(rc, i, h, b) * dScoreQuery(rc, i, h, b);
      g.chain.push_back(dot);
      dq(d, i, h, b) = unitBackward(dScoreQuery(d, i, h, b), f.qs(d, i, h, b),
                                    f.qNormSq(i, h, b), dot(i, h, b));
      return dq;
    }
    default:
      dq(d, i, h, b) = dScoreQuery(d, i, h, b) * qScale;
      return dq;
    }
  }

  /// d_k (d, j, g, b) before the layout.
  Func keyGradient() {
    Var d = f.d, j = f.j, gh = f.g, b = f.b;
    Func dk = exactFunc("d_k_in");
    if (spec.score == ScoreKind::Cosine) {
      Func dot = exactFunc("d_k_unit_dot");
      RDom rc(0, f.Dk, "rck_back");
      dot(j, gh, b) = 0.0f;
      dot(j, gh, b) += f.kUnit(rc, j, gh, b) * dKeyRows(rc, j, gh, b, 0);
      g.chain.push_back(dot);
      dk(d, j, gh, b) = unitBackward(dKeyRows(d, j, gh, b, 0), f.kUnit(d, j, gh, b),
                                     f.kNormSq(j, gh, b), dot(j, gh, b));
    } else {
      dk(d, j, gh, b) = dKeyRows(d, j, gh, b, 0);
    }
    return dk;
  }

  /// general: dW [D, Dk] = sum over (b, h, i) of q^T d(qW).
  Func scoreWeightGradient() {
    Var c = f.n, dd = f.m;
    Func dw = exactFunc("d_score_w_in");
    RDom all(0, f.Lq, 0, f.H, 0, f.B, "all_rows");
    dw(dd, c) = 0.0f;
    dw(dd, c) += f.qIn(c, all.x, all.y, all.z) * dqGeneral(dd, all.x, all.y, all.z);
    g.chain.push_back(dw);
    return dw;
  }

  void defineOutputs() {
    Var d = f.d, i = f.i, h = f.h, b = f.b, j = f.j, gh = f.g;
    Func dq = queryGradient(), dk = keyGradient();
    for (const ArgSpec &arg : config.arguments) {
      if (!arg.isOutput)
        continue;
      Func out = exactFunc(arg.name);
      if (arg.name == "d_q") {
        Expr v = in.stored(arg.name, dq(d, i, h, b));
        if (bshd())
          out(d, h, i, b) = v;
        else
          out(d, i, h, b) = v;
      } else if (arg.name == "d_k" || arg.name == "d_v") {
        Expr v = in.stored(arg.name, arg.name == "d_k" ? dk(d, j, gh, b)
                                                        : dKeyRows(d, j, gh, b, 1));
        if (bshd())
          out(d, gh, j, b) = v;
        else
          out(d, j, gh, b) = v;
      } else if (arg.name == "d_score_w") {
        Func dw = scoreWeightGradient();
        out(f.m, f.n) = in.stored(arg.name, dw(f.m, f.n));
      } else {
        throw BackendError("kernel '" + config.name + "': no gradient for '" +
                           arg.name.substr(2) + "' yet");
      }
      in.constrainOutput(out, arg.name);
    }
  }

  Func dqGeneral; // general: d(q W) (d, i, h, b)
};

} // namespace

void defineGradients(GradientInputs &in) { GradientBuilder(in).build(); }

} // namespace attnc::halide_backend
