//===- Packed.cpp - Packed variable-length batches in Halide --------------===//
//
// docs/language.md, packed batches. The tokens of all sequences form the algorithm's one row
// axis (B = 1 inside): query tiles and key blocks run over Tq and Tk tokens,
// and each query row finds its sequence in a table made once per call, so
// positions, masks, rotary angles and bottom-right alignment are the
// sequence's own. A key block is visited only when it holds keys of a
// sequence the tile's rows belong to; keys of another sequence are masked.
// cu_seqlens are validated first: a bad table is an error, never a read out
// of bounds.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AlgorithmParts.h"

using namespace Halide;

namespace attnc::halide_backend {

using Halide::Expr;

namespace {

/// cu_seqlens, checked entry by entry: starts at 0, never decreases, ends
/// at the token count. (b) -> offset, for b in [0, B].
Func validated(ImageParam cu, const Expr &count, const Expr &tokens, const std::string &name) {
  Var b("b");
  Expr at = cu(clamp(b, 0, count)), next = cu(clamp(b + 1, 0, count));
  Expr ok = (b > 0 || at == 0) && (b < count || at == tokens) && (b >= count || at <= next);
  Func checked(name + "_checked");
  checked(b) = require(ok, at, name, "must start at 0, never decrease and end at the number "
                                     "of tokens; entry", b, "is", at, "of", tokens,
                       "tokens");
  return checked;
}

/// (t) -> the sequence of token t, for t in [0, T): the number of sequences
/// b >= 1 that start at or before t (a scatter of the starts, then a scan).
/// Its readers clamp the value to [0, B - 1] where they index with it.
Func sequenceOf(Func cu, const Expr &count, const Expr &tokens, const std::string &name,
                std::vector<Func> &tables) {
  Var t("t");
  Func starts(name + "_starts"), seq(name + "_seq");
  RDom r(1, max(count - 1, 0), name + "_r");
  starts(t) = 0;
  starts(clamp(cu(r), 0, tokens)) += 1;
  RDom s(1, max(tokens - 1, 0), name + "_s");
  seq(t) = starts(t);
  seq(s) = seq(s - 1) + starts(s);
  tables.insert(tables.end(), {cu, starts, seq});
  return seq;
}

} // namespace

PackedSequences makePackedSequences(ImageParam cuQ, ImageParam cuK, const Expr &Tq,
                                    const Expr &Tk) {
  PackedSequences p;
  p.count = cuQ.dim(0).extent() - 1;
  p.Tq = Tq;
  p.Tk = Tk;
  p.cuQ = validated(cuQ, p.count, Tq, "cu_seqlens_q");
  p.cuK = validated(cuK, p.count, Tk, "cu_seqlens_k");
  Func seqOfQuery = sequenceOf(p.cuQ, p.count, Tq, "query", p.tables);
  Func seqOfKey = sequenceOf(p.cuK, p.count, Tk, "key", p.tables);
  // Per query token, its frame, and per key token its position: tables the
  // score loops read with whole-vector loads rather than gathering offsets,
  // defined past the last token too (tile padding reads them unclamped; a
  // clamped index would be a gather). Values are clamped again: bounds
  // inference cannot see through a table's values.
  Var t("t");
  Expr tq = clamp(t, 0, Tq - 1), tk = clamp(t, 0, Tk - 1);
  Expr b = clamp(seqOfQuery(tq), 0, p.count - 1), q0 = p.cuQ(b), k0 = p.cuK(b);
  p.queryFrame = Func("query_frame");
  Expr Lk = p.cuK(b + 1) - k0, Lq = p.cuQ(b + 1) - q0;
  p.queryFrame(t) = Tuple(b, t - q0, k0, Lk, Lq, t - q0 + (Lk - Lq));
  Expr kb = clamp(seqOfKey(tk), 0, p.count - 1);
  p.keyPositions = Func("key_position");
  p.keyPositions(t) = t - p.cuK(kb);
  p.tables.insert(p.tables.end(), {p.queryFrame, p.keyPositions});
  return p;
}

PackedSequences::Frame PackedSequences::frame(const Expr &i, const Expr &j) const {
  Frame f;
  f.b = clamp(queryFrame(i)[0], 0, count - 1);
  f.i = queryFrame(i)[1];
  f.j = j - queryFrame(i)[2];
  f.Lk = queryFrame(i)[3];
  f.Lq = queryFrame(i)[4];
  f.ip = queryFrame(i)[5];
  f.keyVisible = f.j >= 0 && f.j < f.Lk;
  return f;
}

Expr PackedSequences::keyPosition(const Expr &j) const {
  return keyPositions(j);
}

} // namespace attnc::halide_backend
