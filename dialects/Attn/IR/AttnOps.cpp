//===- AttnOps.cpp - Verifiers of the attn dialect ------------------------===//
//
// Registers the dialect and checks each op's legality rules: ranks, head
// counts (H divisible by G), agreement of batch, sequence and width
// dimensions, attribute ranges, and which ops carry expression regions
// (AttnRegions.cpp checks the regions themselves). Each rule fails with one
// clear message.
//
//===----------------------------------------------------------------------===//
#include "dialects/Attn/IR/AttnOps.h"
#include "dialects/Attn/IR/AttnKinds.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

#include "dialects/Attn/IR/AttnDialect.cpp.inc"
#include "dialects/Attn/IR/AttnEnums.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Attn/IR/AttnOps.cpp.inc"
      >();
  addInterface(makeAttnFoldInterface(this));
  // A kind added to AttnBase.td without its row in AttentionKinds.h (or the
  // reverse) is a build mistake: stop before any pass reads the tables.
  if (!kindTablesMatch())
    llvm::report_fatal_error("attn dialect: the ScoreKind / MaskKind cases of AttnBase.td and "
                             "the rows of compiler/Kinds/AttentionKinds.h differ");
}

/// Attributes of the dialect on other ops: `attn.backward` asks for a
/// kernel function's gradients, which are recomputed from its `lse`.
LogicalResult AttnDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  if (attr.getName() != "attn.backward")
    return success(); // attn.arguments, attn.layout, ...: read by the lowering
  auto func = dyn_cast<FuncOp>(op);
  if (!func)
    return op->emitError("'attn.backward' belongs on a kernel function");
  if (!attr.getValue().isa<UnitAttr>())
    return op->emitError("'attn.backward' is a unit attribute");
  auto contract = func->getAttrOfType<ArrayAttr>("attn.arguments");
  bool returnsLse = contract && llvm::any_of(contract, [](Attribute entry) {
                      auto dict = entry.dyn_cast<DictionaryAttr>();
                      auto name = dict ? dict.getAs<StringAttr>("name") : StringAttr();
                      auto role = dict ? dict.getAs<StringAttr>("role") : StringAttr();
                      return name && role && name.getValue() == "lse" &&
                             role.getValue() == "output";
                    });
  if (!returnsLse)
    return op->emitError("'attn.backward' needs the kernel to return 'lse' (an output of "
                         "'attn.arguments'): its gradients are recomputed from it");
  return success();
}

/// True when two dimension sizes may be equal (either is dynamic).
static bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static int64_t dim(Value v, unsigned i) {
  return v.getType().cast<RankedTensorType>().getDimSize(i);
}

/// Checks that query heads `h` can be grouped over key/value heads `g`.
static LogicalResult verifyHeads(Operation *op, int64_t h, int64_t g) {
  if (ShapedType::isDynamic(h) || ShapedType::isDynamic(g))
    return success();
  if (g < 1 || h % g != 0)
    return op->emitOpError() << "query heads (" << h
                             << ") must be a multiple of key/value heads (" << g << ")";
  return success();
}

/// Checks the dimensions a weighted sum or an attention shares between
/// probabilities/queries [B, H, Lq, *] and values [B, G, Lk, Dv].
static LogicalResult verifyQueryKeyValue(Operation *op, Value q, Value k, Value v) {
  if (!compatible(dim(q, 0), dim(k, 0)) || !compatible(dim(k, 0), dim(v, 0)))
    return op->emitOpError("batch sizes of query, key and value differ");
  if (failed(verifyHeads(op, dim(q, 1), dim(k, 1))))
    return failure();
  if (!compatible(dim(k, 1), dim(v, 1)))
    return op->emitOpError("key and value have different head counts");
  if (!compatible(dim(k, 2), dim(v, 2)))
    return op->emitOpError("key and value have different sequence lengths");
  return success();
}

