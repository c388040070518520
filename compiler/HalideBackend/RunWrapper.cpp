//===- RunWrapper.cpp - NAME_run and the runtime's metadata globals ------===//
//
// Builds NAME_run with IRBuilder: check every dynamic size (1 <= n <= INT32_MAX)
// and pointer, derive each argument's extents and dense strides from the
// logical shape (checking they fit int32), fill halide_buffer_t +
// halide_dimension_t on the stack (innermost dimension first), call NAME.
// The buffer struct is declared here with halide_buffer_t's field list, so
// the target's data layout gives the right offsets on any target.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/RunWrapper.h"
#include "compiler/HalideBackend/BackendError.h"

#include <llvm/ADT/Triple.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <climits>
#include <map>

namespace attnc::halide_backend {

namespace {

struct HalideTypeCode {
  uint8_t code, bits;
};

HalideTypeCode typeCode(ElemType type) {
  return {info(type).halideCode, uint8_t(info(type).bytes * 8)};
}

llvm::Type *elemType(llvm::LLVMContext &ctx, ElemType type) {
  switch (type) {
  case ElemType::F32:
    return llvm::Type::getFloatTy(ctx);
  case ElemType::I32:
    return llvm::Type::getInt32Ty(ctx);
  case ElemType::U8:
    return llvm::Type::getInt8Ty(ctx);
  case ElemType::F16:
  case ElemType::BF16:
    return llvm::Type::getInt16Ty(ctx);
  }
  return llvm::Type::getFloatTy(ctx);
}

llvm::Constant *stringPointer(llvm::Module &module, const std::string &text,
                              const std::string &name, bool external) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Constant *data = llvm::ConstantDataArray::getString(ctx, text, true);
  auto *gv = new llvm::GlobalVariable(
      module, data->getType(), true,
      external ? llvm::GlobalValue::ExternalLinkage : llvm::GlobalValue::PrivateLinkage, data,
      name);
  llvm::Constant *zero = llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 0);
  llvm::Constant *idx[] = {zero, zero};
  return llvm::ConstantExpr::getInBoundsGetElementPtr(data->getType(), gv, idx);
}

class RunBuilder {
public:
  RunBuilder(llvm::Module &module, const AttentionConfig &config)
      : module(module), ctx(module.getContext()), config(config), b(ctx) {
    i8 = llvm::Type::getInt8Ty(ctx);
    i16 = llvm::Type::getInt16Ty(ctx);
    i32 = llvm::Type::getInt32Ty(ctx);
    i64 = llvm::Type::getInt64Ty(ctx);
    i8p = i8->getPointerTo();
    typeT = llvm::StructType::get(ctx, {i8, i8, i16});
    dimT = llvm::StructType::get(ctx, {i32, i32, i32, i32});
    bufT = llvm::StructType::get(ctx, {i64, i8p, i8p, i64, typeT, i32,
                                       dimT->getPointerTo(), i8p});
  }

