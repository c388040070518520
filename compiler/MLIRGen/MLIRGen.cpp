//===- MLIRGen.cpp - KernelSpecs to the attn dialect -----------------------===//
//
// One class of mlirGen() overloads, as in the Toy tutorial. Tensors in the
// dialect are logical: q, k, v and out are [B, heads, L, width] whatever the
// memory layout, which is recorded as the function's `attn.layout`. The
// function's arguments follow the contract order of kernelArguments().
//
//===----------------------------------------------------------------------===//
#include "compiler/MLIRGen/MLIRGen.h"

#include "compiler/Frontend/Signature.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/StandardOps/IR/Ops.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"

#include <map>

using namespace mlir;

namespace attnc {
namespace {

class MLIRGenImpl {
public:
  MLIRGenImpl(MLIRContext &context, const std::string &fileName)
      : builder(&context), fileName(fileName) {}

  OwningOpRef<ModuleOp> mlirGen(const std::vector<KernelSpec> &kernels) {
    module = ModuleOp::create(builder.getUnknownLoc());
    for (const KernelSpec &spec : kernels)
      if (!mlirGen(spec))
        return nullptr;
    if (failed(verify(*module))) {
      module->emitError("internal error: the generated attn IR does not verify");
      return nullptr;
    }
    return std::move(module);
  }

private:
  OpBuilder builder;
  std::string fileName;
  OwningOpRef<ModuleOp> module;

  Location loc(SourceLoc l) {
    return FileLineColLoc::get(builder.getStringAttr(fileName), l.line, l.col);
  }

  static int64_t dimOrDynamic(const ArgDim &d) {
    return d.isDynamic() ? ShapedType::kDynamicSize : d.value;
  }

  Type elementType(ElemType type) {
    switch (type) {
    case ElemType::F32: return builder.getF32Type();
    case ElemType::I32: return builder.getIntegerType(32);
    case ElemType::U8: return builder.getIntegerType(8, /*isSigned=*/false);
    }
    return builder.getF32Type();
  }

  /// The dialect's logical type of an argument: bshd tensors are permuted to
  /// [B, heads, L, width].
  RankedTensorType tensorType(const ArgSpec &arg, Layout layout) {
    SmallVector<int64_t> shape;
    for (const ArgDim &d : arg.shape)
      shape.push_back(dimOrDynamic(d));
    bool attentionTensor = arg.name == "q" || arg.name == "k" || arg.name == "v" ||
                           (arg.name == "out" && shape.size() == 4);
    if (layout == Layout::BSHD && attentionTensor)
      std::swap(shape[1], shape[2]);
    return RankedTensorType::get(shape, elementType(arg.type));
  }

  RankedTensorType scoresType(RankedTensorType q, RankedTensorType k) {
    return RankedTensorType::get({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), k.getDimSize(2)},
                                 builder.getF32Type());
  }

  bool unsupported(SourceLoc l, const std::string &what) {
    emitError(loc(l)) << what << " is not supported by this version of attnc's MLIRGen yet";
    return false;
  }

  bool mlirGen(const KernelSpec &spec) {
    if (spec.project != ProjectKind::None)
      return unsupported(spec.loc, "'project'");
    if (spec.score == ScoreKind::Custom)
      return unsupported(spec.loc, "a custom score expression");
    if (spec.bias == BiasKind::Custom)
      return unsupported(spec.loc, "a custom bias expression");
    if (spec.outputLse)
      return unsupported(spec.loc, "the 'lse' output");

    std::vector<ArgSpec> args = kernelArguments(spec);
    SmallVector<Type> inputTypes, resultTypes;
    for (const ArgSpec &arg : args)
      (arg.isOutput ? resultTypes : inputTypes).push_back(tensorType(arg, spec.layout));

    builder.setInsertionPointToEnd(module->getBody());
    auto func = builder.create<FuncOp>(loc(spec.loc), spec.name,
                                       builder.getFunctionType(inputTypes, resultTypes));
    func->setAttr("attn.layout", builder.getStringAttr(toString(spec.layout)));
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);

    std::map<std::string, Value> values;
    for (size_t i = 0, n = 0; i < args.size(); ++i)
      if (!args[i].isOutput)
        values[args[i].name] = entry->getArgument(n++);

    Location l = loc(spec.loc);
    Value q = values["q"], k = values["k"], v = values["v"];
    auto qType = q.getType().cast<RankedTensorType>();
    auto kType = k.getType().cast<RankedTensorType>();
    RankedTensorType sType = scoresType(qType, kType);

    SmallVector<Value> scoreWeights;
    for (const char *name : {"score_w", "score_wq", "score_wk", "score_wv"})
      if (values.count(name))
        scoreWeights.push_back(values[name]);
    Value s = builder.create<mlir::attn::ScoreOp>(
        l, sType, q, k, scoreWeights, builder.getStringAttr(toString(spec.score)),
        spec.score == ScoreKind::Additive ? builder.getI64IntegerAttr(spec.additiveHidden)
                                          : IntegerAttr());
    s = builder.create<mlir::attn::ScaleOp>(l, s, builder.getF64FloatAttr(spec.scale));
    if (spec.softcap)
      s = builder.create<mlir::attn::SoftcapOp>(l, s, builder.getF64FloatAttr(*spec.softcap));
    if (spec.bias == BiasKind::Alibi)
      s = builder.create<mlir::attn::BiasOp>(l, s, builder.getStringAttr("alibi"));
    for (const MaskTerm &term : spec.masks) {
      SmallVector<Value> maskInputs;
      if (term.kind == MaskKind::ValidLen)
        maskInputs.push_back(values["valid_len"]);
      if (term.kind == MaskKind::Input)
        maskInputs.push_back(values["mask"]);
      if (term.kind == MaskKind::Custom)
        return unsupported(term.loc, "a custom mask expression");
      s = builder.create<mlir::attn::MaskOp>(
          loc(term.loc), s.getType(), s, maskInputs, builder.getStringAttr(toString(term.kind)),
          term.kind == MaskKind::Window ? builder.getI64IntegerAttr(term.window) : IntegerAttr());
    }
    Value p = builder.create<mlir::attn::SoftmaxOp>(l, s);
    Value out = builder.create<mlir::attn::WeightedSumOp>(l, resultTypes[0], p, v);
    SmallVector<Value> results{out};
    if (spec.outputWeights)
      results.push_back(p);
    builder.create<ReturnOp>(l, results);
    return true;
  }
};

} // namespace

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const std::string &fileName,
                              const std::vector<KernelSpec> &kernels) {
  context.loadDialect<mlir::attn::AttnDialect, StandardOpsDialect>();
  return MLIRGenImpl(context, fileName).mlirGen(kernels);
}

void registerAttncDialects(DialectRegistry &registry) {
  registry.insert<mlir::attn::AttnDialect, StandardOpsDialect, arith::ArithmeticDialect,
                  math::MathDialect>();
}

} // namespace attnc