/// A region is present exactly when the kind is "custom", and then verifies.
static LogicalResult verifyCustomRegion(Operation *op, Region &region, bool custom,
                                        StringRef what, bool withDot, Type yieldType) {
  if (custom && region.empty())
    return op->emitOpError("a custom ") << what << " needs a '" << what << "' region";
  if (!custom && !region.empty())
    return op->emitOpError("only a custom ") << what << " has a '" << what << "' region";
  if (custom)
    return verifyExprRegion(op, region, what, withDot, yieldType);
  return success();
}

static Type f32(Operation *op) { return FloatType::getF32(op->getContext()); }
static Type i1(Operation *op) { return IntegerType::get(op->getContext(), 1); }

static LogicalResult verify(ScoreOp op) {
  const attnc::ScoreKindInfo &kind = kindInfo(op.getKind());
  if (failed(verifyCustomRegion(op, op.getBody(), kind.isExpression, "score",
                                /*withDot=*/true, f32(op))))
    return failure();
  if (!kind.isExpression && !op.getInputs().empty())
    return op.emitOpError("only a custom score reads declared inputs");
  Value q = op.getQuery(), k = op.getKey();
  if (!compatible(dim(q, 0), dim(k, 0)))
    return op.emitOpError("batch sizes of query and key differ");
  if (failed(verifyHeads(op, dim(q, 1), dim(k, 1))))
    return failure();
  if (!kind.keyWidthMayDiffer && !compatible(dim(q, 3), dim(k, 3)))
    return op.emitOpError("query width ")
           << dim(q, 3) << " differs from key width " << dim(k, 3)
           << "; only the additive score allows that";
  if (kind.takesHidden != op.getHidden().hasValue())
    return op.emitOpError("'hidden' is required by, and only by, the additive score");
  size_t expectedWeights = kind.numWeights;
  if (op.getWeights().size() != expectedWeights)
    return op.emitOpError("score '")
           << stringifyScoreKind(op.getKind()) << "' takes " << expectedWeights
           << " weight tensors, got " << op.getWeights().size();
  Value s = op.getScores();
  if (!compatible(dim(s, 0), dim(q, 0)) || !compatible(dim(s, 1), dim(q, 1)) ||
      !compatible(dim(s, 2), dim(q, 2)) || !compatible(dim(s, 3), dim(k, 2)))
    return op.emitOpError("result must be [B, H, Lq, Lk] of the query and key");
  return success();
}

static LogicalResult verify(ScaleOp op) {
  if (!std::isfinite(op.getFactor().convertToDouble()))
    return op.emitOpError("scale factor must be finite");
  return success();
}

static LogicalResult verify(SoftcapOp op) {
  double cap = op.getCap().convertToDouble();
  if (!(cap > 0) || !std::isfinite(cap))
    return op.emitOpError("softcap must be a positive finite constant");
  return success();
}

static LogicalResult verify(BiasOp op) {
  bool custom = op.getKind() == BiasKind::custom;
  if (!custom && !op.getInputs().empty())
    return op.emitOpError("only a custom bias reads declared inputs");
  return verifyCustomRegion(op, op.getBody(), custom, "bias", /*withDot=*/false, f32(op));
}

