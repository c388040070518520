//===- FuseAttention.cpp - attn-fuse-attention -----------------------------===//
//
// Rewrites the chain MLIRGen emits,
//   weighted_sum(softmax(mask*(bias?(softcap?(scale?(score(q, k)))))), v),
// into one attn.attention op, the form the Halide lowering consumes. A chain
// whose intermediate values have other users, or whose ops come in another
// order, is left alone (attn-verify-lowering then reports it).
//
//===----------------------------------------------------------------------===//
#include "PassDetail.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The pieces of one unfused attention chain, collected walking up from
/// the weighted sum.
struct Chain {
  ScoreOp score;
  double scale = 1.0;
  Optional<double> softcap;
  Optional<StringRef> bias;
  SmallVector<MaskOp> masks; // closest to the softmax first
  SoftmaxOp softmax;
};

/// Values between two fused ops must have no other user, or fusing would
/// leave them without a producer.
static bool singleUse(Value v) { return v.hasOneUse(); }

static FailureOr<Chain> matchChain(WeightedSumOp sum) {
  Chain chain;
  chain.softmax = sum.getProbs().getDefiningOp<SoftmaxOp>();
  // Other users of the probabilities (the `weights` output) are served by
  // a second result of the fused op.
  if (!chain.softmax)
    return failure();
  Value cur = chain.softmax.getInput();
  // Walk up in reverse chain order: mask*, bias?, softcap?, scale?, score.
  while (auto mask = cur.getDefiningOp<MaskOp>()) {
    if (!singleUse(cur))
      return failure();
    chain.masks.push_back(mask);
    cur = mask.getInput();
  }
  if (auto bias = cur.getDefiningOp<BiasOp>()) {
    if (!singleUse(cur))
      return failure();
    chain.bias = bias.getKind();
    cur = bias.getInput();
  }
  if (auto cap = cur.getDefiningOp<SoftcapOp>()) {
    if (!singleUse(cur))
      return failure();
    chain.softcap = cap.getCap().convertToDouble();
    cur = cap.getInput();
  }
  if (auto scale = cur.getDefiningOp<ScaleOp>()) {
    if (!singleUse(cur))
      return failure();
    chain.scale = scale.getFactor().convertToDouble();
    cur = scale.getInput();
  }
  chain.score = cur.getDefiningOp<ScoreOp>();
  if (!chain.score || !singleUse(cur))
    return failure();
  return chain;
}

// weighted_sum(softmax(mask(bias(softcap(scale(score(q,k), a), c)))), v)
//   = attention(q, k, v) {scale = a, softcap = c, bias, masks}
// and the softmax itself, where still used, = the second result (weights).
struct FuseChain : public OpRewritePattern<WeightedSumOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WeightedSumOp sum, PatternRewriter &rewriter) const override {
    FailureOr<Chain> matched = matchChain(sum);
    if (failed(matched))
      return rewriter.notifyMatchFailure(sum, "not a fusable attention chain");
    Chain &chain = *matched;

    // Extra operands in contract order: score weights, then mask inputs.
    SmallVector<Value> extra(chain.score.getWeights().begin(), chain.score.getWeights().end());
    SmallVector<Attribute> maskKinds;
    Optional<int64_t> window;
    for (MaskOp mask : llvm::reverse(chain.masks)) {
      maskKinds.push_back(rewriter.getStringAttr(mask.getKind()));
      extra.append(mask.getInputs().begin(), mask.getInputs().end());
      if (mask.getWindow())
        window = window ? std::min(*window, (int64_t)*mask.getWindow()) : *mask.getWindow();
    }

    SmallVector<Type> resultTypes{sum.getType()};
    bool weightsUsed = !chain.softmax.getResult().hasOneUse();
    if (weightsUsed)
      resultTypes.push_back(chain.softmax.getType());
    auto fused = rewriter.create<AttentionOp>(
        sum.getLoc(), resultTypes, chain.score.getQuery(),
        chain.score.getKey(), sum.getValue(), extra, chain.score.getKindAttr(),
        chain.score.getHiddenAttr(), rewriter.getF64FloatAttr(chain.scale),
        /*scale_on_query=*/nullptr,
        chain.softcap ? rewriter.getF64FloatAttr(*chain.softcap) : FloatAttr(),
        chain.bias ? rewriter.getStringAttr(*chain.bias) : StringAttr(),
        rewriter.getArrayAttr(maskKinds),
        window ? rewriter.getI64IntegerAttr(*window) : IntegerAttr(),
        /*key_lo_offset=*/nullptr, /*key_hi_offset=*/nullptr,
        /*key_hi_valid_len=*/nullptr, /*mask_needs_test=*/nullptr);
    if (weightsUsed)
      rewriter.replaceOp(chain.softmax, fused.getResults()[1]);
    rewriter.replaceOp(sum, fused.getResults()[0]);
    return success();
  }
};

struct FuseAttentionPass : public AttnFuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseChain>(&getContext());
    // The greedy driver also erases the now-dead chain ops.
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> mlir::attn::createFuseAttentionPass() {
  return std::make_unique<FuseAttentionPass>();
}
