//===- HalfConversions.cpp - f16 loads widened by F16C --------------------===//
#include "compiler/HalideBackend/HalfConversions.h"
#include "compiler/HalideBackend/TargetDispatch.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/ValueHandle.h>
#include <llvm/Transforms/Utils/Local.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace attnc::halide_backend {

namespace {

constexpr const char *kMarker = "attnc_f16_bits_to_f32";

/// f32 of the f16 bits in the low half of `bits` (i32 or <N x i32>).
llvm::Value *convert(llvm::IRBuilder<> &b, llvm::Value *bits, bool f16c) {
  llvm::Type *i32Type = bits->getType();
  llvm::Type *floatType = b.getFloatTy(), *halfType = b.getHalfTy(), *i16Type = b.getInt16Ty();
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(i32Type)) {
    floatType = llvm::FixedVectorType::get(floatType, vt->getNumElements());
    halfType = llvm::FixedVectorType::get(halfType, vt->getNumElements());
    i16Type = llvm::FixedVectorType::get(i16Type, vt->getNumElements());
  }
  if (f16c)
    return b.CreateFPExt(b.CreateBitCast(b.CreateTrunc(bits, i16Type), halfType), floatType);
  // The integer form (AttentionAlgorithm's widening before F16C): exponent
  // and mantissa shifted into place are 2^-112 times the value, subnormals
  // included; infinities and NaNs keep an all-ones exponent.
  auto constant = [&](uint32_t v) { return llvm::ConstantInt::get(i32Type, v); };
  llvm::Value *magnitude = b.CreateShl(b.CreateAnd(bits, constant(0x7fff)), constant(13));
  llvm::Value *finite = b.CreateFMul(b.CreateBitCast(magnitude, floatType),
                                     llvm::ConstantFP::get(floatType, 0x1p112));
  llvm::Value *special = b.CreateBitCast(b.CreateOr(magnitude, constant(0x7f800000)), floatType);
  llvm::Value *value = b.CreateSelect(b.CreateICmpUGE(magnitude, constant(0x7c00u << 13)),
                                      special, finite);
  llvm::Value *sign = b.CreateShl(b.CreateAnd(bits, constant(0x8000)), constant(16));
  return b.CreateBitCast(b.CreateOr(b.CreateBitCast(value, i32Type), sign), floatType);
}

llvm::CallInst *markerCall(llvm::Value *v, llvm::Function *marker) {
  auto *call = llvm::dyn_cast<llvm::CallInst>(v);
  return call && call->getCalledFunction() == marker ? call : nullptr;
}

/// The vector (<N x i32> Z or <N x i16> V) of which the marker call's
/// argument is lane `lane`, `extractelement Z, lane` or InstCombine's
/// `zext (extractelement V, lane)`, if it is `source` or `source` is still
/// unset (then set); null otherwise.
llvm::Value *sourceLane(llvm::CallInst *call, uint64_t lane, llvm::Value *&source) {
  llvm::Value *arg = call->getArgOperand(0);
  llvm::Value *vector = nullptr;
  llvm::Value *index = nullptr;
  if (auto *extract = llvm::dyn_cast<llvm::ExtractElementInst>(arg)) {
    vector = extract->getVectorOperand();
    index = extract->getIndexOperand();
  } else if (auto *zext = llvm::dyn_cast<llvm::ZExtInst>(arg)) {
    if (auto *extract = llvm::dyn_cast<llvm::ExtractElementInst>(zext->getOperand(0))) {
      vector = extract->getVectorOperand();
      index = extract->getIndexOperand();
    }
  }
  auto *constantIndex = llvm::dyn_cast_or_null<llvm::ConstantInt>(index);
  if (!constantIndex || constantIndex->getZExtValue() != lane)
    return nullptr;
  if (source && source != vector)
    return nullptr;
  source = vector;
  return vector;
}

