//===- AnalyzeMask.cpp - attn-analyze-mask ---------------------------------===//
//
// Finds the masks whose visible keys form an interval per query row and
// records it on attn.attention, so the back end shrinks its key loops instead
// of testing every (i, j) pair. With ip = i + (Lk - Lq):
//   causal     j <= ip                 -> hi = ip + 1
//   window(W)  ip - W < j <= ip        -> lo = ip - W + 1, hi = ip + 1
//   valid_len  j < valid_len[b]        -> hi also <= valid_len[b]
// A conjunction intersects the intervals. Terms that are not intervals
// (`input`, custom expressions not recognised) set mask_needs_test and keep
// the element-wise test.
//
//===----------------------------------------------------------------------===//
#include "PassDetail.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// [ip + lo, ip + hi) intersected with j < valid_len[b].
struct Interval {
  Optional<int64_t> lo, hi;
  bool validLen = false;
  bool needsTest = false;

  void clampHi(int64_t offset) { hi = hi ? std::min(*hi, offset) : offset; }
  void clampLo(int64_t offset) { lo = lo ? std::max(*lo, offset) : offset; }
};

static Interval analyze(AttentionOp op) {
  Interval interval;
  for (Attribute attr : op.getMasks()) {
    StringRef kind = attr.cast<StringAttr>().getValue();
    if (kind == "causal") {
      interval.clampHi(1);
    } else if (kind == "window") {
      interval.clampHi(1);
      interval.clampLo(1 - op.getWindow().getValueOr(1));
    } else if (kind == "valid_len") {
      interval.validLen = true;
    } else {
      interval.needsTest = true;
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
      if (interval.validLen)
        op.setKeyHiValidLenAttr(b.getUnitAttr());
      if (interval.needsTest)
        op.setMaskNeedsTestAttr(b.getUnitAttr());
    });
  }
};

} // namespace

std::unique_ptr<Pass> mlir::attn::createAnalyzeMaskPass() {
  return std::make_unique<AnalyzeMaskPass>();
}
