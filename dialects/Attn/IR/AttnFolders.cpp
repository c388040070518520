//===- AttnFolders.cpp - Folds and canonicalizations of attn ops ----------===//
//
// Local algebra on the score chain: a scale of 1 is the identity, and two
// scales in a row are one scale by their product.
//
//===----------------------------------------------------------------------===//
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::attn;

// scale(x, 1) = x
OpFoldResult ScaleOp::fold(ArrayRef<Attribute>) {
  if (getFactor().convertToDouble() == 1.0)
    return getInput();
  return {};
}

namespace {
// scale(scale(x, a), b) = scale(x, a * b)
struct MergeScales : public OpRewritePattern<ScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ScaleOp>();
    if (!inner)
      return failure();
    double product = inner.getFactor().convertToDouble() * op.getFactor().convertToDouble();
    rewriter.replaceOpWithNewOp<ScaleOp>(op, op.getType(), inner.getInput(),
                                         rewriter.getF64FloatAttr(product));
    return success();
  }
};
} // namespace

void ScaleOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<MergeScales>(context);
}
