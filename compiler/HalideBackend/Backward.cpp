//===- Backward.cpp - NAME_backward: the gradients of one kernel ----------===//
//
// FlashAttention-2's backward (docs/language.md, training), with nothing of
// size Lq x Lk: every (query tile, key block) tile recomputes its scores S,
// P = exp(S - lse), dP = dO . V^T and dS = P * (dP - D) * dS/draw, where
// D = rowsum(dO * O) and dS/draw is the chain rule through a custom score,
// the scale and the softcap (finishScore's slope). One pass where the tiles
// are square (every score but additive): one task per (row chunk, row
// group, batch row) visits the key blocks and, per block, the chunk's query
// tiles; each tile adds dV += P^T dO and dK += dS^T Q into the block's keys
// and dQ += dS K into its rows, and the chunks' dK and dV partials are added
// after the pass. A row group holds the rows of the P query heads sharing a
// KV head, so a group's K/V gradients are summed on the way (GQA, MQA).
// Otherwise two passes:
//  * the key pass, one task per (key block, row group, batch row), sums
//    dV and dK over every query tile of the block (the additive score keeps
//    one head per row group, and a KV head's groups are added after it);
//  * the query pass, one task per (query tile, row group, batch row), sums
//    dQ over the key blocks, recomputing the tiles.
// Each gradient element has one writer: no thread ever races on a sum.
// The chain rule then takes dQ and dK through the score's inputs (the
// scale folded into q, general's W, cosine's normalization) and the
// projections (matrix products: dX = dQ W, dW = dQ^T X, db = sum dQ) to the
// arguments; masks have no gradient (their keys have P = 0). With an output
// projection the attention's output O per head, which D needs, is not an
// argument: a third pass recomputes it from lse (O = P V).
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
    // Row groups hb: the P query heads of a KV head (P = H / G), or single
    // heads (P = 1: the additive score), groupsPerKv of them per KV head.
    P = Expr((int32_t)f.groupP);
    groupsPerKv = (int32_t)(H / f.groupP / G);
    rowGroups = Expr((int32_t)(H / f.groupP));
    rows = f.Lq * P;
    nRowTiles = (rows + (f.tileQ - 1)) / f.tileQ;
    f.nBlocks = (f.Lk + (f.blockK - 1)) / f.blockK;
    kKey = spec.score == ScoreKind::Cosine ? f.kUnit : f.kIn;
    defineRowLse();
    defineAttentionOutput();
    defineRowDot();
    g.keyTile = defineTile("_kv");
    if (g.singlePass) {
      defineSinglePass();
    } else {
      g.queryTile = defineTile("_q");
      defineKeyPass();
      defineQueryPass();
    }
    defineOutputs();
  }