static LogicalResult verify(MaskOp op) {
  const attnc::MaskKindInfo &kind = kindInfo(op.getKind());
  if (failed(verifyCustomRegion(op, op.getBody(), kind.isExpression, "mask",
                                /*withDot=*/false, i1(op))))
    return failure();
  size_t expectedInputs = kind.hasInput ? 1 : 0;
  if (!kind.isExpression && op.getInputs().size() != expectedInputs)
    return op.emitOpError("mask '") << stringifyMaskKind(op.getKind()) << "' takes "
                                     << expectedInputs << " input tensors, got "
                                     << op.getInputs().size();
  for (const char *attr : {"window", "sink"}) {
    auto width = op->getAttrOfType<IntegerAttr>(attr);
    bool takes = kind.widthAttr && StringRef(kind.widthAttr) == attr;
    if (takes != (bool)width)
      return op.emitOpError("'") << attr << "' is required by, and only by, the " << attr
                                 << " mask";
    if (width && width.getInt() < 1)
      return op.emitOpError(attr) << " must be at least 1, got " << width.getInt();
  }
  if (auto groups = op.getGroups()) {
    if (groups->empty())
      return op.emitOpError("'groups' must name at least one group");
    for (Attribute g : *groups)
      if (g.cast<IntegerAttr>().getInt() < 0 ||
          g.cast<IntegerAttr>().getInt() >= (int64_t)attnc::kMaxMaskGroups)
        return op.emitOpError("group numbers must be in [0, ")
               << attnc::kMaxMaskGroups << "), got " << g.cast<IntegerAttr>().getInt();
  }
  return success();
}

/// `mask_groups` of attn.attention: one non-empty list of group numbers per
/// term, every group in [0, n) holding some term; a union has at most one
/// term of each width kind (window, sink), whose width the op carries.
static LogicalResult verifyMaskGroups(AttentionOp op, ArrayRef<MaskKind> kinds) {
  if (op.getWindow().hasValue() != llvm::is_contained(kinds, MaskKind::window) ||
      op.getSink().hasValue() != llvm::is_contained(kinds, MaskKind::sink))
    return op.emitOpError("'window' and 'sink' are required by, and only by, those masks");
  auto groups = op.getMaskGroups();
  if (!groups)
    return success();
  if (groups->size() != kinds.size())
    return op.emitOpError("has ") << kinds.size() << " mask terms but " << groups->size()
                                  << " entries in 'mask_groups'";
  if (llvm::count(kinds, MaskKind::window) > 1 || llvm::count(kinds, MaskKind::sink) > 1)
    return op.emitOpError("a union of masks has at most one window and one sink term");
  llvm::SmallBitVector used(attnc::kMaxMaskGroups);
  int64_t numGroups = 0;
  for (Attribute entry : *groups) {
    auto list = entry.dyn_cast<ArrayAttr>();
    if (!list || list.empty())
      return op.emitOpError("each 'mask_groups' entry must be a non-empty array of groups");
    for (Attribute g : list) {
      auto n = g.dyn_cast<IntegerAttr>();
      if (!n || n.getInt() < 0 || n.getInt() >= (int64_t)attnc::kMaxMaskGroups)
        return op.emitOpError("group numbers must be integers in [0, ")
               << attnc::kMaxMaskGroups << ")";
      used.set(n.getInt());
      numGroups = std::max(numGroups, n.getInt() + 1);
    }
  }
  if ((int64_t)used.count() != numGroups)
    return op.emitOpError("mask groups must be numbered 0 to n-1 without gaps");
  return success();
}

static LogicalResult verify(LogSumExpOp op) {
  Value s = op.getInput(), r = op.getResult();
  for (unsigned d = 0; d < 3; ++d)
    if (!compatible(dim(s, d), dim(r, d)))
      return op.emitOpError("result must be [B, H, Lq] of the scores");
  return success();
}

static LogicalResult verify(WeightedSumOp op) {
  if (failed(verifyQueryKeyValue(op, op.getProbs(), op.getValue(), op.getValue())))
    return failure();
  if (!compatible(dim(op.getProbs(), 3), dim(op.getValue(), 2)))
    return op.emitOpError("probabilities cover ")
           << dim(op.getProbs(), 3) << " keys but value has " << dim(op.getValue(), 2);
  Value r = op.getResult();
  if (!compatible(dim(r, 3), dim(op.getValue(), 3)) ||
      !compatible(dim(r, 2), dim(op.getProbs(), 2)) ||
      !compatible(dim(r, 1), dim(op.getProbs(), 1)))
    return op.emitOpError("result must be [B, H, Lq, Dv]");
  return success();
}

