//===- DecodeDispatch.cpp - A decode variant of cache kernels, picked by Lq ----===//
//
// See DecodeDispatch.h. The dispatchers read the call's Lq from a
// halide_buffer_t, whose layout is Halide's stable C ABI: `dimensions` at
// byte 36, `dim` at byte 40, each halide_dimension_t 16 bytes with its
// extent at byte 4.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/DecodeDispatch.h"
#include "compiler/HalideBackend/BackendError.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace attnc::halide_backend {

namespace {

const char *const kDecodeSuffix = "__lq1";
const char *const kGeneralSuffix = "__lqn";

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
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::Type *i8p = b.getInt8PtrTy(), *i32 = b.getInt32Ty();
  std::vector<llvm::Value *> args;
  for (llvm::Argument &a : fn->args())
    args.push_back(&a);
  // The buffer: argument `position`, or (NAME_argv(void **args)) args[position].
  llvm::Value *buffer;
  if (argv) {
    llvm::Value *slots = b.CreatePointerCast(args[0], i8p->getPointerTo());
    buffer = b.CreateLoad(i8p, b.CreateConstGEP1_32(i8p, slots, position));
  } else {
    buffer = b.CreatePointerCast(args.at(position), i8p);
  }
  auto *check = llvm::BasicBlock::Create(ctx, "check_lq", fn);
  auto *callDecode = llvm::BasicBlock::Create(ctx, "decode", fn);
  auto *callGeneral = llvm::BasicBlock::Create(ctx, "general", fn);
  auto *readDim = llvm::BasicBlock::Create(ctx, "read_dim", fn);
  // A `type` at byte `offset` of the struct at `base`.
  auto loadAt = [&](llvm::Type *type, llvm::Value *base, unsigned offset) {
    llvm::Value *at = b.CreateConstGEP1_32(b.getInt8Ty(), base, offset);
    return b.CreateLoad(type, b.CreatePointerCast(at, type->getPointerTo()));
  };
  b.CreateCondBr(b.CreateIsNull(buffer), callGeneral, check);
  b.SetInsertPoint(check);
  llvm::Value *rank = loadAt(i32, buffer, 36), *dims = loadAt(i8p, buffer, 40);
  b.CreateCondBr(b.CreateAnd(b.CreateICmpSGT(rank, b.getInt32(dim)), b.CreateIsNotNull(dims)),
                 readDim, callGeneral);
  b.SetInsertPoint(readDim);
  llvm::Value *extent = loadAt(i32, dims, 16 * dim + 4);
  b.CreateCondBr(b.CreateICmpEQ(extent, b.getInt32(1)), callDecode, callGeneral);
  for (auto [block, target] : {std::pair{callDecode, decode}, std::pair{callGeneral, general}}) {
    b.SetInsertPoint(block);
    // Two Halide modules may name the buffer type differently: cast.
    std::vector<llvm::Value *> cast;
    for (size_t a = 0; a < args.size(); ++a)
      cast.push_back(b.CreatePointerCast(args[a], target->getFunctionType()->getParamType(a)));
    b.CreateRet(b.CreateCall(target->getFunctionType(), target, cast));
  }
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
