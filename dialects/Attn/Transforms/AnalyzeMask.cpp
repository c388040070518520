//===- AnalyzeMask.cpp - attn-analyze-mask ---------------------------------===//
//
// Finds the masks whose visible keys form an interval per query row and
// records it on attn.attention, so the back end shrinks its key loops instead
// of testing every (i, j) pair. With ip = i + (Lk - Lq):
//   causal     j <= ip                 -> hi = ip + 1
//   window(W)  ip - W < j <= ip        -> lo = ip - W + 1, hi = ip + 1
//   valid_len  j < valid_len[b]        -> hi also <= valid_len[b] (key_hi_input)
// Custom mask regions are recognised when their yield is a conjunction of
// comparisons `j <op> ip + c` or `j < t[b]` (t a declared i32[B] input): the
// same bounds as the built-in masks. `i` counts as `ip - (Lk - Lq)` when
// both lengths are static. A conjunction intersects the intervals.
// Terms that are not intervals relative to ip (`input`, `key_padding`,
// `prefix`, `sink`, other expressions) set mask_needs_test and keep the
// element-wise test; the back end skips key blocks for the built-in ones by
// their own block tests. A union (mask_groups) is left to those block tests
// too: each group's terms bound it, and a key block is visited when some
// group can see it.
//
//===----------------------------------------------------------------------===//
#include "PassDetail.h"

#include "dialects/Attn/IR/AttnKinds.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// [ip + lo, ip + hi) intersected with j < extra[hiInput][b].
struct Interval {
  Optional<int64_t> lo, hi;
  Optional<unsigned> hiInput; // index into the fused op's extra operands
  bool needsTest = false;

  void clampHi(int64_t offset) { hi = hi ? std::min(*hi, offset) : offset; }
  void clampLo(int64_t offset) { lo = lo ? std::max(*lo, offset) : offset; }
};

/// An index value of a mask region as j*cj + ip*cip + c (+ len*cl, where len
/// is t[b] for a rank-1 integer input t). Anything else is not linear.
struct Linear {
  int64_t cj = 0, cip = 0, c = 0, cl = 0;
  Value len;

  Linear scaled(int64_t f) const { return {cj * f, cip * f, c * f, cl * f, len}; }
};

static Optional<Linear> combine(Optional<Linear> a, Optional<Linear> b, int64_t sign) {
  if (!a || !b)
    return llvm::None;
  if (a->len && b->len && a->len != b->len)
    return llvm::None;
  return Linear{a->cj + sign * b->cj, a->cip + sign * b->cip, a->c + sign * b->c,
                a->cl + sign * b->cl, a->len ? a->len : b->len};
}

/// i = ip - (Lk - Lq) when both lengths are static; otherwise unknown.
static Optional<int64_t> keyQueryOffset(AttentionOp op) {
  int64_t lq = op.getQuery().getType().cast<RankedTensorType>().getDimSize(2);
  int64_t lk = op.getKey().getType().cast<RankedTensorType>().getDimSize(2);
  if (ShapedType::isDynamic(lq) || ShapedType::isDynamic(lk))
    return llvm::None;
  return lk - lq;
}

static Optional<Linear> linearize(Value v, Block &body) {
  if (auto arg = v.dyn_cast<BlockArgument>()) {
    if (arg.getOwner() != &body)
      return llvm::None;
    if (arg.getArgNumber() == ArgJ)
      return Linear{1, 0, 0, 0, {}};
    if (arg.getArgNumber() == ArgIp)
      return Linear{0, 1, 0, 0, {}};
    if (arg.getArgNumber() == ArgI)
      if (auto offset = keyQueryOffset(cast<AttentionOp>(body.getParentOp())))
        return Linear{0, 1, -*offset, 0, {}};
    return llvm::None;
  }
  APInt constant;
  if (matchPattern(v, m_ConstantInt(&constant)))
    return Linear{0, 0, constant.getSExtValue(), 0, {}};
  Operation *op = v.getDefiningOp();
  if (auto add = dyn_cast_or_null<arith::AddIOp>(op))
    return combine(linearize(add.getLhs(), body), linearize(add.getRhs(), body), 1);
  if (auto sub = dyn_cast_or_null<arith::SubIOp>(op))
    return combine(linearize(sub.getLhs(), body), linearize(sub.getRhs(), body), -1);
  if (auto mul = dyn_cast_or_null<arith::MulIOp>(op)) {
    APInt f;
    if (matchPattern(mul.getRhs(), m_ConstantInt(&f)))
      if (auto l = linearize(mul.getLhs(), body))
        return l->scaled(f.getSExtValue());
    if (matchPattern(mul.getLhs(), m_ConstantInt(&f)))
      if (auto r = linearize(mul.getRhs(), body))
        return r->scaled(f.getSExtValue());
    return llvm::None;
  }
  if (auto read = dyn_cast_or_null<ReadOp>(op)) {
    auto type = read.getInput().getType().cast<RankedTensorType>();
    auto index = read.getIndices().size() == 1
                     ? read.getIndices()[0].dyn_cast<BlockArgument>()
                     : BlockArgument();
    if (type.getRank() == 1 && type.getElementType().isa<IntegerType>() && index &&
        index.getOwner() == &body && index.getArgNumber() == ArgB)
      return Linear{0, 0, 0, 1, read.getInput()};
  }
  return llvm::None;
}