static LogicalResult verify(AttentionOp op) {
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  if (failed(verifyQueryKeyValue(op, q, k, v)))
    return failure();
  if (!kindInfo(op.getScore()).keyWidthMayDiffer && !compatible(dim(q, 3), dim(k, 3)))
    return op.emitOpError("query width ")
           << dim(q, 3) << " differs from key width " << dim(k, 3)
           << "; only the additive score allows that";
  unsigned customMasks = 0;
  SmallVector<MaskKind> kinds;
  for (Attribute mask : op.getMasks()) {
    auto kind = symbolizeMaskKind(mask.cast<StringAttr>().getValue());
    if (!kind)
      return op.emitOpError("unknown mask kind '") << mask.cast<StringAttr>().getValue() << "'";
    customMasks += kindInfo(*kind).isExpression;
    kinds.push_back(*kind);
  }
  if (failed(verifyMaskGroups(op, kinds)))
    return failure();
  if (op.getMaskBodies().size() != customMasks)
    return op.emitOpError("has ") << customMasks << " custom mask terms but "
                                  << op.getMaskBodies().size() << " mask regions";
  for (Region &body : op.getMaskBodies())
    if (failed(verifyExprRegion(op, body, "mask", /*withDot=*/false, i1(op))))
      return failure();
  if (failed(verifyCustomRegion(op, op.getScoreBody(), kindInfo(op.getScore()).isExpression,
                                "score",
                                /*withDot=*/true, f32(op))) ||
      failed(verifyCustomRegion(op, op.getBiasBody(), op.getBias() == BiasKind::custom,
                                "bias", /*withDot=*/false, f32(op))))
    return failure();
  if (auto input = op.getKeyHiInput())
    if (*input >= op.getExtra().size())
      return op.emitOpError("key_hi_input ") << *input << " is not an extra operand";

  if (op.getResults().empty() || op.getResults().size() > 3)
    return op.emitOpError("expects 1 to 3 results (out, weights, lse), got ")
           << op.getResults().size();
  Value out = op.getResults()[0];
  auto outType = out.getType().dyn_cast<RankedTensorType>();
  if (!outType || outType.getRank() != 4 || !compatible(dim(out, 3), dim(v, 3)))
    return op.emitOpError("first result must be out : [B, H, Lq, Dv]");
  // Then weights (rank 4) and lse (rank 3), each at most once, in that order.
  unsigned lastRank = 5;
  for (Value extraResult : op.getResults().drop_front()) {
    auto type = extraResult.getType().cast<RankedTensorType>();
    bool weights = type.getRank() == 4, lse = type.getRank() == 3;
    if ((!weights && !lse) || type.getRank() >= lastRank)
      return op.emitOpError("results after out must be weights [B, H, Lq, Lk] then "
                            "lse [B, H, Lq], each at most once");
    lastRank = type.getRank();
    for (unsigned d = 0; d < 3; ++d)
      if (!compatible(dim(extraResult, d), dim(out, d)))
        return op.emitOpError(weights ? "weights" : "lse")
               << " result must share [B, H, Lq] with out";
    if (weights && !compatible(dim(extraResult, 3), dim(k, 2)))
      return op.emitOpError("weights result must be [B, H, Lq, Lk]");
  }
  return success();
}

//===- Projections ---------------------------------------------------------===//

static int64_t rank(Value v) { return v.getType().cast<RankedTensorType>().getRank(); }