  void build() {
    llvm::Function *kernel = module.getFunction(config.name);
    if (!kernel)
      throw BackendError("kernel '" + config.name + "' is missing from the LLVM module");
    if (kernel->arg_size() != config.arguments.size())
      throw BackendError("kernel '" + config.name + "' has " +
                         std::to_string(kernel->arg_size()) + " buffer arguments, expected " +
                         std::to_string(config.arguments.size()));

    std::vector<llvm::Type *> params;
    for (const ArgSpec &arg : config.arguments)
      params.push_back(elemType(ctx, arg.type)->getPointerTo());
    std::vector<std::string> sizeNames = config.kernel.dynamicSizeNames();
    for (size_t k = 0; k < sizeNames.size(); ++k)
      params.push_back(i64);
    auto *fnType = llvm::FunctionType::get(i32, params, false);
    llvm::Function *run = llvm::Function::Create(fnType, llvm::GlobalValue::ExternalLinkage,
                                                 config.name + "_run", module);
    run->addFnAttr(llvm::Attribute::NoUnwind);

    auto *entry = llvm::BasicBlock::Create(ctx, "entry", run);
    auto *badSize = llvm::BasicBlock::Create(ctx, "bad_size", run);
    auto *checkPtrs = llvm::BasicBlock::Create(ctx, "check_pointers", run);
    auto *nullPtr = llvm::BasicBlock::Create(ctx, "null_pointer", run);
    auto *call = llvm::BasicBlock::Create(ctx, "call", run);
    b.SetInsertPoint(entry);

    // Sizes: fixed ones are constants, dynamic ones are the trailing args.
    std::vector<llvm::Argument *> args;
    for (llvm::Argument &a : run->args())
      args.push_back(&a);
    for (size_t k = 0; k < config.arguments.size(); ++k)
      args[k]->setName(config.arguments[k].name);
    KernelSizes table = config.kernel.sizes();
    llvm::Value *ok = b.getTrue();
    for (size_t k = 0; k < sizeNames.size(); ++k) {
      llvm::Value *v = args[config.arguments.size() + k];
      v->setName(sizeNames[k]);
      sizes[sizeNames[k]] = v;
      ok = b.CreateAnd(ok, inRange(v));
    }
    if (!sizes.count("Lk") && !table.Lk && sizes.count("Lq"))
      sizes["Lk"] = sizes["Lq"]; // seq_k = seq_q, or self-attention
    if (config.kernel.packed) { // cu_seqlens_q / _k hold B + 1 offsets
      sizes["B+1"] = b.CreateAdd(sizes.at("B"), b.getInt64(1));
      if (!sizes.count("Tk"))
        sizes["Tk"] = sizes.at("Tq"); // self-attention: the keys are the query tokens
    }

    // Extents and dense strides of every argument, innermost first.
    std::vector<std::vector<std::pair<llvm::Value *, llvm::Value *>>> shapes;
    for (const ArgSpec &arg : config.arguments) {
      std::vector<std::pair<llvm::Value *, llvm::Value *>> dims;
      llvm::Value *stride = b.getInt64(1);
      for (size_t k = arg.shape.size(); k-- > 0;) {
        llvm::Value *extent = extentOf(arg, arg.shape[k]);
        dims.push_back({extent, stride});
        ok = b.CreateAnd(ok, inRange(stride));
        stride = b.CreateMul(stride, extent);
      }
      ok = b.CreateAnd(ok, inRange(stride)); // total elements: Halide's 2^31 - 1 limit
      shapes.push_back(dims);
    }
    b.CreateCondBr(ok, checkPtrs, badSize);

    b.SetInsertPoint(badSize);
    b.CreateRet(b.getInt32(kRunBadSize));

    b.SetInsertPoint(checkPtrs);
    llvm::Value *nonNull = b.getTrue();
    for (size_t k = 0; k < config.arguments.size(); ++k)
      nonNull = b.CreateAnd(nonNull, b.CreateIsNotNull(args[k]));
    b.CreateCondBr(nonNull, call, nullPtr);

    b.SetInsertPoint(nullPtr);
    b.CreateRet(b.getInt32(kRunNullPointer));

    b.SetInsertPoint(call);
    if (config.kernel.packed) {
      // Checked here too, so a C caller gets an error code rather than
      // Halide's default error handler (which aborts) for bad offsets.
      auto *badOffsets = llvm::BasicBlock::Create(ctx, "bad_offsets", run);
      for (auto [name, total] : {std::pair{"cu_seqlens_q", "Tq"}, {"cu_seqlens_k", "Tk"}})
        checkOffsets(run, argumentNamed(args, name), sizes.at("B"), sizes.at(total), badOffsets);
      llvm::BasicBlock *resume = b.GetInsertBlock();
      b.SetInsertPoint(badOffsets);
      b.CreateRet(b.getInt32(kRunBadOffsets));
      b.SetInsertPoint(resume);
    }
    if (config.kernel.cache.any()) {
      // Checked here too (as the kernel does), so a C caller gets an error
      // code rather than Halide's default error handler, which aborts.
      auto *overflow = llvm::BasicBlock::Create(ctx, "cache_overflow", run);
      checkCaches(run, args, overflow);
      llvm::BasicBlock *resume = b.GetInsertBlock();
      b.SetInsertPoint(overflow);
      b.CreateRet(b.getInt32(kRunCacheOverflow));
      b.SetInsertPoint(resume);
    }
    std::vector<llvm::Value *> callArgs;
    std::vector<size_t> order = config.entryOrder(); // NAME's order
    for (size_t pos = 0; pos < order.size(); ++pos) {
      size_t k = order[pos];
      llvm::Value *buf = fillBuffer(run, config.arguments[k], args[k], shapes[k]);
      callArgs.push_back(b.CreateBitCast(buf, kernel->getArg((unsigned)pos)->getType()));
    }
    b.CreateRet(b.CreateCall(kernel->getFunctionType(), kernel, callArgs));
  }

private:
  llvm::Module &module;
  llvm::LLVMContext &ctx;
  const AttentionConfig &config;
  llvm::IRBuilder<> b;
  llvm::Type *i8, *i16, *i32, *i64, *i8p;
  llvm::StructType *typeT, *dimT, *bufT;
  std::map<std::string, llvm::Value *> sizes;

