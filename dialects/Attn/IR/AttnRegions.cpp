//===- AttnRegions.cpp - Expression regions of the attn dialect -----------===//
//
// Custom score / bias / mask expressions are regions of arith, math and
// select ops over index block arguments (b, h, i, j, g, ip), like a
// linalg.generic body. This file verifies their signature, their ops and
// their yield, verifies attn.read / attn.size, and keeps folded constants
// inside the regions so each expression stays self-contained.
//
//===----------------------------------------------------------------------===//
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/StandardOps/IR/Ops.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FoldInterfaces.h"

using namespace mlir;
using namespace mlir::attn;

static bool isExprOwner(Operation *op) {
  return isa<ScoreOp, BiasOp, MaskOp, AttentionOp>(op);
}

static bool isAllowedInExpr(Operation &op) {
  StringRef ns = op.getDialect() ? op.getDialect()->getNamespace() : "";
  return ns == "arith" || ns == "math" || isa<SelectOp, SizeOp, ReadOp, YieldOp>(op);
}

LogicalResult mlir::attn::verifyExprRegion(Operation *op, Region &region, StringRef what,
                                           bool withDot, Type yieldType) {
  if (!llvm::hasSingleElement(region))
    return op->emitOpError("'") << what << "' region must have exactly one block";
  Block &block = region.front();
  unsigned expected = kNumIndexArgs + (withDot ? 1 : 0);
  const char *signature = withDot ? "(b, h, i, j, g, ip : index, dot : f32)"
                                  : "(b, h, i, j, g, ip : index)";
  if (block.getNumArguments() != expected)
    return op->emitOpError("'") << what << "' region takes " << signature << ", got "
                                << block.getNumArguments() << " arguments";
  for (unsigned a = 0; a < kNumIndexArgs; ++a)
    if (!block.getArgument(a).getType().isIndex())
      return op->emitOpError("'") << what << "' region takes " << signature << ", argument #"
                                  << a << " is " << block.getArgument(a).getType();
  if (withDot && !block.getArgument(ArgDot).getType().isF32())
    return op->emitOpError("'") << what << "' region takes " << signature
                                << ", 'dot' is " << block.getArgument(ArgDot).getType();
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(&block.back());
  if (!yield)
    return op->emitOpError("'") << what << "' region must end with attn.yield";
  if (yield.getValue().getType() != yieldType)
    return op->emitOpError("'") << what << "' region must yield " << yieldType << ", got "
                                << yield.getValue().getType();
  for (Operation &inner : block) {
    if (!isAllowedInExpr(inner))
      return inner.emitOpError("is not allowed in an expression region (allowed: arith, "
                               "math, select, attn.size, attn.read)");
    for (Value operand : inner.getOperands()) {
      if (region.isAncestor(operand.getParentRegion()))
        continue;
      // Tensors come in through the owner's operands (checked by attn.read);
      // folding and CSE may leave constants defined above.
      if (operand.getType().isa<TensorType>() || matchPattern(operand, m_Constant()))
        continue;
      return inner.emitOpError("uses a value defined outside its expression region; "
                               "only constants and the owner's input tensors may be used");
    }
  }
  return success();
}

namespace {
/// Constants folded inside an expression region stay there.
struct AttnFoldInterface : public DialectFoldInterface {
  using DialectFoldInterface::DialectFoldInterface;
  bool shouldMaterializeInto(Region *region) const final {
    return isExprOwner(region->getParentOp());
  }
};
} // namespace

std::unique_ptr<DialectInterface> mlir::attn::makeAttnFoldInterface(AttnDialect *dialect) {
  return std::make_unique<AttnFoldInterface>(dialect);
}

//===- Names in the printed IR ----------------------------------------------===//

static void nameExprArgs(Region &region, OpAsmSetValueNameFn setNameFn) {
  static const char *const names[] = {"b", "h", "i", "j", "g", "ip", "dot"};
  if (region.empty())
    return;
  for (BlockArgument arg : region.front().getArguments())
    if (arg.getArgNumber() < llvm::array_lengthof(names))
      setNameFn(arg, names[arg.getArgNumber()]);
}

void ScoreOp::getAsmBlockArgumentNames(Region &region, OpAsmSetValueNameFn setNameFn) {
  nameExprArgs(region, setNameFn);
}
void BiasOp::getAsmBlockArgumentNames(Region &region, OpAsmSetValueNameFn setNameFn) {
  nameExprArgs(region, setNameFn);
}
void MaskOp::getAsmBlockArgumentNames(Region &region, OpAsmSetValueNameFn setNameFn) {
  nameExprArgs(region, setNameFn);
}
void AttentionOp::getAsmBlockArgumentNames(Region &region, OpAsmSetValueNameFn setNameFn) {
  nameExprArgs(region, setNameFn);
}
void SizeOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult mlir::attn::verifySizeOp(SizeOp op) {
  static const char *const names[] = {"B", "H", "G", "Lq", "Lk", "D", "Dv"};
  for (const char *name : names)
    if (op.getName() == name)
      return success();
  return op.emitOpError("unknown size '") << op.getName()
                                          << "' (expected B, H, G, Lq, Lk, D or Dv)";
}

LogicalResult mlir::attn::verifyReadOp(ReadOp op) {
  Operation *owner = op->getParentOp();
  while (owner && !isExprOwner(owner))
    owner = owner->getParentOp();
  if (!owner)
    return op.emitOpError("must be inside the expression region of an attn op");
  if (!llvm::is_contained(owner->getOperands(), op.getInput()))
    return op.emitOpError("reads a tensor that is not an operand of the enclosing '")
           << owner->getName() << "'";
  auto type = op.getInput().getType().cast<RankedTensorType>();
  if ((int64_t)op.getIndices().size() != type.getRank())
    return op.emitOpError("reads a rank-") << type.getRank() << " tensor with "
                                           << op.getIndices().size() << " indices";
  Type element = type.getElementType();
  Type expected = element.isF32() ? Type(FloatType::getF32(op.getContext()))
                                  : Type(IndexType::get(op.getContext()));
  if (!element.isF32() && !element.isa<IntegerType>())
    return op.emitOpError("reads f32 or integer tensors, not ") << element;
  if (op.getResult().getType() != expected)
    return op.emitOpError("returns f32 for f32 tensors and index for integer tensors, "
                          "expected ")
           << expected;
  return success();
}