static LogicalResult verify(ProjectOp op) {
  Value x = op.getInput(), w = op.getWeight(), r = op.getResult();
  // w : [N, M], nn.Linear's [out_features, in_features]; x [B, L, M] or tokens [T, M].
  unsigned width = rank(x) - 1;
  if (!compatible(dim(x, width), dim(w, 1)))
    return op.emitOpError("input width ") << dim(x, width)
                                          << " differs from the weight's columns " << dim(w, 1)
                                          << " (weights are [out, in])";
  if (op.getBias() && !compatible(dim(op.getBias(), 0), dim(w, 0)))
    return op.emitOpError("bias width ") << dim(op.getBias(), 0)
                                         << " differs from the weight's rows " << dim(w, 0);
  bool rowsKept = rank(r) == rank(x);
  for (unsigned k = 0; rowsKept && k < width; ++k)
    rowsKept = compatible(dim(r, k), dim(x, k));
  if (!rowsKept || !compatible(dim(r, width), dim(w, 0)))
    return op.emitOpError(width == 2
                              ? "result must be [B, L, N] for input [B, L, M] and weight [N, M]"
                              : "result must be [T, N] for tokens [T, M] and weight [N, M]");
  return success();
}

/// split_heads / merge_heads: `rows` [B, L, heads * W] or tokens [T, heads * W]
/// against `heads` [B, heads, L, W] or [T, heads, W] (the heads are dimension
/// 1 of either); `rowsRole` names `rows` in messages ("input", "result").
static LogicalResult verifyHeads(Operation *op, Value rows, Value heads, const char *form,
                                 const char *rowsRole) {
  bool tokens = rank(rows) == 2;
  if (rank(heads) != rank(rows) + 1)
    return op->emitOpError(form);
  bool sameRows = compatible(dim(heads, 0), dim(rows, 0)) &&
                  (tokens || compatible(dim(heads, 2), dim(rows, 1)));
  if (!sameRows)
    return op->emitOpError(form);
  int64_t n = dim(heads, 1), w = dim(heads, rank(heads) - 1), total = dim(rows, rank(rows) - 1);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(w) && !ShapedType::isDynamic(total) &&
      total != n * w)
    return op->emitOpError(rowsRole) << " width " << total << " is not heads (" << n
                                     << ") x head width (" << w << ")";
  return success();
}

static LogicalResult verify(SplitHeadsOp op) {
  int64_t heads = op.getHeads();
  if (heads < 1)
    return op.emitOpError("heads must be at least 1, got ") << heads;
  if (!compatible(dim(op.getResult(), 1), heads))
    return op.emitOpError("result has ") << dim(op.getResult(), 1) << " heads, expected "
                                         << heads;
  return verifyHeads(op, op.getInput(), op.getResult(),
                     rank(op.getInput()) == 3
                         ? "result must be [B, heads, L, W] for input [B, L, heads * W]"
                         : "result must be [T, heads, W] for tokens [T, heads * W]",
                     "input");
}

static LogicalResult verify(MergeHeadsOp op) {
  return verifyHeads(op, op.getResult(), op.getInput(),
                     rank(op.getInput()) == 4
                         ? "result must be [B, L, H * W] for input [B, H, L, W]"
                         : "result must be [T, H * W] for tokens [T, H, W]",
                     "result");
}

//===- Packed variable-length batches --------------------------------------===//

static LogicalResult verifyBatchOf(Operation *op, Value cuSeqlens, int64_t batch) {
  int64_t entries = dim(cuSeqlens, 0);
  if (!ShapedType::isDynamic(entries) && !ShapedType::isDynamic(batch) && entries != batch + 1)
    return op->emitOpError("has ") << entries << " cu_seqlens entries for " << batch
                                   << " sequences; expected B + 1";
  return success();
}

static LogicalResult verify(SequencesOp op) {
  Value x = op.getInput(), r = op.getResult();
  if (!compatible(dim(r, 1), dim(x, 1)) || !compatible(dim(r, 3), dim(x, 2)))
    return op.emitOpError("result must be [B, heads, L, W] for tokens [T, heads, W]");
  return verifyBatchOf(op, op.getCuSeqlens(), dim(r, 0));
}