/// Rewrites the insertelement chain ending at `last` (every lane a marker
/// call on the same lane of one vector) into one vector conversion.
bool regroup(llvm::InsertElementInst *last, llvm::Function *marker, bool f16c) {
  auto *type = llvm::dyn_cast<llvm::FixedVectorType>(last->getType());
  if (!type)
    return false;
  const unsigned lanes = type->getNumElements();
  std::map<uint64_t, llvm::CallInst *> calls;
  llvm::Value *cur = last;
  while (auto *insert = llvm::dyn_cast<llvm::InsertElementInst>(cur)) {
    llvm::CallInst *call = markerCall(insert->getOperand(1), marker);
    auto *index = llvm::dyn_cast<llvm::ConstantInt>(insert->getOperand(2));
    if (!call || !index || !calls.emplace(index->getZExtValue(), call).second)
      return false;
    cur = insert->getOperand(0);
  }
  if (!llvm::isa<llvm::UndefValue>(cur) || calls.size() != lanes)
    return false;
  llvm::Value *source = nullptr;
  for (const auto &[lane, call] : calls)
    if (lane >= lanes || !sourceLane(call, lane, source))
      return false;
  auto *sourceType = llvm::dyn_cast<llvm::FixedVectorType>(source->getType());
  if (!sourceType || sourceType->getNumElements() != lanes)
    return false;
  llvm::IRBuilder<> b(last);
  llvm::Value *bits = source;
  if (sourceType->getElementType()->isIntegerTy(16))
    bits = b.CreateZExt(source, llvm::FixedVectorType::get(b.getInt32Ty(), lanes));
  else if (!sourceType->getElementType()->isIntegerTy(32))
    return false;
  last->replaceAllUsesWith(convert(b, bits, f16c));
  llvm::RecursivelyDeleteTriviallyDeadInstructions(last);
  return true;
}

} // namespace

Halide::Expr halfBitsToFloat(const Halide::Expr &bits) {
  return Halide::Internal::Call::make(Halide::Float(32, bits.type().lanes()), kMarker, {bits},
                                      Halide::Internal::Call::PureExtern);
}

void lowerHalfConversions(llvm::Module &module, const Halide::Target &target) {
  llvm::Function *marker = module.getFunction(kMarker);
  if (!marker)
    return;
  const std::vector<std::string> cpu = requiredCpuFeatures(target);
  const bool f16c = std::find(cpu.begin(), cpu.end(), "f16c") != cpu.end();
  // Chain ends: inserts of a marker call that no insert of a marker call
  // continues.
  // (Value handles: regrouping one chain deletes its instructions.)
  std::vector<llvm::WeakTrackingVH> ends, calls;
  for (llvm::User *user : marker->users()) {
    auto *call = llvm::dyn_cast<llvm::CallInst>(user);
    if (!call || call->getCalledFunction() != marker)
      continue;
    calls.push_back(call);
    for (llvm::User *callUser : call->users()) {
      auto *insert = llvm::dyn_cast<llvm::InsertElementInst>(callUser);
      if (!insert || insert->getOperand(1) != call)
        continue;
      bool continued = false;
      for (llvm::User *next : insert->users()) {
        auto *nextInsert = llvm::dyn_cast<llvm::InsertElementInst>(next);
        continued |= nextInsert && nextInsert->getOperand(0) == insert &&
                     markerCall(nextInsert->getOperand(1), marker);
      }
      if (!continued)
        ends.push_back(insert);
    }
  }
  for (llvm::WeakTrackingVH &end : ends)
    if (auto *last = llvm::cast_or_null<llvm::InsertElementInst>(end))
      regroup(last, marker, f16c);
  // What is left (the marker's lanes used one by one): converted in place.
  for (llvm::WeakTrackingVH &handle : calls) {
    auto *call = llvm::cast_or_null<llvm::CallInst>(handle);
    if (!call)
      continue;
    if (!call->use_empty()) {
      llvm::IRBuilder<> b(call);
      call->replaceAllUsesWith(convert(b, call->getArgOperand(0), f16c));
    }
    llvm::Value *arg = call->getArgOperand(0);
    call->eraseFromParent();
    llvm::RecursivelyDeleteTriviallyDeadInstructions(arg);
  }
  if (marker->use_empty())
    marker->eraseFromParent();
}

} // namespace attnc::halide_backend