/// Adds the bounds of one boolean value to `interval`; false when it is not
/// a conjunction of interval comparisons.
static bool addBounds(Value cond, Block &body, AttentionOp op, Interval &interval) {
  Operation *def = cond.getDefiningOp();
  if (auto both = dyn_cast_or_null<arith::AndIOp>(def))
    return addBounds(both.getLhs(), body, op, interval) &&
           addBounds(both.getRhs(), body, op, interval);
  APInt constant;
  if (matchPattern(cond, m_ConstantInt(&constant)))
    return constant.getBoolValue(); // `true` bounds nothing; `false` is no interval
  auto cmp = dyn_cast_or_null<arith::CmpIOp>(def);
  if (!cmp)
    return false;
  Optional<Linear> d = combine(linearize(cmp.getLhs(), body), linearize(cmp.getRhs(), body), -1);
  if (!d)
    return false;
  // d PRED 0; make the coefficient of j +1.
  arith::CmpIPredicate pred = cmp.getPredicate();
  if (d->cj == -1) {
    d = d->scaled(-1);
    switch (pred) {
    case arith::CmpIPredicate::slt: pred = arith::CmpIPredicate::sgt; break;
    case arith::CmpIPredicate::sle: pred = arith::CmpIPredicate::sge; break;
    case arith::CmpIPredicate::sgt: pred = arith::CmpIPredicate::slt; break;
    case arith::CmpIPredicate::sge: pred = arith::CmpIPredicate::sle; break;
    case arith::CmpIPredicate::eq: break;
    default: return false;
    }
  }
  if (d->cj != 1)
    return false;
  if (d->cl != 0) {
    // j - len + c < 0 with c = 0: j < t[b].
    if (d->cl != -1 || d->cip != 0 || d->c != 0 || pred != arith::CmpIPredicate::slt)
      return false;
    auto extra = op.getExtra();
    auto it = llvm::find(extra, d->len);
    if (it == extra.end())
      return false;
    interval.hiInput = (unsigned)(it - extra.begin());
    return true;
  }
  if (d->cip != -1)
    return false;
  // j - ip + c PRED 0, i.e. j PRED ip - c.
  int64_t at = -d->c;
  switch (pred) {
  case arith::CmpIPredicate::slt: interval.clampHi(at); return true;
  case arith::CmpIPredicate::sle: interval.clampHi(at + 1); return true;
  case arith::CmpIPredicate::sgt: interval.clampLo(at + 1); return true;
  case arith::CmpIPredicate::sge: interval.clampLo(at); return true;
  case arith::CmpIPredicate::eq:
    interval.clampLo(at);
    interval.clampHi(at + 1);
    return true;
  default: return false;
  }
}

static Interval analyze(AttentionOp op) {
  Interval interval;
  if (op.getMaskGroups()) {
    interval.needsTest = true;
    return interval;
  }
  unsigned customIndex = 0;
  // Built-in mask inputs follow the score weights in `extra`, in term order.
  unsigned maskInput = kindInfo(op.getScore()).numWeights;
  for (MaskKind kind : op.getMaskKinds()) {
    switch (kind) {
    case MaskKind::causal:
      interval.clampHi(1);
      break;
    case MaskKind::window:
      interval.clampHi(1);
      interval.clampLo(1 - op.getWindow().getValueOr(1));
      break;
    case MaskKind::valid_len:
      interval.hiInput = maskInput++;
      break;
    case MaskKind::custom: {
      Block &body = op.getMaskBodies()[customIndex++].front();
      // Bounds of a term are only kept when the whole term is an interval.
      Interval term = interval;
      if (addBounds(cast<YieldOp>(body.getTerminator()).getValue(), body, op, term))
        interval = term;
      else
        interval.needsTest = true;
      break;
    }
    case MaskKind::input:
    case MaskKind::prefix:
    case MaskKind::key_padding:
      maskInput += kindInfo(kind).hasInput;
      interval.needsTest = true;
      break;
    case MaskKind::sink:
      interval.needsTest = true;
      break;
    }
  }
  return interval;
}

struct AnalyzeMaskPass : public AttnAnalyzeMaskBase<AnalyzeMaskPass> {
  void runOnOperation() override {
    getOperation().walk([](AttentionOp op) {
      Interval interval = analyze(op);
      Builder b(op.getContext());
      if (interval.lo)
        op.setKeyLoOffsetAttr(b.getI64IntegerAttr(*interval.lo));
      if (interval.hi)
        op.setKeyHiOffsetAttr(b.getI64IntegerAttr(*interval.hi));
      if (interval.hiInput)
        op.setKeyHiInputAttr(b.getI64IntegerAttr(*interval.hiInput));
      if (interval.needsTest)
        op.setMaskNeedsTestAttr(b.getUnitAttr());
    });
  }
};

} // namespace

std::unique_ptr<Pass> mlir::attn::createAnalyzeMaskPass() {
  return std::make_unique<AnalyzeMaskPass>();
}