static LogicalResult verify(PackOp op) {
  auto in = op.getInput().getType().cast<RankedTensorType>();
  auto out = op.getResult().getType().cast<RankedTensorType>();
  Value x = op.getInput(), r = op.getResult();
  if (in.getRank() == 4) {
    if (out.getRank() != 3 || !compatible(dim(r, 1), dim(x, 1)) ||
        !compatible(dim(r, 2), dim(x, 3)))
      return op.emitOpError("result must be [T, H, W] for rows [B, H, L, W]");
  } else if (in.getRank() == 3) {
    if (out.getRank() != 2 || !compatible(dim(r, 0), dim(x, 1)))
      return op.emitOpError("result must be [H, T] for rows [B, H, L]");
  } else {
    return op.emitOpError("packs rows [B, H, L, W] or [B, H, L], got rank ") << in.getRank();
  }
  if (!in.getElementType().isF32() || !out.getElementType().isF32())
    return op.emitOpError("packs f32 rows");
  return verifyBatchOf(op, op.getCuSeqlens(), dim(x, 0));
}

//===- KV caches -------------------------------------------------------------===//

static LogicalResult verify(CacheOp op) {
  auto cache = op.getCache().getType().cast<RankedTensorType>();
  Type e = cache.getElementType();
  if (cache.getRank() != 4 || !(e.isF32() || e.isF16() || e.isBF16()))
    return op.emitOpError("cache must be a rank-4 tensor of f32, f16 or bf16, got ") << cache;
  Value c = op.getCache(), n = op.getRows(), r = op.getResult();
  if (!compatible(dim(c, 1), dim(n, 1)) || !compatible(dim(c, 3), dim(n, 3)) ||
      !compatible(dim(r, 1), dim(n, 1)) || !compatible(dim(r, 3), dim(n, 3)) ||
      !compatible(dim(r, 0), dim(n, 0)))
    return op.emitOpError("cache, new rows and result must agree in kv heads and width");
  if (!compatible(dim(op.getCacheLen(), 0), dim(n, 0)))
    return op.emitOpError("cache_len must hold one length per sequence of the new rows");
  bool paged = op.getKind() == CacheKind::paged;
  if (paged != (bool)op.getBlockTable() || paged != op.getBlock().hasValue())
    return op.emitOpError(paged ? "paged caches need a block_table operand and a block size"
                                : "contiguous caches take no block_table or block size");
  if (paged) {
    int64_t block = (int64_t)*op.getBlock();
    if (block < 1)
      return op.emitOpError("block must be at least 1, got ") << block;
    if (!compatible(dim(c, 2), block))
      return op.emitOpError("cache blocks hold ") << dim(c, 2) << " rows, not the block size "
                                                   << block;
    if (!compatible(dim(op.getBlockTable(), 0), dim(n, 0)))
      return op.emitOpError("block_table must hold one row per sequence of the new rows");
  } else if (!compatible(dim(c, 0), dim(n, 0))) {
    return op.emitOpError("a contiguous cache holds one row per sequence of the new rows");
  }
  return success();
}

//===- Rotary position embeddings ------------------------------------------===//

static LogicalResult verify(RotaryOp op) {
  double base = op.getBase().convertToDouble();
  if (!(base > 1.0) || !std::isfinite(base))
    return op.emitOpError("base must be a finite number greater than 1, got ") << base;
  int64_t dims = op.getDims(), width = dim(op.getInput(), 3);
  if (dims < 2 || dims % 2 != 0)
    return op.emitOpError("dims must be even and at least 2, got ") << dims;
  if (!ShapedType::isDynamic(width) && dims > width)
    return op.emitOpError("rotates ") << dims << " channels of rows " << width << " wide";
  return success();
}

static LogicalResult verify(SizeOp op) { return verifySizeOp(op); }
static LogicalResult verify(ReadOp op) { return verifyReadOp(op); }

#define GET_OP_CLASSES
#include "dialects/Attn/IR/AttnOps.cpp.inc"