  llvm::Value *argumentNamed(const std::vector<llvm::Argument *> &args, const std::string &name) {
    for (size_t k = 0; k < config.arguments.size(); ++k)
      if (config.arguments[k].name == name)
        return args[k];
    throw BackendError("kernel '" + config.name + "' has no argument '" + name + "'");
  }

  /// cu[0] == 0, cu[b] <= cu[b + 1] for b < B, cu[B] == total; branches to
  /// `bad` otherwise and leaves the builder after the check.
  void checkOffsets(llvm::Function *fn, llvm::Value *cu, llvm::Value *B, llvm::Value *total,
                    llvm::BasicBlock *bad) {
    auto *loop = llvm::BasicBlock::Create(ctx, "offsets_loop", fn);
    auto *body = llvm::BasicBlock::Create(ctx, "offsets_next", fn);
    auto *done = llvm::BasicBlock::Create(ctx, "offsets_end", fn);
    auto *ok = llvm::BasicBlock::Create(ctx, "offsets_ok", fn);
    llvm::BasicBlock *start = b.GetInsertBlock();
    llvm::Value *first = b.CreateLoad(i32, b.CreateGEP(i32, cu, b.getInt64(0)));
    b.CreateCondBr(b.CreateICmpEQ(first, b.getInt32(0)), loop, bad);
    b.SetInsertPoint(loop);
    llvm::PHINode *index = b.CreatePHI(i64, 2, "b");
    index->addIncoming(b.getInt64(0), start);
    b.CreateCondBr(b.CreateICmpSLT(index, B), body, done);
    b.SetInsertPoint(body);
    llvm::Value *at = b.CreateLoad(i32, b.CreateGEP(i32, cu, index));
    llvm::Value *next = b.CreateAdd(index, b.getInt64(1));
    llvm::Value *after = b.CreateLoad(i32, b.CreateGEP(i32, cu, next));
    index->addIncoming(next, body);
    b.CreateCondBr(b.CreateICmpSLE(at, after), loop, bad);
    b.SetInsertPoint(done);
    llvm::Value *last = b.CreateSExt(b.CreateLoad(i32, b.CreateGEP(i32, cu, B)), i64);
    b.CreateCondBr(b.CreateICmpEQ(last, total), ok, bad);
    b.SetInsertPoint(ok);
  }

