//===- VerifyLowering.cpp - attn-verify-lowering ---------------------------===//
//
// The last pass before the Halide lowering: a kernel function must consist of
// exactly one attn.attention whose results are returned, with no unfused attn
// op left; only the projection ops (positions, project, split_heads,
// merge_heads) may surround it. Anything else is a located error instead of
// a back-end crash.
//
//===----------------------------------------------------------------------===//
#include "PassDetail.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

struct VerifyLoweringPass : public AttnVerifyLoweringBase<VerifyLoweringPass> {
  void runOnOperation() override {
    FuncOp func = getOperation();
    unsigned fused = 0;
    WalkResult result = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<AttentionOp>(op)) {
        ++fused;
        return WalkResult::skip(); // its expression regions belong to it
      }
      if (isa<PositionsOp, ProjectOp, SplitHeadsOp, MergeHeadsOp, RotaryOp,
              SequencesOp, PackOp, CacheOp>(op))
        return WalkResult::advance();
      if (op->getDialect() && op->getDialect()->getNamespace() == "attn") {
        op->emitError("op was not fused into attn.attention; the Halide lowering "
                      "only handles the fused form");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    if (fused != 1) {
      func.emitError("kernel '") << func.getName() << "' must hold exactly one attn.attention, found "
                                 << fused;
      signalPassFailure();
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::attn::createVerifyLoweringPass() {
  return std::make_unique<VerifyLoweringPass>();
}
