//===- MLIRGen.cpp - KernelSpecs to the attn dialect -----------------------===//
//
// One class of mlirGen() overloads, as in the Toy tutorial. Tensors in the
// dialect are logical: q, k, v and out are [B, heads, L, width] whatever the
// memory layout, which is recorded as the function's `attn.layout`. The
// function's arguments follow the contract order of kernelArguments().
// Projections become positions -> project -> split_heads before the chain
// and merge_heads -> project after it; custom expressions become regions
// (ExprGen.cpp); `lse` is an attn.logsumexp of the masked scores.
//
//===----------------------------------------------------------------------===//
#include "compiler/MLIRGen/MLIRGen.h"
#include "compiler/MLIRGen/ExprGen.h"

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

  /// [B, L, M] -> positions? -> project -> split_heads: [B, heads, L, width].
  Value projectHeads(Location l, const KernelSpec &spec, Value x, Value w, Value bias,
                     int64_t heads, int64_t width) {
    auto xType = x.getType().cast<RankedTensorType>();
    int64_t n = heads * width;
    auto projected = RankedTensorType::get({xType.getDimSize(0), xType.getDimSize(1), n},
                                           builder.getF32Type());
    Value p = builder.create<mlir::attn::ProjectOp>(l, projected, x, w, bias);
    auto split = RankedTensorType::get(
        {xType.getDimSize(0), heads, xType.getDimSize(1), width}, builder.getF32Type());
    return builder.create<mlir::attn::SplitHeadsOp>(l, split, p,
                                                    builder.getI64IntegerAttr(heads));
  }

  Value positioned(Location l, const KernelSpec &spec, Value x) {
    if (spec.positional != PositionalKind::Sinusoidal)
      return x;
    return builder.create<mlir::attn::PositionsOp>(l, x, builder.getStringAttr("sinusoidal"));
  }

  SmallVector<Value> inputsOf(const Expr &expr, const KernelSpec &spec,
                              const std::map<std::string, Value> &inputs) {
    SmallVector<Value> values;
    for (const std::string &name : inputsReadBy(expr, spec))
      values.push_back(inputs.at(name));
    return values;
  }

  bool mlirGen(const KernelSpec &spec) {
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
    std::map<std::string, Value> declared;
    for (const InputAST &input : spec.inputs)
      declared[input.name] = values[input.name];
    ExprRegionContext exprContext{spec, declared, [this](SourceLoc at) { return loc(at); }};

    Value q = values["q"], k = values["k"], v = values["v"];
    bool project = spec.project != ProjectKind::None;
    if (project) {
      bool self = spec.project == ProjectKind::SelfQKV || spec.project == ProjectKind::SelfQKVOut;
      Value xq = positioned(l, spec, self ? values["x"] : values["x_q"]);
      Value xkv = self ? xq : positioned(l, spec, values["x_kv"]);
      auto bias = [&](const char *name) { return spec.projBias ? values[name] : Value(); };
      int64_t keyDim = spec.keyDim ? spec.keyDim : spec.headDim;
      int64_t valueDim = spec.valueDim ? spec.valueDim : spec.headDim;
      q = projectHeads(l, spec, xq, values["w_q"], bias("b_q"), spec.heads, spec.headDim);
      k = projectHeads(l, spec, xkv, values["w_k"], bias("b_k"), spec.kvHeads, keyDim);
      v = projectHeads(l, spec, xkv, values["w_v"], bias("b_v"), spec.kvHeads, valueDim);
    }
    auto qType = q.getType().cast<RankedTensorType>();
    auto kType = k.getType().cast<RankedTensorType>();
    RankedTensorType sType = scoresType(qType, kType);

    SmallVector<Value> scoreWeights;
    for (const char *name : {"score_w", "score_wq", "score_wk", "score_wv"})
      if (values.count(name))
        scoreWeights.push_back(values[name]);
    bool customScore = spec.score == ScoreKind::Custom && spec.scoreExpr;
    SmallVector<Value> scoreInputs;
    if (customScore)
      scoreInputs = inputsOf(*spec.scoreExpr, spec, declared);
    auto score = builder.create<mlir::attn::ScoreOp>(
        customScore ? loc(spec.scoreExpr->loc) : l, sType, q, k, scoreWeights, scoreInputs,
        builder.getStringAttr(toString(spec.score)),
        spec.score == ScoreKind::Additive ? builder.getI64IntegerAttr(spec.additiveHidden)
                                          : IntegerAttr());
    if (customScore)
      buildExprRegion(builder, score.getBody(), *spec.scoreExpr, /*withDot=*/true,
                      /*boolean=*/false, exprContext);
    Value s = score;
    s = builder.create<mlir::attn::ScaleOp>(l, s, builder.getF64FloatAttr(spec.scale));
    if (spec.softcap)
      s = builder.create<mlir::attn::SoftcapOp>(l, s, builder.getF64FloatAttr(*spec.softcap));
    if (spec.bias == BiasKind::Alibi)
      s = builder.create<mlir::attn::BiasOp>(l, s.getType(), s, ValueRange(), builder.getStringAttr("alibi"));
    if (spec.bias == BiasKind::Custom && spec.biasExpr) {
      auto bias = builder.create<mlir::attn::BiasOp>(
          loc(spec.biasExpr->loc), s.getType(), s, inputsOf(*spec.biasExpr, spec, declared),
          builder.getStringAttr("custom"));
      buildExprRegion(builder, bias.getBody(), *spec.biasExpr, /*withDot=*/false,
                      /*boolean=*/false, exprContext);
      s = bias;
    }
    for (const MaskTerm &term : spec.masks) {
      SmallVector<Value> maskInputs;
      if (term.kind == MaskKind::ValidLen)
        maskInputs.push_back(values["valid_len"]);
      if (term.kind == MaskKind::Input)
        maskInputs.push_back(values["mask"]);
      if (term.kind == MaskKind::Custom && term.expr)
        maskInputs = inputsOf(*term.expr, spec, declared);
      auto mask = builder.create<mlir::attn::MaskOp>(
          loc(term.loc), s.getType(), s, maskInputs, builder.getStringAttr(toString(term.kind)),
          term.kind == MaskKind::Window ? builder.getI64IntegerAttr(term.window) : IntegerAttr());
      if (term.kind == MaskKind::Custom && term.expr)
        buildExprRegion(builder, mask.getBody(), *term.expr, /*withDot=*/false,
                        /*boolean=*/true, exprContext);
      s = mask;
    }
    Value p = builder.create<mlir::attn::SoftmaxOp>(l, s);
    Type attnOutType = resultTypes[0];
    bool outProject = spec.project == ProjectKind::QKVOut ||
                      spec.project == ProjectKind::SelfQKVOut;
    if (outProject) {
      auto vType = v.getType().cast<RankedTensorType>();
      attnOutType = RankedTensorType::get(
          {sType.getDimSize(0), sType.getDimSize(1), sType.getDimSize(2), vType.getDimSize(3)},
          builder.getF32Type());
    }
    Value out = builder.create<mlir::attn::WeightedSumOp>(l, attnOutType, p, v);
    if (outProject) {
      auto attnType = attnOutType.cast<RankedTensorType>();
      auto merged = RankedTensorType::get(
          {attnType.getDimSize(0), attnType.getDimSize(2),
           attnType.getDimSize(1) * attnType.getDimSize(3)},
          builder.getF32Type());
      Value m = builder.create<mlir::attn::MergeHeadsOp>(l, merged, out);
      out = builder.create<mlir::attn::ProjectOp>(l, resultTypes[0], m, values["w_o"],
                                                  spec.projBias ? values["b_o"] : Value());
    }
    SmallVector<Value> results{out};
    if (spec.outputWeights)
      results.push_back(p);
    if (spec.outputLse) {
      Type lseType;
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i].isOutput && args[i].name == "lse")
          lseType = tensorType(args[i], spec.layout);
      results.push_back(builder.create<mlir::attn::LogSumExpOp>(l, lseType, s));
    }
    builder.create<ReturnOp>(l, results);
    return true;
  }
};

} // namespace

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const std::string &fileName,
                              const std::vector<KernelSpec> &kernels) {
  context.loadDialect<mlir::attn::AttnDialect, StandardOpsDialect, arith::ArithmeticDialect,
                      math::MathDialect>();
  return MLIRGenImpl(context, fileName).mlirGen(kernels);
}

void registerAttncDialects(DialectRegistry &registry) {
  registry.insert<mlir::attn::AttnDialect, StandardOpsDialect, arith::ArithmeticDialect,
                  math::MathDialect>();
}

} // namespace attnc