  /// For every sequence b: 0 <= cache_len[b] and cache_len[b] + Lq fits
  /// its capacity; paged, every block_table entry of the rows it uses names
  /// a block of the pool. Branches to `bad` otherwise.
  void checkCaches(llvm::Function *fn, const std::vector<llvm::Argument *> &args,
                   llvm::BasicBlock *bad) {
    const CacheSpec &cache = config.kernel.cache;
    llvm::Value *lens = argumentNamed(args, "cache_len");
    llvm::Value *B = sizeNamed("B"), *Lq = sizeNamed("Lq");
    llvm::Value *block = b.getInt64(cache.block);
    llvm::Value *maxBlocks = cache.paged() ? sizeNamed("max_blocks") : nullptr;
    llvm::Value *capacity = cache.paged() ? b.CreateMul(maxBlocks, block) : sizeNamed("Lmax");
    auto *loop = llvm::BasicBlock::Create(ctx, "cache_loop", fn);
    auto *body = llvm::BasicBlock::Create(ctx, "cache_sequence", fn);
    auto *done = llvm::BasicBlock::Create(ctx, "cache_ok", fn);
    llvm::BasicBlock *start = b.GetInsertBlock();
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::PHINode *seq = b.CreatePHI(i64, 2, "b");
    seq->addIncoming(b.getInt64(0), start);
    b.CreateCondBr(b.CreateICmpSLT(seq, B), body, done);
    b.SetInsertPoint(body);
    llvm::Value *len = b.CreateSExt(b.CreateLoad(i32, b.CreateGEP(i32, lens, seq)), i64);
    llvm::Value *rows = b.CreateAdd(len, Lq);
    llvm::Value *fits = b.CreateAnd(b.CreateICmpSGE(len, b.getInt64(0)),
                                    b.CreateICmpSLE(rows, capacity));
    llvm::Value *next = b.CreateAdd(seq, b.getInt64(1));
    if (!cache.paged()) {
      seq->addIncoming(next, body);
      b.CreateCondBr(fits, loop, bad);
      b.SetInsertPoint(done);
      return;
    }
    // The blocks of rows [0, cache_len + Lq): entries 0 .. ceil(rows / block) - 1.
    auto *blocks = llvm::BasicBlock::Create(ctx, "cache_blocks", fn);
    auto *entry = llvm::BasicBlock::Create(ctx, "cache_block", fn);
    llvm::Value *used = b.CreateSDiv(b.CreateAdd(rows, b.CreateSub(block, b.getInt64(1))), block);
    b.CreateCondBr(fits, blocks, bad);
    b.SetInsertPoint(blocks);
    llvm::PHINode *slot = b.CreatePHI(i64, 2, "slot");
    slot->addIncoming(b.getInt64(0), body);
    llvm::Value *more = b.CreateICmpSLT(slot, used);
    seq->addIncoming(next, blocks);
    b.CreateCondBr(more, entry, loop);
    b.SetInsertPoint(entry);
    llvm::Value *table = argumentNamed(args, "block_table");
    llvm::Value *at = b.CreateAdd(b.CreateMul(seq, maxBlocks), slot);
    llvm::Value *id = b.CreateSExt(b.CreateLoad(i32, b.CreateGEP(i32, table, at)), i64);
    llvm::Value *inPool = b.CreateAnd(b.CreateICmpSGE(id, b.getInt64(0)),
                                      b.CreateICmpSLT(id, sizeNamed("num_blocks")));
    slot->addIncoming(b.CreateAdd(slot, b.getInt64(1)), entry);
    b.CreateCondBr(inPool, blocks, bad);
    b.SetInsertPoint(done);
  }

  /// A size of the kernel: fixed, or a dynamic size argument of NAME_run.
  llvm::Value *sizeNamed(const std::string &name) {
    auto it = sizes.find(name);
    if (it != sizes.end())
      return it->second;
    KernelSizes t = config.kernel.sizes();
    int64_t fixed = name == "B" ? t.B : name == "Lq" ? t.Lq : name == "Lmax" ? t.Lk : 0;
    if (fixed > 0)
      return b.getInt64(fixed);
    throw BackendError("kernel '" + config.name + "': NAME_run has no size '" + name + "'");
  }

  llvm::Value *inRange(llvm::Value *v) {
    return b.CreateAnd(b.CreateICmpSGE(v, b.getInt64(1)),
                       b.CreateICmpSLE(v, b.getInt64(INT32_MAX)));
  }

  llvm::Value *extentOf(const ArgSpec &arg, const ArgDim &dim) {
    if (dim.value > 0)
      return b.getInt64(dim.value);
    auto it = sizes.find(dim.name);
    if (it == sizes.end())
      throw BackendError("kernel '" + config.name + "': argument '" + arg.name +
                         "' has dimension '" + dim.name +
                         "' whose size NAME_run cannot know; give it a fixed size");
    return it->second;
  }

