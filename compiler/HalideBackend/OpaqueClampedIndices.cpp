//===- OpaqueClampedIndices.cpp - clamped indices hidden from LSR ---------===//
//
// See OpaqueClampedIndices.h. A freeze of a value that is not poison is that
// value; one that is poison (an nsw overflow, undefined already) becomes
// some fixed value. Code generation lowers it to nothing.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/OpaqueClampedIndices.h"

#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>

namespace attnc::halide_backend {

namespace {

/// Whether `value` is a select or an integer min/max, or integer arithmetic
/// on one, within `depth` instructions.
bool isMinMaxChain(const llvm::Value *value, int depth) {
  const auto *inst = llvm::dyn_cast<llvm::Instruction>(value);
  if (!inst || depth == 0)
    return false;
  if (llvm::isa<llvm::SelectInst>(inst))
    return true;
  if (const auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(inst)) {
    switch (call->getIntrinsicID()) {
    case llvm::Intrinsic::smax:
    case llvm::Intrinsic::smin:
    case llvm::Intrinsic::umax:
    case llvm::Intrinsic::umin:
      return true;
    default:
      return false;
    }
  }
  if (llvm::isa<llvm::BinaryOperator>(inst))
    return isMinMaxChain(inst->getOperand(0), depth - 1) ||
           isMinMaxChain(inst->getOperand(1), depth - 1);
  return false;
}

} // namespace

void hideClampedIndicesFromLSR(llvm::Module &module) {
  for (llvm::Function &function : module)
    for (llvm::BasicBlock &block : function)
      for (llvm::Instruction &inst : block) {
        auto *extension = llvm::dyn_cast<llvm::SExtInst>(&inst);
        if (!extension || !extension->getType()->isIntegerTy(64) ||
            !extension->getOperand(0)->getType()->isIntegerTy(32) ||
            !isMinMaxChain(extension->getOperand(0), 4))
          continue;
        // Inserted before the extension, so this walk does not meet it.
        auto *opaque = new llvm::FreezeInst(extension->getOperand(0),
                                            extension->getOperand(0)->getName() + ".opaque",
                                            extension);
        extension->setOperand(0, opaque);
      }
}

} // namespace attnc::halide_backend
