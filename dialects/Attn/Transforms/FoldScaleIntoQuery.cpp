//===- FoldScaleIntoQuery.cpp - attn-fold-scale-into-query -----------------===//
//
// scale * (q . k) = (scale * q) . k for the dot-product scores, so the scale
// can be applied to the Lq x D queries instead of the Lq x Lk scores. That
// pays when D < Lk; a dynamic Lk is assumed long (the common case). Scores
// that are not bilinear in q (additive, custom) keep the scale where it is.
//
//===----------------------------------------------------------------------===//
#include "PassDetail.h"

#include "dialects/Attn/IR/AttnKinds.h"

using namespace mlir;
using namespace mlir::attn;

namespace {


struct FoldScaleIntoQueryPass
    : public AttnFoldScaleIntoQueryBase<FoldScaleIntoQueryPass> {
  void runOnOperation() override {
    getOperation().walk([](AttentionOp op) {
      if (op.getScaleOnQuery() || op.getScale().convertToDouble() == 1.0 ||
          !kindInfo(op.getScore()).scaleCommutesWithQuery)
        return;
      auto q = op.getQuery().getType().cast<RankedTensorType>();
      auto k = op.getKey().getType().cast<RankedTensorType>();
      int64_t width = q.getDimSize(3), keys = k.getDimSize(2);
      bool cheaper = ShapedType::isDynamic(keys) ||
                     (!ShapedType::isDynamic(width) && width < keys);
      if (cheaper)
        op.setScaleOnQueryAttr(UnitAttr::get(op.getContext()));
    });
  }
};

} // namespace

std::unique_ptr<Pass> mlir::attn::createFoldScaleIntoQueryPass() {
  return std::make_unique<FoldScaleIntoQueryPass>();
}