  llvm::Value *fillBuffer(llvm::Function *fn, const ArgSpec &arg, llvm::Value *ptr,
                          const std::vector<std::pair<llvm::Value *, llvm::Value *>> &dims) {
    // Allocas go to the entry block so they are static stack slots.
    llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    llvm::Value *buf = entry.CreateAlloca(bufT, nullptr, arg.name + "_buf");
    llvm::Value *dimArray = llvm::ConstantPointerNull::get(dimT->getPointerTo());
    if (!dims.empty()) {
      auto *arrT = llvm::ArrayType::get(dimT, dims.size());
      llvm::Value *arr = entry.CreateAlloca(arrT, nullptr, arg.name + "_dims");
      for (size_t k = 0; k < dims.size(); ++k) {
        llvm::Value *slot = b.CreateConstInBoundsGEP2_32(arrT, arr, 0, (unsigned)k);
        b.CreateStore(b.getInt32(0), b.CreateStructGEP(dimT, slot, 0));
        b.CreateStore(b.CreateTrunc(dims[k].first, i32), b.CreateStructGEP(dimT, slot, 1));
        b.CreateStore(b.CreateTrunc(dims[k].second, i32), b.CreateStructGEP(dimT, slot, 2));
        b.CreateStore(b.getInt32(0), b.CreateStructGEP(dimT, slot, 3));
      }
      dimArray = b.CreateConstInBoundsGEP2_32(arrT, arr, 0, 0);
    }
    HalideTypeCode tc = typeCode(arg.type);
    b.CreateStore(b.getInt64(0), b.CreateStructGEP(bufT, buf, 0));
    b.CreateStore(llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(i8p)),
                  b.CreateStructGEP(bufT, buf, 1));
    b.CreateStore(b.CreateBitCast(ptr, i8p), b.CreateStructGEP(bufT, buf, 2));
    b.CreateStore(b.getInt64(0), b.CreateStructGEP(bufT, buf, 3));
    llvm::Value *type = b.CreateStructGEP(bufT, buf, 4);
    b.CreateStore(b.getInt8(tc.code), b.CreateStructGEP(typeT, type, 0));
    b.CreateStore(b.getInt8(tc.bits), b.CreateStructGEP(typeT, type, 1));
    b.CreateStore(b.getInt16(1), b.CreateStructGEP(typeT, type, 2));
    b.CreateStore(b.getInt32((int32_t)dims.size()), b.CreateStructGEP(bufT, buf, 5));
    b.CreateStore(dimArray, b.CreateStructGEP(bufT, buf, 6));
    b.CreateStore(llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(i8p)),
                  b.CreateStructGEP(bufT, buf, 7));
    return buf;
  }
};

} // namespace

void addRunWrappers(llvm::Module &module, const std::vector<const AttentionConfig *> &configs) {
  llvm::LLVMContext &ctx = module.getContext();
  std::vector<llvm::Constant *> names;
  for (const AttentionConfig *config : configs) {
    RunBuilder(module, *config).build();
    stringPointer(module, encodeSignature(config->arguments),
                  config->name + "_attnc_signature", true);
    names.push_back(stringPointer(module, config->name, config->name + ".attnc_name", false));
  }
  auto *i8p = llvm::Type::getInt8Ty(ctx)->getPointerTo();
  names.push_back(llvm::ConstantPointerNull::get(i8p));
  auto *arrT = llvm::ArrayType::get(i8p, names.size());
  // Objects from several attnc runs (--no-runtime + --emit=runtime) link
  // into one app, so the linker must keep one list instead of reporting a
  // duplicate: a COMDAT group of its own where the object format has them
  // (ELF, COFF, Wasm), a weak definition elsewhere (MachO, where LLVM aborts
  // on a COMDAT). The list serves libattnrt, which loads libraries made by
  // one attnc run (`-o x.so`), where it is unique.
  bool comdat = llvm::Triple(module.getTargetTriple()).supportsCOMDAT();
  auto *list = new llvm::GlobalVariable(
      module, arrT, true,
      comdat ? llvm::GlobalValue::ExternalLinkage : llvm::GlobalValue::WeakAnyLinkage,
      llvm::ConstantArray::get(arrT, names), "attnc_kernels");
  if (comdat)
    list->setComdat(module.getOrInsertComdat("attnc_kernels"));
}

} // namespace attnc::halide_backend
