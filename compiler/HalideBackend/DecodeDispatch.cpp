//===- DecodeDispatch.cpp - A decode variant of cache kernels, picked by Lq ----===//
//
// See DecodeDispatch.h. The dispatchers read the call's Lq from a
// halide_buffer_t through the struct types of Halide's own module
// (halide_buffer_t's fields `dimensions` and `dim`, halide_dimension_t's
// `extent`: Halide's stable C ABI).
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/DecodeDispatch.h"
#include "compiler/HalideBackend/BackendError.h"
#include "compiler/HalideBackend/TargetDispatch.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace attnc::halide_backend {

namespace {

const char *const kDecodeSuffix = "__lq1";
const char *const kGeneralSuffix = "__lqn";
// Field numbers of halide_buffer_t and halide_dimension_t (HalideRuntime.h).
const unsigned kBufferDimensions = 5, kBufferDim = 6, kDimensionExtent = 1;

bool hasDecodeVariant(const AttentionConfig &config) {
  const KernelDesc &k = config.kernel;
  return !config.backward && k.cache.any() && !k.packed && k.seqQ == 0 && k.kvHeads > 0 &&
         k.heads / k.kvHeads <= 32;
}

/// Where the call's Lq is: the position of the first buffer of NAME (in its
/// argument order) with a dimension named Lq, and that dimension's Halide
/// index (innermost first).
std::pair<unsigned, unsigned> lqLocation(const AttentionConfig &config) {
  std::vector<size_t> order = config.entryOrder();
  for (unsigned pos = 0; pos < order.size(); ++pos) {
    const ArgSpec &arg = config.arguments[order[pos]];
    for (size_t k = 0; k < arg.shape.size(); ++k)
      if (arg.shape[k].name == "Lq")
        return {pos, (unsigned)(arg.shape.size() - 1 - k)};
  }
  throw BackendError("internal error: kernel '" + config.name + "' has no argument of size Lq");
}

/// NAME<part>(args): calls NAME__lq1<part> when the buffer `buffer(args)`
/// exists, has the dimension and its extent is 1; NAME__lqn<part> otherwise
/// (which reports a null or malformed buffer as before).
void addDispatcher(llvm::Module &module, const std::string &name, const std::string &part,
                   unsigned position, unsigned dim, bool argv) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Function *general = module.getFunction(name + part);
  llvm::Function *decode = module.getFunction(name + kDecodeSuffix + part);
  if (!general || !decode)
    throw BackendError("internal error: kernel '" + name + part + "' lacks its decode variant");
  general->setName(name + kGeneralSuffix + part);
  auto *fn = llvm::Function::Create(general->getFunctionType(), general->getLinkage(),
                                    name + part, module);
  fn->copyAttributesFrom(general);
  // halide_buffer_t *, from the decode variant's parameter (NAME_argv's is void **).
  llvm::Function *entry = module.getFunction(name + kDecodeSuffix);
  if (!entry)
    throw BackendError("internal error: kernel '" + name + "' lacks its decode variant");
  auto *bufferPtr = llvm::cast<llvm::PointerType>(
      entry->getFunctionType()->getParamType(position));
  auto *bufferT = llvm::dyn_cast<llvm::StructType>(bufferPtr->getPointerElementType());
  if (!bufferT || bufferT->isOpaque() || bufferT->getNumElements() <= kBufferDim)
    throw BackendError("internal error: kernel '" + name + "' has no halide_buffer_t layout");
  auto *dimPtr = llvm::cast<llvm::PointerType>(bufferT->getElementType(kBufferDim));
  llvm::Type *dimT = dimPtr->getPointerElementType();

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  // The buffer: argument `position`, or (NAME_argv(void **args)) args[position].
  llvm::Value *buffer;
  if (argv) {
    llvm::Type *i8p = b.getInt8PtrTy();
    llvm::Value *slots = b.CreatePointerCast(fn->getArg(0), i8p->getPointerTo());
    buffer = b.CreateLoad(i8p, b.CreateConstGEP1_32(i8p, slots, position));
  } else {
    buffer = fn->getArg(position);
  }
  buffer = b.CreatePointerCast(buffer, bufferPtr);
  auto *check = llvm::BasicBlock::Create(ctx, "check_lq", fn);
  auto *callDecode = llvm::BasicBlock::Create(ctx, "decode", fn);
  auto *callGeneral = llvm::BasicBlock::Create(ctx, "general", fn);
  auto *readDim = llvm::BasicBlock::Create(ctx, "read_dim", fn);
  b.CreateCondBr(b.CreateIsNull(buffer), callGeneral, check);
  b.SetInsertPoint(check);
  llvm::Value *rank = b.CreateLoad(bufferT->getElementType(kBufferDimensions),
                                   b.CreateStructGEP(bufferT, buffer, kBufferDimensions));
  llvm::Value *dims = b.CreateLoad(dimPtr, b.CreateStructGEP(bufferT, buffer, kBufferDim));
  b.CreateCondBr(b.CreateAnd(b.CreateICmpSGT(rank, b.getInt32(dim)), b.CreateIsNotNull(dims)),
                 readDim, callGeneral);
  b.SetInsertPoint(readDim);
  llvm::Value *extentAt =
      b.CreateStructGEP(dimT, b.CreateConstGEP1_32(dimT, dims, dim), kDimensionExtent);
  llvm::Value *extent = b.CreateLoad(b.getInt32Ty(), extentAt);
  b.CreateCondBr(b.CreateICmpEQ(extent, b.getInt32(1)), callDecode, callGeneral);
  b.SetInsertPoint(callDecode);
  returnCallWithArguments(b, fn, decode);
  b.SetInsertPoint(callGeneral);
  returnCallWithArguments(b, fn, general);
}

} // namespace

std::vector<AttentionConfig> decodeVariants(const std::vector<AttentionConfig> &configs) {
  std::vector<AttentionConfig> variants;
  for (const AttentionConfig &config : configs) {
    if (!hasDecodeVariant(config))
      continue;
    AttentionConfig decode = config;
    decode.name += kDecodeSuffix;
    decode.kernel.seqQ = 1;
    for (ArgSpec &arg : decode.arguments)
      for (ArgDim &dim : arg.shape)
        if (dim.name == "Lq")
          dim.value = 1;
    variants.push_back(std::move(decode));
  }
  return variants;
}

void addDecodeDispatch(llvm::Module &module, const std::vector<AttentionConfig> &configs) {
  for (const AttentionConfig &config : configs) {
    if (!hasDecodeVariant(config))
      continue;
    auto [position, dim] = lqLocation(config);
    addDispatcher(module, config.name, "", position, dim, false);
    addDispatcher(module, config.name, "_argv", position, dim, true);
  }
}

} // namespace attnc::halide_backend
