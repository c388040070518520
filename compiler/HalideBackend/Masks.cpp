//===- Masks.cpp - Which keys a query sees --------------------------------===//
//
// docs/language.md §4's masks (`mask`) in Halide: each term's element test (ANDed),
// and, for interval terms (causal, window, valid_len and the interval handed
// down by attn-analyze-mask), a conservative test of whether a key block can
// hold any visible key of a query tile, so the key-block loop skips it.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AlgorithmParts.h"
#include "compiler/HalideBackend/BackendError.h"

using namespace Halide;

namespace attnc::halide_backend {

// attnc::Expr is the frontend's AST node; here Expr means Halide's.
using Halide::Expr;

namespace {
/// The key and query-position ranges of one (query tile, key block) pair.
struct BlockRange {
  Expr jMin, jMax, ipMin, ipMax;
};

void andWith(Expr &acc, const Expr &term) { acc = acc.defined() ? (acc && term) : term; }

Expr boundValue(const KeyBound &bound, const Expr &ip, const Expr &validLen) {
  Expr off = Expr((int32_t)bound.offset);
  return bound.kind == KeyBound::RelativeToIp ? ip + off : validLen + off;
}
} // namespace

MaskParts buildMask(MaskInputs &in, const ExprEnv &env) {
  AlgorithmFuncs &f = in.f;
  const AttentionConfig &config = in.config;
  Expr visible = Halide::Internal::const_true();
  Expr blockVisible;
  BlockRange r;
  Expr off = f.Lk - f.Lq;
  r.jMin = f.kb * f.blockK;
  r.jMax = r.jMin + (f.blockK - 1);
  // Rows r = i * P + p: the tile's queries are its rows divided by P.
  Expr P = Expr((int32_t)f.groupP);
  r.ipMin = (f.qt * f.tileQ) / P + off;
  r.ipMax = (f.qt * f.tileQ + (f.tileQ - 1)) / P + off;

  Expr validLenB, validLenEnv;
  bool hasValidLen = config.kernel.hasMask(MaskKind::ValidLen) ||
                     config.interval.lo.kind == KeyBound::ValidLen ||
                     config.interval.hi.kind == KeyBound::ValidLen;
  if (hasValidLen) {
    ImageParam vl = in.param("valid_len");
    validLenB = vl(f.b);
    validLenEnv = vl(env.b);
  }

  for (const MaskTermDesc &term : config.kernel.masks) {
    switch (term.kind) {
    case MaskKind::Causal:
      visible = visible && env.j <= env.ip;
      andWith(blockVisible, r.jMin <= r.ipMax);
      break;
    case MaskKind::Window: {
      Expr w = Expr((int32_t)term.window);
      visible = visible && env.j <= env.ip && env.j > env.ip - w;
      andWith(blockVisible, r.jMin <= r.ipMax && r.jMax > r.ipMin - w);
      break;
    }
    case MaskKind::ValidLen:
      visible = visible && env.j < validLenEnv;
      andWith(blockVisible, r.jMin < validLenB);
      break;
    case MaskKind::Input: {
      ImageParam mask = in.param("mask"); // u8 [B, Lq, Lk]
      Expr ci = clamp(env.i, 0, f.Lq - 1), cj = clamp(env.j, 0, f.Lk - 1);
      visible = visible && mask(cj, ci, env.b) != cast<uint8_t>(0);
      break;
    }
    case MaskKind::Custom:
      if (!term.expr.defined())
        throw BackendError("kernel '" + config.name + "': custom mask term without an expression");
      visible = visible && buildExpr(term.expr, env);
      break;
    }
  }

  // The interval computed by the dialect passes can only narrow the blocks.
  const KeyInterval &iv = config.interval;
  if (iv.hi.kind != KeyBound::None)
    andWith(blockVisible, r.jMin < boundValue(iv.hi, r.ipMax, validLenB));
  if (iv.lo.kind != KeyBound::None)
    andWith(blockVisible, r.jMax >= boundValue(iv.lo, r.ipMin, validLenB));
  return {visible, blockVisible};
}

} // namespace attnc::halide_backend
