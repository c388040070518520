//===- FuseAttention.cpp - attn-fuse-attention -----------------------------===//
//
// Rewrites the chain MLIRGen emits,
//   weighted_sum(softmax(mask*(bias?(softcap?(scale?(score(q, k)))))), v),
// into one attn.attention op, the form the Halide lowering consumes. Custom
// expression regions move onto the fused op; an attn.logsumexp of the masked
// scores becomes its `lse` result, other users of the softmax its `weights`
// result. A chain whose intermediate values have other users, or whose ops
// come in another order, is left alone (attn-verify-lowering reports it).
//
//===----------------------------------------------------------------------===//
#include "PassDetail.h"

#include "dialects/Attn/IR/AttnKinds.h"

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
  BiasOp bias;
  SmallVector<MaskOp> masks; // closest to the softmax first
  SoftmaxOp softmax;
  LogSumExpOp lse; // reads the same masked scores as the softmax, if any
  SmallVector<Operation *> ops; // softmax up to the score, to erase
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
  // The masked scores feed the softmax and at most one logsumexp.
  for (Operation *user : cur.getUsers()) {
    if (user == chain.softmax)
      continue;
    auto lse = dyn_cast<LogSumExpOp>(user);
    if (!lse || chain.lse)
      return failure();
    // The fused op replaces the lse where the weighted sum is: every user
    // of the lse must come after that point.
    for (Operation *lseUser : lse->getUsers())
      if (lseUser->getBlock() != sum->getBlock() || !sum->isBeforeInBlock(lseUser))
        return failure();
    chain.lse = lse;
  }
  // Walk up in reverse chain order: mask*, bias?, softcap?, scale?, score.
  bool first = true;
  while (auto mask = cur.getDefiningOp<MaskOp>()) {
    if (!first && !singleUse(cur))
      return failure();
    first = false;
    chain.ops.push_back(mask);
    chain.masks.push_back(mask);
    cur = mask.getInput();
  }
  if (auto bias = cur.getDefiningOp<BiasOp>()) {
    if (!first && !singleUse(cur))
      return failure();
    first = false;
    chain.bias = bias;
    chain.ops.push_back(bias);
    cur = bias.getInput();
  }
  if (auto cap = cur.getDefiningOp<SoftcapOp>()) {
    if (!first && !singleUse(cur))
      return failure();
    first = false;
    chain.softcap = cap.getCap().convertToDouble();
    chain.ops.push_back(cap);
    cur = cap.getInput();
  }
  if (auto scale = cur.getDefiningOp<ScaleOp>()) {
    if (!first && !singleUse(cur))
      return failure();
    first = false;
    chain.scale = scale.getFactor().convertToDouble();
    chain.ops.push_back(scale);
    cur = scale.getInput();
  }
  chain.score = cur.getDefiningOp<ScoreOp>();
  if (!chain.score || (!first && !singleUse(cur)))
    return failure();
  chain.ops.push_back(chain.score);
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

    // Extra operands: score weights, then mask inputs, then the declared
    // inputs the regions read, each once.
    SmallVector<Value> extra(chain.score.getWeights().begin(), chain.score.getWeights().end());
    auto addExtra = [&](ValueRange values) {
      for (Value v : values)
        if (!llvm::is_contained(extra, v))
          extra.push_back(v);
    };
    SmallVector<Attribute> maskKinds;
    SmallVector<Region *> maskBodies;
    // Widths of a conjunction intersect (the smaller one); a union has at
    // most one term of each (the fused op's verifier checks it).
    Optional<int64_t> window, sink;
    auto narrowest = [](Optional<int64_t> &acc, Optional<uint64_t> w) {
      if (w)
        acc = acc ? std::min(*acc, (int64_t)*w) : (int64_t)*w;
    };
    bool union_ = false;
    int64_t numGroups = 0;
    for (MaskOp mask : chain.masks)
      if (auto groups = mask.getGroups()) {
        union_ = true;
        for (Attribute g : *groups)
          numGroups = std::max(numGroups, g.cast<IntegerAttr>().getInt() + 1);
      }
    // A term without `groups` in a union belongs to every group.
    SmallVector<int64_t> everyGroup;
    for (int64_t g = 0; g < numGroups; ++g)
      everyGroup.push_back(g);
    SmallVector<Attribute> maskGroups;
    for (MaskOp mask : llvm::reverse(chain.masks)) {
      maskKinds.push_back(mask.getKindAttr());
      if (kindInfo(mask.getKind()).isExpression)
        maskBodies.push_back(&mask.getBody());
      else
        addExtra(mask.getInputs());
      narrowest(window, mask.getWindow());
      narrowest(sink, mask.getSink());
      if (!union_)
        continue;
      maskGroups.push_back(mask.getGroups() ? Attribute(*mask.getGroups())
                                            : Attribute(rewriter.getI64ArrayAttr(everyGroup)));
    }
    addExtra(chain.score.getInputs());
    if (chain.bias)
      addExtra(chain.bias.getInputs());
    for (MaskOp mask : llvm::reverse(chain.masks))
      if (kindInfo(mask.getKind()).isExpression)
        addExtra(mask.getInputs());

    SmallVector<Type> resultTypes{sum.getType()};
    bool weightsUsed = !chain.softmax.getResult().hasOneUse();
    if (weightsUsed)
      resultTypes.push_back(chain.softmax.getType());
    if (chain.lse)
      resultTypes.push_back(chain.lse.getType());
    auto fused = rewriter.create<AttentionOp>(
        sum.getLoc(), resultTypes, chain.score.getQuery(),
        chain.score.getKey(), sum.getValue(), extra, chain.score.getKindAttr(),
        chain.score.getHiddenAttr(), rewriter.getF64FloatAttr(chain.scale),
        /*scale_on_query=*/nullptr,
        chain.softcap ? rewriter.getF64FloatAttr(*chain.softcap) : FloatAttr(),
        chain.bias ? chain.bias.getKindAttr() : StringAttr(),
        rewriter.getArrayAttr(maskKinds),
        union_ ? rewriter.getArrayAttr(maskGroups) : ArrayAttr(),
        window ? rewriter.getI64IntegerAttr(*window) : IntegerAttr(),
        sink ? rewriter.getI64IntegerAttr(*sink) : IntegerAttr(),
        /*key_lo_offset=*/nullptr, /*key_hi_offset=*/nullptr,
        /*key_hi_input=*/nullptr, /*mask_needs_test=*/nullptr, (unsigned)maskBodies.size());
    // The expression regions move, unchanged, onto the fused op.
    rewriter.inlineRegionBefore(chain.score.getBody(), fused.getScoreBody(),
                                fused.getScoreBody().end());
    if (chain.bias)
      rewriter.inlineRegionBefore(chain.bias.getBody(), fused.getBiasBody(),
                                  fused.getBiasBody().end());
    for (auto it : llvm::enumerate(maskBodies))
      rewriter.inlineRegionBefore(*it.value(), fused.getMaskBodies()[it.index()],
                                  fused.getMaskBodies()[it.index()].end());
    if (chain.lse)
      rewriter.replaceOp(chain.lse, fused.getResults().back());
    if (weightsUsed)
      rewriter.replaceOp(chain.softmax, fused.getResults()[1]);
    rewriter.replaceOp(sum, fused.getResults()[0]);
    // The chain is dead now; erase it before its emptied regions are seen.
    if (!weightsUsed)
      rewriter.eraseOp(chain.softmax);
    for (Operation *op : chain.ops)
      rewriter.eraseOp(op);
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