private:
  GradientInputs &in;
  AlgorithmFuncs &f;
  const AttentionConfig &config;
  const KernelDesc &spec;
  AlgorithmFuncs::Gradients &g;
  Expr P, rows, nRowTiles;
  int32_t groupsPerKv = 1; // row groups per KV head
  Expr rowGroups;          // H / P
  /// The KV head of row group hb.
  Expr kvOf(const Expr &hb) { return groupsPerKv == 1 ? hb : hb / groupsPerKv; }
  Func kKey;                         // the keys the score's dot product reads
  Func doutIn = exactFunc("d_out_in"); // dO: (d, i, h, b), widened
  Func oIn = exactFunc("o_in");        // O: (d, i, h, b)
  Expr tilePredicate;                // in (qt, kb, b): some row of the tile sees the block
  Func dOutRows;                     // output projection: d_out (m, i, b), widened

  bool bshd() const { return spec.layout == Layout::BSHD; }
  bool additive() const { return spec.score == ScoreKind::Additive; }
  /// The additive score's w_v (n), and t = tanh(W_q q + W_k k) at hidden
  /// unit n of row r and key j (row groups are heads: P = 1).
  Expr wv(const Expr &n) { return widened(in.param("score_wv")(n)); }
  Expr hiddenTanh(const Expr &n, const Expr &r, const Expr &j, const Expr &h, const Expr &b) {
    return approxTanh(f.qHoist(n, r, h, b) + f.kHoist(n, j, kvOf(h), b));
  }
  int32_t hidden() const { return (int32_t)spec.additiveHidden; }

  /// A (d, row, head, b) view of a [B, H, L, W] / [B, L, H, W] argument, or
  /// of packed tokens [T, H, W].
  Expr atLayout(ImageParam p, const Expr &d, const Expr &row, const Expr &head, const Expr &b) {
    if (spec.packed)
      return p(d, head, row);
    return bshd() ? p(d, head, row, b) : p(d, row, head, b);
  }
  /// lse [B, H, Lq] (packed: [H, Tq]) at (i, h, b).
  Expr lseAt(const Expr &i, const Expr &h, const Expr &b) {
    ImageParam lse = in.param("lse");
    return spec.packed ? lse(i, h) : lse(i, h, b);
  }

  /// Row r of row group hb is query r / P of head hb * P + r % P.
  Expr queryOf(const Expr &r) { return r / P; }
  Expr headOf(const Expr &r, const Expr &hb) { return hb * P + r % P; }

  void defineRowLse() {
    Var i = f.i, h = f.h, b = f.b;
    Expr lse = lseAt(clamp(i, 0, f.Lq - 1), h, b);
    // A fully masked row has lse = -inf; its keys are all masked, so P = 0
    // wherever it is read. Any other non-finite lse (a caller's mistake)
    // becomes +huge, so exp(S - lse) is 0 rather than inf or NaN.
    Expr exponent = reinterpret<uint32_t>(lse) & cast<uint32_t>(0x7f800000);
    Expr nonFinite = exponent == cast<uint32_t>(0x7f800000);
    g.rowLse(i, h, b) = select(nonFinite, 1e30f, lse);
  }

  /// O and dO of the attention per head: `out` and `d_out` themselves, or,
  /// with an output projection, dO = d_out W_o per head. O is recomputed in
  /// float32 where `out` is not it: with an output projection, and where
  /// `out` is 16-bit. Its one rounding moved D_i = dO . O by up to 2^-9 of
  /// |dO| |O| (bf16), which gradients whose exact values cancel carried to
  /// 1.5-3.6x the 16-bit bound (d_w_q of an f16 additive layer with Lk = 1,
  /// exactly 0, reached 0.0073; tester seed 183780652708934).
  void defineAttentionOutput() {
    Var d = f.d, i = f.i, h = f.h, b = f.b;
    Expr ci = clamp(i, 0, f.Lq - 1);
    if (!spec.outputProjected()) {
      doutIn(d, i, h, b) = widened(atLayout(in.param("d_out"), d, ci, h, b));
      if (in.param("out").type() == Float(32)) {
        oIn(d, i, h, b) = widened(atLayout(in.param("out"), d, ci, h, b));
        return;
      }
      defineRecomputedOutput();
      return;
    }
    // d_out [B, Lq, M]; w_o [M, H*Dv] is (c, m) in Halide.
    dOutRows = exactFunc("d_out_rows");
    ImageParam dOut = in.param("d_out"); // [B, Lq, M] (packed: [Tq, M])
    dOutRows(f.m, i, b) = widened(spec.packed ? dOut(f.m, ci) : dOut(f.m, ci, b));
    g.chain.push_back(dOutRows);
    Func dAttn = exactFunc("d_attn");
    RDom rm(0, (int32_t)spec.modelDim, "rm_back");
    dAttn(f.n, i, b) = 0.0f;
    dAttn(f.n, i, b) += dOutRows(rm, i, b) * widened(in.param("w_o")(f.n, rm));
    g.products.push_back(dAttn);
    doutIn(d, i, h, b) = dAttn(h * f.Dv + d, i, b);
    defineRecomputedOutput();
  }

  /// O = P V from lse, per query tile over the key blocks (the query pass's shape).
  void defineRecomputedOutput() {
    Var d = f.d, i = f.i, h = f.h, b = f.b;
    g.outputTile = defineTile("_o", /*withGradients=*/false);
    g.outputBlocks = RDom(0, f.blockK, 0, f.nBlocks, "output_blocks");
    RVar x = g.outputBlocks.x, y = g.outputBlocks.y;
    if (Expr seen = tileSeen(f.qt, y); seen.defined())
      g.outputBlocks.where(seen);
    Var ii = f.ii, qt = f.qt;
    g.oRows(d, ii, qt, h, b) = 0.0f;
    g.oRows(d, ii, qt, h, b) += g.outputTile.p(x, ii, qt, y, h, b) * f.vIn(d, y * f.blockK + x, kvOf(h), b);
    oIn(d, i, h, b) = rowsToHeads(g.oRows, d, i, h, b);
  }

  void defineRowDot() {
    Var i = f.i, h = f.h, b = f.b;
    RDom rv(0, f.Dv, "rv_rowsum");
    g.rowDot(i, h, b) = 0.0f;
    g.rowDot(i, h, b) += doutIn(rv, i, h, b) * oIn(rv, i, h, b);
  }

  /// rows(d, ii, qt, hb, b), a per-row-tile sum, at query i of head h.
  Expr rowsToHeads(Func rowsFunc, const Expr &d, const Expr &i, const Expr &h, const Expr &b) {
    Expr r = i * P + h % P;
    return rowsFunc(d, r % f.tileQ, r / f.tileQ, h / P, b);
  }

  /// The P, dP and dS of one (query tile, key block) tile (P alone without
  /// gradients).
  AlgorithmFuncs::Gradients::Tile defineTile(const std::string &suffix,
                                             bool withGradients = true) {
    AlgorithmFuncs::Gradients::Tile t{exactFunc("qk" + suffix),  exactFunc("dp" + suffix),
                                      exactFunc("p" + suffix),   exactFunc("ds" + suffix),
                                      exactFunc("q_t" + suffix), exactFunc("d_out_t" + suffix)};
    Var d = f.d, j = f.j, h = f.h, b = f.b;
    Var jj = f.jj, ii = f.ii, qt = f.qt, kb = f.kb;
    Expr r = qt * f.tileQ + ii, key = kb * f.blockK + jj;
    // Rows transposed per tile (row innermost, a tile's rows contiguous), so
    // the products run over vectors of rows.
    t.doT(ii, d, qt, h, b) = doutIn(d, queryOf(r), headOf(r, h), b);
    // The score's reduction (q . k per key and row, or the additive MLP's
    // sum over hidden units) and dO . V^T, both (j, ii, qt, hb, b), reading
    // the KV head of row group hb.
    t.qk(j, ii, qt, h, b) = 0.0f;
    if (additive()) {
      t.qT(ii, d, qt, h, b) = f.qHoist(d, r, h, b);
      t.qk(j, ii, qt, h, b) +=
          wv(f.rd) * approxTanh(t.qT(ii, f.rd, qt, h, b) + f.kHoist(f.rd, j, kvOf(h), b));
    } else {
      t.qT(ii, d, qt, h, b) = f.qRow(d, r, h, b);
      t.qk(j, ii, qt, h, b) += t.qT(ii, f.rd, qt, h, b) * kKey(f.rd, j, kvOf(h), b);
    }

    Expr query = queryOf(r), head = headOf(r, h);
    ExprEnv env = in.env(query, key, head, b);
    ScoreParts parts = finishScore(f, config, env, t.qk(key, ii, qt, h, b), /*withSlope=*/true);
    MaskParts mask = in.mask(env);
    Expr visible = r < rows && in.keyExists(query, key) && mask.visible;
    Expr row = min(query, f.Lq - 1);
    t.p(jj, ii, qt, kb, h, b) = select(visible, clampedExp(parts.score - g.rowLse(row, head, b)), 0.0f);
    tilePredicate = mask.blockVisible;
    if (!withGradients)
      return t;
    RDom rv(0, f.Dv, "rv" + suffix);
    t.dp(j, ii, qt, h, b) = 0.0f;
    t.dp(j, ii, qt, h, b) += t.doT(ii, rv, qt, h, b) * f.vIn(rv, j, kvOf(h), b);
    Expr p = t.p(jj, ii, qt, kb, h, b);
    t.ds(jj, ii, qt, kb, h, b) = p * (t.dp(key, ii, qt, h, b) - g.rowDot(row, head, b)) * parts.slope;
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
    Expr ds = t.ds(jj, x, y, kb, h, b);
    if (additive())
      g.dKV(d, jj, kb, h, b) = Tuple(0.0f, 0.0f, 0.0f); // + d w_v's partial sums
    else
      g.dKV(d, jj, kb, h, b) = Tuple(0.0f, 0.0f);
    Tuple acc = g.dKV(d, jj, kb, h, b);
    Expr dV = acc[1] + t.p(jj, x, y, kb, h, b) * doutIn(dv, queryOf(r), headOf(r, h), b);
    if (additive()) {
      // Per hidden unit n: d(W_k k) += dS w_v (1 - t^2) and d w_v += dS t.
      Expr n = min(d, hidden() - 1);
      Expr tt = hiddenTanh(n, r, kb * f.blockK + jj, h, b);
      g.dKV(d, jj, kb, h, b) = Tuple(acc[0] + ds * wv(n) * (1.0f - tt * tt), dV, acc[2] + ds * tt);
      return;
    }
    g.dKV(d, jj, kb, h, b) = Tuple(acc[0] + ds * f.qRow(dk, r, h, b), dV);
  }

  void defineQueryPass() {
    Var d = f.d, ii = f.ii, qt = f.qt, h = f.h, b = f.b;
    g.keyBlocks = RDom(0, f.blockK, 0, f.nBlocks, "key_blocks");
    RVar x = g.keyBlocks.x, y = g.keyBlocks.y;
    if (Expr seen = tileSeen(qt, y); seen.defined())
      g.keyBlocks.where(seen);
    g.dQ(d, ii, qt, h, b) = 0.0f;
    Expr ds = g.queryTile.ds(x, ii, qt, y, h, b), key = y * f.blockK + x;
    if (additive()) { // d(W_q q) per hidden unit
      Expr tt = hiddenTanh(d, qt * f.tileQ + ii, key, h, b);
      g.dQ(d, ii, qt, h, b) += ds * wv(d) * (1.0f - tt * tt);
      return;
    }
    g.dQ(d, ii, qt, h, b) += ds * kKey(d, key, kvOf(h), b);
  }

  /// Row chunks per (row group, batch row): enough tasks for 16 threads, at
  /// most 8 and at most the row tiles (each chunk keeps its own dK and dV
  /// partials, so their memory stays below 8 gradients' for any batch).
  Expr chunkCount() {
    Expr tasks = rowGroups * f.B;
    return simplify(clamp(min((16 + tasks - 1) / tasks, nRowTiles), 1, 8));
  }

  /// dK, dV and dQ from one pass over the tiles (Gradients::sums): per key
  /// block and query tile, `which` 0 and 1 add dS^T Q and P^T dO into the
  /// block's keys v over the tile's rows u, 2 adds dS K into the tile's row v
  /// over the block's keys u.
  void defineSinglePass() {
    const int32_t T = f.tileQ; // == f.blockK
    g.chunks = chunkCount();
    Expr tilesPerChunk = (nRowTiles + (g.chunks - 1)) / g.chunks;
    Var d = f.d, slot("slot"), c = g.chunk, hb = f.h, b = f.b;
    g.pairs = RDom({{0, T}, {0, T}, {0, 3}, {0, tilesPerChunk}, {0, f.nBlocks}}, "pairs");
    RVar u = g.pairs[0], v = g.pairs[1], which = g.pairs[2], y = g.pairs[3], kb = g.pairs[4];
    Expr qt = c * tilesPerChunk + y;
    Expr live = qt < nRowTiles;
    if (Expr seen = tileSeen(qt, kb); seen.defined())
      live = live && seen;
    g.pairs.where(live);
    const AlgorithmFuncs::Gradients::Tile &t = g.keyTile;
    Expr rowU = qt * T + u, keyU = kb * T + u;
    Expr dK = t.ds(v, u, qt, kb, hb, b) * f.qRow(min(d, f.Dk - 1), rowU, hb, b);
    Expr dV = t.p(v, u, qt, kb, hb, b) *
              doutIn(min(d, f.Dv - 1), queryOf(rowU), headOf(rowU, hb), b);
    Expr dQ = t.ds(u, v, qt, kb, hb, b) * kKey(min(d, f.Dk - 1), keyU, kvOf(hb), b);
    Expr keys = f.nBlocks * T;
    Expr site = select(which == 0, kb * T + v, which == 1, keys + kb * T + v,
                       2 * keys + y * T + v);
    g.sums(d, slot, c, hb, b) = 0.0f;
    g.sums(d, site, c, hb, b) += select(which == 0, dK, which == 1, dV, dQ);

    // The two passes' sums: the chunks' dK and dV partials added, dQ a view.
    Var jj = f.jj, kbv = f.kb, ii = f.ii, qtv = f.qt;
    Expr key = kbv * T + jj;
    RDom rc(0, g.chunks, "chunks");
    g.dKV(d, jj, kbv, hb, b) = Tuple(0.0f, 0.0f);
    Tuple acc = g.dKV(d, jj, kbv, hb, b);
    g.dKV(d, jj, kbv, hb, b) = Tuple(acc[0] + g.sums(d, key, rc, hb, b),
                                     acc[1] + g.sums(d, keys + key, rc, hb, b));
    g.dQ(d, ii, qtv, hb, b) =
        g.sums(d, 2 * keys + (qtv % tilesPerChunk) * T + ii, qtv / tilesPerChunk, hb, b);
  }

  //--- The chain rule to the arguments ---------------------------------------//

  /// d(score's q) of query i, head h: (d, i, h, b).
  Expr dScoreQuery(const Expr &d, const Expr &i, const Expr &h, const Expr &b) {
    return rowsToHeads(g.dQ, d, i, h, b);
  }
  /// dK (w.r.t. the keys the dot product reads) and dV of key j.
  /// (The key pass sums per row group; a KV head with several row groups,
  /// the additive score's single heads under GQA, adds theirs here.)
  Expr dKeyRows(const Expr &d, const Expr &j, const Expr &gh, const Expr &b, int which) {
    Expr first = groupsPerKv == 1 ? gh : gh * groupsPerKv;
    Expr sum = g.dKV(d, j % f.blockK, j / f.blockK, first, b)[which];
    for (int32_t k = 1; k < groupsPerKv; ++k)
      sum += g.dKV(d, j % f.blockK, j / f.blockK, first + k, b)[which];
    return sum;
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
    const float qScale = scaleFoldedIntoQuery(config, f) ? (float)config.scale : 1.0f;
    switch (spec.score) {
    case ScoreKind::Additive: {
      // W_q q: dq = d(W_q q) W_q, W_q [N, D] being (d, n) in Halide.
      Func dqh = exactFunc("d_q_hidden");
      dqh(f.n, i, h, b) = dScoreQuery(f.n, i, h, b);
      g.chain.push_back(dqh);
      hiddenQuery = dqh;
      return hiddenInput(dqh, "score_wq", "d_q_in");
    }
    case ScoreKind::General: {
      // qs = (q W) * scale: d(qW) = dqs * scale; dq = d(qW) W^T, and
      // dW = sum over rows of q^T d(qW) (argumentGradient, score_w).
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
      g.chainExtents[dot.name()] = f.Lq;
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
    if (additive()) {
      Func dkh = exactFunc("d_k_hidden");
      dkh(f.n, j, gh, b) = dKeyRows(f.n, j, gh, b, 0);
      g.chain.push_back(dkh);
      hiddenKey = dkh;
      return hiddenInput(dkh, "score_wk", "d_k_in");
    }
    if (spec.score == ScoreKind::Cosine) {
      Func dot = exactFunc("d_k_unit_dot");
      RDom rc(0, f.Dk, "rck_back");
      dot(j, gh, b) = 0.0f;
      dot(j, gh, b) += f.kUnit(rc, j, gh, b) * dKeyRows(rc, j, gh, b, 0);
      g.chain.push_back(dot);
      g.chainExtents[dot.name()] = f.Lk;
      dk(d, j, gh, b) = unitBackward(dKeyRows(d, j, gh, b, 0), f.kUnit(d, j, gh, b),
                                     f.kNormSq(j, gh, b), dot(j, gh, b));
    } else {
      dk(d, j, gh, b) = dKeyRows(d, j, gh, b, 0);
    }
    return dk;
  }

  /// Additive: d(row) (d, row, head, b) = sum over hidden units n of
  /// d(W row) (n) W [n, d], a matrix product over the rows.
  Func hiddenInput(Func dHidden, const std::string &weight, const std::string &name) {
    Func dx = exactFunc(name);
    RDom rn(0, hidden(), name + "_r");
    dx(f.d, f.i, f.h, f.b) = 0.0f;
    dx(f.d, f.i, f.h, f.b) += dHidden(rn, f.i, f.h, f.b) * widened(in.param(weight)(f.d, rn));
    g.products.push_back(dx);
    return dx;
  }

  /// Additive: d w_v (n) = the key blocks' sums of dS t.
  Func hiddenOutputGradient() {
    Func dw = exactFunc("d_score_wv_sum");
    RDom r(0, f.blockK, 0, f.nBlocks, 0, rowGroups, 0, f.B, "d_score_wv_r");
    dw(f.n) = 0.0f;
    dw(f.n) += g.dKV(f.n, r.x, r.y, r.z, r.w)[2];
    g.chain.push_back(dw);
    return dw;
  }

  //--- Declared inputs: scatters over every pair -----------------------------//

  /// d input at `logical` (outermost first): the sum, over every read of it
  /// in the custom score and bias, of dL/dS * d(score)/d(read) scattered to
  /// the element read. The indices are data, so each read is one serial
  /// pass over every (query, key) pair with its own recomputed tiles.
  Expr declaredInputGradient(const DeclaredInput &input, const std::vector<Expr> &logical) {
    Expr total = 0.0f;
    for (bool inScore : {true, false}) {
      const ExprGraph &graph = inScore ? config.customScore : config.customBias;
      if (!graph.defined())
        continue;
      // Count this graph's reads of the input at a placeholder pair first.
      ExprEnv probe = in.env(f.i, f.j, f.h, f.b);
      probe.dot = Expr(0.0f);
      size_t count = 0;
      for (const InputRead &read : inputReads(graph, probe))
        count += read.input == input.name;
      for (size_t k = 0; k < count; ++k)
        total += scatterRead(input, graph, inScore, k)(logical);
    }
    return total;
  }

  /// The k-th read of `input` in `graph`, scattered (see declaredInputGradient).
  Func scatterRead(const DeclaredInput &input, const ExprGraph &graph, bool inScore, size_t k) {
    std::string tag = input.name + (inScore ? "_score" : "_bias") + std::to_string(k);
    AlgorithmFuncs::Gradients::Scatter s;
    s.tile = defineTile("_" + tag);
    s.pairs = RDom({{0, f.blockK}, {0, f.tileQ}, {0, f.nBlocks}, {0, nRowTiles}, {0, rowGroups},
                    {0, f.B}}, "pairs_" + tag);
    const RDom &r = s.pairs;
    Expr row = r[3] * f.tileQ + r[1], key = r[2] * f.blockK + r[0];
    Expr query = queryOf(row), head = headOf(row, r[4]), b = r[5];
    ExprEnv env = in.env(query, key, head, b);
    Expr raw = s.tile.qk(key, r[1], r[3], r[4], b);
    ScoreParts parts = finishScore(f, config, env, raw, /*withSlope=*/true);
    env.dot = raw;
    std::vector<InputRead> reads;
    for (InputRead &read : inputReads(graph, env))
      if (read.input == input.name)
        reads.push_back(std::move(read));
    const InputRead &read = reads.at(k);
    // dL/dS of the pair (0 where masked: P is), times d S / d read.
    Expr dScore = s.tile.p(r[0], r[1], r[3], r[2], r[4], b) *
                  (s.tile.dp(key, r[1], r[3], r[4], b) - g.rowDot(min(query, f.Lq - 1), head, b));
    Expr slope = inScore ? read.slope * parts.post : read.slope;
    // The element the clamped read saw.
    const std::vector<Expr> &extents = env.inputExtents.at(input.name);
    std::vector<Expr> target;
    for (size_t d = 0; d < read.indices.size(); ++d)
      target.push_back(clamp(read.indices[d], 0, extents[d] - 1));
    std::vector<Var> vars;
    for (size_t d = 0; d < input.dims.size(); ++d)
      vars.push_back(Var("x" + std::to_string(d)));
    s.sum = exactFunc("d_" + tag);
    s.sum(vars) = 0.0f;
    s.sum(target) += dScore * slope;
    g.scatters.push_back(s);
    return s.sum;
  }

  /// A weight's gradient as a matrix product over the rows: dW (m, n) =
  /// sum over every row r of rowsN (n, r...) * rowsM (m, r...), r ranging
  /// over `rowExtents` (e.g. {Lq, B}, or {Lq, H, B} per head). W's
  /// innermost dimension is m.
  Func weightGradient(Func rowsN, Func rowsM, const std::vector<Expr> &rowExtents,
                      const std::string &name) {
    Region extents;
    for (const Expr &e : rowExtents)
      extents.push_back(Range(0, e));
    RDom r(extents, name + "_r");
    std::vector<Expr> nAt{f.n}, mAt{f.m};
    for (int k = 0; k < r.dimensions(); ++k) {
      nAt.push_back(r[k]);
      mAt.push_back(r[k]);
    }
    Func dw = exactFunc(name);
    dw(f.m, f.n) = 0.0f;
    dw(f.m, f.n) += rowsN(nAt) * rowsM(mAt);
    g.products.push_back(dw);
    return dw;
  }

  /// Rotary: the gradient by the rows before they were turned, R^T dX, at
  /// the row's position (an Expr of dX's row variable); dX itself without.
  Func turnedBack(Func dX, const std::string &name, const Expr &position) {
    if (spec.positional != PositionalKind::Rotary)
      return dX;
    Func back = exactFunc(name);
    rotateRows(back, dX, RotaryTable{f.ropeInvFreq, f.ropeTable}, spec.rotary, position,
               /*transposed=*/true);
    return back;
  }

  //--- Projections: matrix products over the rows ----------------------------//

  /// A per-head gradient (d, row, head, b) as the projection's rows (c, row,
  /// b), c = head * width + d: what the projection wrote.
  Func headsFlat(Func perHead, const Expr &width, const Expr &heads, const std::string &name) {
    Func flat = exactFunc(name);
    flat(f.n, f.i, f.b) = perHead(f.n % width, f.i, f.n / width, f.b);
    g.chain.push_back(flat);
    g.chainExtents[name] = width * heads;
    return flat;
  }
  Func flatQuery() {
    if (!dqFlat.defined())
      dqFlat = headsFlat(dq, f.D, f.H, "d_q_flat");
    return dqFlat;
  }
  Func flatKey() {
    if (!dkFlat.defined())
      dkFlat = headsFlat(dk, f.Dk, f.G, "d_k_flat");
    return dkFlat;
  }
  Func flatValue() {
    if (!dvFlat.defined()) {
      Func dvHeads = exactFunc("d_v_heads");
      dvHeads(f.d, f.j, f.g, f.b) = dKeyRows(f.d, f.j, f.g, f.b, 1);
      dvFlat = headsFlat(dvHeads, f.Dv, f.G, "d_v_flat");
    }
    return dvFlat;
  }

  /// dX (m, row, b) += rows (c, row, b) . w [C, M]: the gradient through x W^T.
  Func inputGradient(Func rowsFlat, const std::string &weight, const Expr &width,
                     const std::string &name) {
    Func dx = exactFunc(name);
    RDom rc(0, width * (weight == "w_q" ? f.H : f.G), name + "_r");
    dx(f.m, f.i, f.b) = 0.0f;
    dx(f.m, f.i, f.b) += rowsFlat(rc, f.i, f.b) * widened(in.param(weight)(f.m, rc));
    g.products.push_back(dx);
    return dx;
  }

  /// db [C] = sum over the rows of rows (c).
  Func biasGradient(Func rowsFlat, const Expr &length, const std::string &name) {
    Func db = exactFunc(name);
    RDom r(0, length, 0, f.B, name + "_r");
    db(f.n) = 0.0f;
    db(f.n) += rowsFlat(f.n, r.x, r.y);
    g.chain.push_back(db);
    return db;
  }

  /// The gradient of the argument `name` (without "d_") at the output's
  /// Halide coordinates `at`.
  Expr argumentGradient(const std::string &name, const std::vector<Expr> &at) {
    if (name == "q")
      return dq(at[0], at[1], at[2], at[3]);
    if (name == "k")
      return dk(at[0], at[1], at[2], at[3]);
    if (name == "v")
      return dKeyRows(at[0], at[1], at[2], at[3], 1);
    // general: dW [D, Dk] = q^T d(qW); additive: dW [N, D] = d(W row)^T row.
    if (name == "score_w")
      return weightGradient(f.qIn, dqGeneral, {f.Lq, f.H, f.B}, "d_score_w_in")(at[0], at[1]);
    if (name == "score_wq")
      return weightGradient(hiddenQuery, f.qIn, {f.Lq, f.H, f.B}, "d_score_wq_sum")(at[0], at[1]);
    if (name == "score_wk")
      return weightGradient(hiddenKey, f.kIn, {f.Lk, f.G, f.B}, "d_score_wk_sum")(at[0], at[1]);
    if (name == "score_wv")
      return hiddenOutputGradient()(at[0]);
    for (const DeclaredInput &input : spec.inputs)
      if (input.name == name && input.type == ElemType::F32) {
        // The input's logical order is the reverse of the Halide coordinates.
        std::vector<Expr> logical(at.rbegin(), at.rend());
        return declaredInputGradient(input, logical);
      }
    Expr Lk = f.Lk, Lq = f.Lq;
    if (name == "x" || name == "x_q" || name == "x_kv") {
      Expr sum = 0.0f;
      if (name != "x_kv")
        sum += inputGradient(flatQuery(), "w_q", f.D, "d_x_from_q")(at[0], at[1], at[2]);
      if (name != "x_q") {
        sum += inputGradient(flatKey(), "w_k", f.Dk, "d_x_from_k")(at[0], at[1], at[2]);
        sum += inputGradient(flatValue(), "w_v", f.Dv, "d_x_from_v")(at[0], at[1], at[2]);
      }
      return sum;
    }
    // Projections: dW [C, M] = d(rows)^T x; W_o [M, H*Dv]: d_out^T O.
    if (name == "w_q")
      return weightGradient(flatQuery(), f.xQuery, {Lq, f.B}, "d_w_q_sum")(at[0], at[1]);
    if (name == "w_k")
      return weightGradient(flatKey(), f.xKeys, {Lk, f.B}, "d_w_k_sum")(at[0], at[1]);
    if (name == "w_v")
      return weightGradient(flatValue(), f.xKeys, {Lk, f.B}, "d_w_v_sum")(at[0], at[1]);
    if (name == "w_o") {
      Func oFlat = headsFlat(oIn, f.Dv, f.H, "o_flat");
      return weightGradient(dOutRows, oFlat, {Lq, f.B}, "d_w_o_sum")(at[0], at[1]);
    }
    if (name == "b_q")
      return biasGradient(flatQuery(), Lq, "d_b_q_sum")(at[0]);
    if (name == "b_k") {
      // A key bias shifts every score of a query row alike when the score is
      // linear in k: softmax ignores it, and its gradient is exactly 0. Not
      // under a softcap (tanh is not a shift) or rotary (each key turns the
      // bias by its own position).
      bool linearInK = spec.score == ScoreKind::Dot || spec.score == ScoreKind::ScaledDot ||
                       spec.score == ScoreKind::General;
      if (linearInK && !spec.softcap && spec.positional != PositionalKind::Rotary)
        return Expr(0.0f);
      return biasGradient(flatKey(), Lk, "d_b_k_sum")(at[0]);
    }
    if (name == "b_v")
      return biasGradient(flatValue(), Lk, "d_b_v_sum")(at[0]);
    if (name == "b_o")
      return biasGradient(dOutRows, Lq, "d_b_o_sum")(at[0]);
    throw BackendError("kernel '" + config.name + "': no gradient for '" + name + "' yet");
  }

  void defineOutputs() {
    dq = turnedBack(queryGradient(), "d_q_unrotated", in.queryPosition(f.i));
    dk = turnedBack(keyGradient(), "d_k_unrotated", in.keyPosition(f.j));
    for (const ArgSpec &arg : config.arguments) {
      if (!arg.isOutput)
        continue;
      Func out = exactFunc(arg.name);
      std::string name = arg.name.substr(2); // d_X -> X
      // The output's Halide coordinates, and where they sit in the
      // gradient's (d, row, head, b) order for the attention tensors.
      std::vector<Var> vars;
      for (size_t k = 0; k < arg.shape.size(); ++k)
        vars.push_back(Var("x" + std::to_string(k)));
      std::vector<Expr> at(vars.begin(), vars.end());
      bool perHead = name == "q" || name == "k" || name == "v";
      bool rows = name == "x" || name == "x_q" || name == "x_kv";
      if (perHead && spec.packed) // tokens [T, heads, W]: (d, head, t)
        at = {vars[0], vars[2], vars[1], Expr(0)};
      else if (rows && spec.packed) // tokens [T, M]: (m, t)
        at = {vars[0], vars[1], Expr(0)};
      else if (perHead && bshd())
        std::swap(at[1], at[2]); // [B, L, heads, W]: (d, head, row, b)
      out(vars) = in.stored(arg.name, argumentGradient(name, at));
      in.constrainOutput(out, arg.name);
    }
  }

  Func dq, dk;                   // d_q_in (d, i, h, b), d_k_in (d, j, g, b)
  Func dqFlat, dkFlat, dvFlat;   // projections: per-head gradients as rows (c, row, b)
  Func hiddenQuery, hiddenKey;   // additive: d(W_q q) (n, i, h, b), d(W_k k) (n, j, g, b)
  Func dqGeneral; // general: d(q W) (d, i, h, b)
};

} // namespace

void defineGradients(GradientInputs &in) { GradientBuilder(in).build(); }

} // namespace attnc::halide_backend
