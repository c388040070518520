//===- MLIRGen.cpp - KernelSpecs to the attn dialect -----------------------===//
//
// One class of mlirGen() overloads, as in the Toy tutorial. Tensors in the
// dialect are logical: q, k, v and out are [B, heads, L, width] whatever the
// memory layout, which is recorded as the function's `attn.layout`. The
// function's arguments follow the contract order of kernelArguments(), and
// `attn.arguments` states that contract (name, role, logical shape with size
// names), so the IR alone is what the back end compiles (docs/dialect.md).
// Projections become positions -> project -> split_heads before the chain
// and merge_heads -> project after it; custom expressions become regions
// (ExprGen.cpp); `lse` is an attn.logsumexp of the masked scores.
//
//===----------------------------------------------------------------------===//
#include "compiler/MLIRGen/MLIRGen.h"
#include "compiler/MLIRGen/ExprGen.h"

#include "compiler/Frontend/ExprText.h"

#include "compiler/Frontend/Signature.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arithmetic/IR/Arithmetic.h"
#include "mlir/Dialect/StandardOps/IR/Ops.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"

#include <map>
#include <tuple>

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
    case ElemType::F16: return builder.getF16Type();
    case ElemType::BF16: return builder.getBF16Type();
    }
    return builder.getF32Type();
  }

  /// The dialect's logical type of an argument: bshd tensors are permuted to
  /// [B, heads, L, width].
  RankedTensorType tensorType(const ArgSpec &arg, Layout layout) {
    return tensorType(arg, layout, elementType(arg.type));
  }
  /// The type the attn ops compute an argument in: 16-bit storage widened to f32.
  RankedTensorType computeType(const ArgSpec &arg, Layout layout) {
    return tensorType(arg, layout, isHalfFloat(arg.type) ? builder.getF32Type()
                                                         : elementType(arg.type));
  }
  RankedTensorType tensorType(const ArgSpec &arg, Layout layout, Type element) {
    SmallVector<int64_t> shape;
    for (const ArgDim &d : arg.shape)
      shape.push_back(dimOrDynamic(d));
    bool attentionTensor = arg.name == "q" || arg.name == "k" || arg.name == "v" ||
                           arg.name == "k_cache" || arg.name == "v_cache" ||
                           (arg.name == "out" && shape.size() == 4);
    if (layout == Layout::BSHD && attentionTensor && shape.size() == 4)
      std::swap(shape[1], shape[2]);
    return RankedTensorType::get(shape, element);
  }

  RankedTensorType scoresType(RankedTensorType q, RankedTensorType k) {
    return RankedTensorType::get({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), k.getDimSize(2)},
                                 builder.getF32Type());
  }

  /// [B, L, M] -> positions? -> project -> split_heads: [B, heads, L, width];
  /// packed tokens [T, M] -> project -> split_heads: [T, heads, width].
  Value projectHeads(Location l, const KernelSpec &spec, Value x, Value w, Value bias,
                     int64_t heads, int64_t width) {
    auto xType = x.getType().cast<RankedTensorType>();
    int64_t n = heads * width;
    bool tokens = xType.getRank() == 2;
    auto type = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(shape, builder.getF32Type());
    };
    int64_t d0 = xType.getDimSize(0), d1 = xType.getDimSize(1);
    Value p = builder.create<mlir::attn::ProjectOp>(l, tokens ? type({d0, n}) : type({d0, d1, n}),
                                                    x, w, bias);
    return builder.create<mlir::attn::SplitHeadsOp>(
        l, tokens ? type({d0, heads, width}) : type({d0, heads, d1, width}), p,
        builder.getI64IntegerAttr(heads));
  }

  Value positioned(Location l, const KernelSpec &spec, Value x) {
    if (spec.positional != PositionalKind::Sinusoidal)
      return x;
    return builder.create<mlir::attn::PositionsOp>(l, x, builder.getStringAttr("sinusoidal"));
  }

  /// `B`, `H=8`, `4`: a dimension in the signature's encoding (KernelAbi.h).
  static std::string dimText(const ArgDim &d) {
    if (d.name.empty())
      return std::to_string(d.value);
    return d.isDynamic() ? d.name : d.name + "=" + std::to_string(d.value);
  }

  /// What an argument is for: data (q, k, v, x, x_q, x_kv), weight
  /// (projections, score weights), mask (valid_len, mask), declared (an
  /// `input` of the kernel) or output.
  static const char *argRole(const ArgSpec &arg, const KernelSpec &spec) {
    if (arg.isOutput)
      return "output";
    for (const InputAST &input : spec.inputs)
      if (input.name == arg.name)
        return "declared";
    for (const MaskKindInfo &mask : kMaskKinds)
      if (mask.hasInput && arg.name == mask.input.name)
        return "mask";
    if (arg.isWritten)
      return "cache"; // k_cache, v_cache: read and written in place
    for (const char *data : {"q", "k", "v", "x", "x_q", "x_kv", "cu_seqlens_q", "cu_seqlens_k",
                             "cache_len", "block_table"})
      if (arg.name == data)
        return "data";
    return "weight";
  }

  /// The kernel-level attributes: the argument contract and the facts of the
  /// source the tensor types cannot show.
  void setKernelAttributes(FuncOp func, const KernelSpec &spec,
                           const std::vector<ArgSpec> &args) {
    SmallVector<Attribute> contract;
    for (const ArgSpec &arg : args) {
      SmallVector<Attribute> dims;
      for (const ArgDim &d : arg.shape)
        dims.push_back(builder.getStringAttr(dimText(d)));
      contract.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr("name", builder.getStringAttr(arg.name)),
           builder.getNamedAttr("role", builder.getStringAttr(argRole(arg, spec))),
           builder.getNamedAttr("shape", builder.getArrayAttr(dims))}));
    }
    func->setAttr("attn.arguments", builder.getArrayAttr(contract));
    func->setAttr("attn.layout", builder.getStringAttr(toString(spec.layout)));
    if (spec.backward)
      func->setAttr("attn.backward", builder.getUnitAttr());
    if (spec.seqK.kind == SizeSpec::SameAsSeqQ)
      func->setAttr("attn.seq_k_is_seq_q", builder.getUnitAttr());
  }

  /// Records an expression's source text on its region's attn.yield.
  void recordSource(Region &body, const std::string &text) {
    body.front().getTerminator()->setAttr("source", builder.getStringAttr(text));
  }

  SmallVector<Value> inputsOf(const Expr &expr, const KernelSpec &spec,
                              const std::map<std::string, Value> &inputs) {
    SmallVector<Value> values;
    for (const std::string &name : inputsReadBy(expr, spec))
      values.push_back(inputs.at(name));
    return values;
  }

  /// What the steps of one kernel share.
  struct Kernel {
    const KernelSpec &spec;
    std::vector<ArgSpec> args;
    SmallVector<Type> resultTypes;         // as computed (f32 for 16-bit results)
    std::map<std::string, Value> values;   // the inputs by contract name (widened to f32)
    std::map<std::string, Value> declared; // the declared inputs among them
    Location l;
  };

  /// One kernel: its function, then q / k / v, the score chain, the outputs.
  bool mlirGen(const KernelSpec &spec) {
    Kernel kernel = buildFunction(spec);
    auto [q, k, v] = attentionInputs(kernel);
    q = rotated(kernel, q, mlir::attn::RotaryRows::queries);
    k = rotated(kernel, k,
                spec.cache.any() ? mlir::attn::RotaryRows::queries : mlir::attn::RotaryRows::keys);
    if (spec.cache.any()) // the new keys sit at the queries' positions
      std::tie(k, v) = appendToCaches(kernel, k, v);
    Value s = scoreChain(kernel, q, k);
    buildOutputs(kernel, s, v);
    return true;
  }

  /// The function with the contract's arguments and results and the kernel
  /// attributes; the builder is left at the start of its body.
  Kernel buildFunction(const KernelSpec &spec) {
    std::vector<ArgSpec> args = kernelArguments(spec);
    SmallVector<Type> inputTypes, resultTypes, computedTypes;
    for (const ArgSpec &arg : args) {
      (arg.isOutput ? resultTypes : inputTypes).push_back(tensorType(arg, spec.layout));
      if (arg.isOutput)
        computedTypes.push_back(computeType(arg, spec.layout));
    }

    builder.setInsertionPointToEnd(module->getBody());
    auto func = builder.create<FuncOp>(loc(spec.loc), spec.name,
                                       builder.getFunctionType(inputTypes, resultTypes));
    setKernelAttributes(func, spec, args);
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);

    Kernel kernel{spec, args, computedTypes, {}, {}, loc(spec.loc)};
    // 16-bit storage is widened once at the start: every attn op computes in
    // f32 (docs/language.md, storage types); buildOutputs rounds the results once at the end.
    for (size_t i = 0, n = 0; i < args.size(); ++i) {
      if (args[i].isOutput)
        continue;
      Value arg = entry->getArgument(n++);
      // (A cache keeps its storage type: attn.cache reads and writes it.)
      bool cache = args[i].isWritten;
      if (isHalfFloat(args[i].type) && !cache)
        arg = builder.create<arith::ExtFOp>(kernel.l, computeType(args[i], spec.layout), arg);
      kernel.values[args[i].name] = arg;
    }
    for (const InputAST &input : spec.inputs)
      kernel.declared[input.name] = kernel.values[input.name];
    return kernel;
  }

  /// q, k, v: the arguments, or positions? -> project -> split_heads.
  std::tuple<Value, Value, Value> attentionInputs(Kernel &kernel) {
    const KernelSpec &spec = kernel.spec;
    auto &values = kernel.values;
    Location l = kernel.l;
    Value q = values["q"], k = values["k"], v = values["v"];
    if (spec.packed) { // tokens (projected first, if so) viewed as sequences
      if (spec.project != ProjectKind::None)
        std::tie(q, k, v) = projectedInputs(kernel);
      return {sequences(l, q, values["cu_seqlens_q"]), sequences(l, k, values["cu_seqlens_k"]),
              sequences(l, v, values["cu_seqlens_k"])};
    }
    if (spec.project == ProjectKind::None)
      return {q, k, v};
    return projectedInputs(kernel);
  }

  /// q, k, v from x (or x_q, x_kv): positions? -> project -> split_heads.
  std::tuple<Value, Value, Value> projectedInputs(Kernel &kernel) {
    const KernelSpec &spec = kernel.spec;
    auto &values = kernel.values;
    Location l = kernel.l;
    Value q, k, v;
    bool self = spec.project == ProjectKind::SelfQKV || spec.project == ProjectKind::SelfQKVOut;
    Value xq = positioned(l, spec, self ? values["x"] : values["x_q"]);
    Value xkv = self ? xq : positioned(l, spec, values["x_kv"]);
    auto bias = [&](const char *name) {
      return values.count(name) ? values[name] : Value(); // the biases proj_bias names
    };
    int64_t keyDim = spec.keyDim ? spec.keyDim : spec.headDim;
    int64_t valueDim = spec.valueDim ? spec.valueDim : spec.headDim;
    q = projectHeads(l, spec, xq, values["w_q"], bias("b_q"), spec.heads, spec.headDim);
    k = projectHeads(l, spec, xkv, values["w_k"], bias("b_k"), spec.kvHeads, keyDim);
    v = projectHeads(l, spec, xkv, values["w_v"], bias("b_v"), spec.kvHeads, valueDim);
    return {q, k, v};
  }

  /// The new tokens' k and v appended to the caches (in place); the results
  /// are every sequence's keys and values.
  std::pair<Value, Value> appendToCaches(Kernel &kernel, Value k, Value v) {
    const CacheSpec &cache = kernel.spec.cache;
    auto &values = kernel.values;
    Value blockTable = cache.paged() ? values["block_table"] : Value();
    IntegerAttr block = cache.paged() ? builder.getI64IntegerAttr(cache.block) : IntegerAttr();
    auto kind = cache.paged() ? mlir::attn::CacheKind::paged : mlir::attn::CacheKind::contiguous;
    auto append = [&](Value rows, const char *name) -> Value {
      auto t = rows.getType().cast<RankedTensorType>();
      auto type = RankedTensorType::get(
          {t.getDimSize(0), t.getDimSize(1), ShapedType::kDynamicSize, t.getDimSize(3)},
          builder.getF32Type());
      return builder.create<mlir::attn::CacheOp>(
          kernel.l, type, values.at(name), rows, values["cache_len"], blockTable,
          builder.getStringAttr(mlir::attn::stringifyCacheKind(kind)), block);
    };
    return {append(k, "k_cache"), append(v, "v_cache")};
  }

  /// Packed tokens [T, heads, W] viewed as sequences [B, heads, L, W].
  Value sequences(Location l, Value tokens, Value cuSeqlens) {
    auto t = tokens.getType().cast<RankedTensorType>();
    auto type = RankedTensorType::get(
        {ShapedType::kDynamicSize, t.getDimSize(1), ShapedType::kDynamicSize, t.getDimSize(2)},
        builder.getF32Type());
    return builder.create<mlir::attn::SequencesOp>(l, type, tokens, cuSeqlens);
  }

  /// q or k turned by rotary embeddings (after the projection, if any).
  Value rotated(Kernel &kernel, Value x, mlir::attn::RotaryRows rows) {
    const KernelSpec &spec = kernel.spec;
    if (spec.positional != PositionalKind::Rotary)
      return x;
    return builder.create<mlir::attn::RotaryOp>(
        kernel.l, x, builder.getF64FloatAttr(spec.rotary.base),
        builder.getStringAttr(toString(spec.rotary.style)),
        builder.getI64IntegerAttr(spec.rotary.dims),
        builder.getStringAttr(mlir::attn::stringifyRotaryRows(rows)));
  }

  /// score -> scale -> softcap? -> bias? -> mask*: the masked scores.
  Value scoreChain(Kernel &kernel, Value q, Value k) {
    const KernelSpec &spec = kernel.spec;
    const auto &declared = kernel.declared;
    Location l = kernel.l;
    ExprRegionContext exprContext{spec, declared, [this](SourceLoc at) { return loc(at); }};
    RankedTensorType sType = scoresType(q.getType().cast<RankedTensorType>(),
                                        k.getType().cast<RankedTensorType>());

    const ScoreKindInfo &scoreKind = kindInfo(spec.score);
    SmallVector<Value> scoreWeights;
    for (int w = 0; w < scoreKind.numWeights; ++w)
      scoreWeights.push_back(kernel.values.at(scoreKind.weights[w].name));
    bool customScore = spec.score == ScoreKind::Custom && spec.scoreExpr;
    SmallVector<Value> scoreInputs;
    if (customScore)
      scoreInputs = inputsOf(*spec.scoreExpr, spec, declared);
    auto score = builder.create<mlir::attn::ScoreOp>(
        customScore ? loc(spec.scoreExpr->loc) : l, sType, q, k, scoreWeights, scoreInputs,
        builder.getStringAttr(toString(spec.score)),
        scoreKind.takesHidden ? builder.getI64IntegerAttr(spec.additiveHidden) : IntegerAttr());
    if (customScore) {
      buildExprRegion(builder, score.getBody(), *spec.scoreExpr, /*withDot=*/true,
                      /*boolean=*/false, exprContext);
      recordSource(score.getBody(), exprText(*spec.scoreExpr));
    }
    Value s = score;
    s = builder.create<mlir::attn::ScaleOp>(l, s, builder.getF64FloatAttr(spec.scale));
    if (spec.softcap)
      s = builder.create<mlir::attn::SoftcapOp>(l, s, builder.getF64FloatAttr(*spec.softcap));
    if (spec.bias == BiasKind::Alibi)
      s = builder.create<mlir::attn::BiasOp>(l, s.getType(), s, ValueRange(),
                                             mlir::attn::BiasKind::alibi);
    if (spec.bias == BiasKind::Custom && spec.biasExpr) {
      auto bias = builder.create<mlir::attn::BiasOp>(
          loc(spec.biasExpr->loc), s.getType(), s, inputsOf(*spec.biasExpr, spec, declared),
          mlir::attn::BiasKind::custom);
      buildExprRegion(builder, bias.getBody(), *spec.biasExpr, /*withDot=*/false,
                      /*boolean=*/false, exprContext);
      recordSource(bias.getBody(), exprText(*spec.biasExpr));
      s = bias;
    }
    // With '|', each term lists the groups (disjunctive normal form) it is in.
    std::vector<SmallVector<int64_t>> termGroups(spec.masks.size());
    for (size_t g = 0; g < spec.maskGroups.size(); ++g)
      for (int term : spec.maskGroups[g])
        termGroups[(size_t)term].push_back((int64_t)g);
    for (size_t n = 0; n < spec.masks.size(); ++n) {
      const MaskTerm &term = spec.masks[n];
      const MaskKindInfo &kind = kindInfo(term.kind);
      SmallVector<Value> maskInputs;
      if (kind.hasInput)
        maskInputs.push_back(kernel.values.at(kind.input.name));
      if (kind.isExpression && term.expr)
        maskInputs = inputsOf(*term.expr, spec, declared);
      auto width = [&](const char *attr) {
        return kind.widthAttr && std::string(kind.widthAttr) == attr
                   ? builder.getI64IntegerAttr(term.width)
                   : IntegerAttr();
      };
      auto mask = builder.create<mlir::attn::MaskOp>(
          loc(term.loc), s.getType(), s, maskInputs, builder.getStringAttr(toString(term.kind)),
          width("window"), width("sink"),
          termGroups[n].empty() ? ArrayAttr() : builder.getI64ArrayAttr(termGroups[n]));
      if (kind.isExpression && term.expr) {
        buildExprRegion(builder, mask.getBody(), *term.expr, /*withDot=*/false,
                        /*boolean=*/true, exprContext);
        recordSource(mask.getBody(), maskTermText(*term.expr, spec.masks.size() > 1));
      }
      s = mask;
    }
    return s;
  }

  /// softmax -> weighted_sum (-> merge_heads -> project), then the weights
  /// and lse results requested, and the return.
  void buildOutputs(Kernel &kernel, Value s, Value v) {
    const KernelSpec &spec = kernel.spec;
    Location l = kernel.l;
    auto sType = s.getType().cast<RankedTensorType>();
    Value p = builder.create<mlir::attn::SoftmaxOp>(l, s);
    Type attnOutType = kernel.resultTypes[0];
    bool outProject = hasOutputProjection(spec.project);
    if (outProject || spec.packed) {
      auto vType = v.getType().cast<RankedTensorType>();
      attnOutType = RankedTensorType::get(
          {sType.getDimSize(0), sType.getDimSize(1), sType.getDimSize(2), vType.getDimSize(3)},
          builder.getF32Type());
    }
    Value out = builder.create<mlir::attn::WeightedSumOp>(l, attnOutType, p, v);
    auto attnType = attnOutType.cast<RankedTensorType>();
    int64_t H = attnType.getDimSize(1), Dv = attnType.getDimSize(3);
    if (spec.packed) // back to tokens [Tq, H, Dv]
      out = builder.create<mlir::attn::PackOp>(
          l,
          outProject ? RankedTensorType::get({ShapedType::kDynamicSize, H, Dv},
                                             builder.getF32Type())
                     : kernel.resultTypes[0].cast<RankedTensorType>(),
          out, kernel.values["cu_seqlens_q"]);
    if (outProject) {
      auto merged = spec.packed ? RankedTensorType::get({ShapedType::kDynamicSize, H * Dv},
                                                        builder.getF32Type())
                                : RankedTensorType::get({attnType.getDimSize(0),
                                                         attnType.getDimSize(2), H * Dv},
                                                        builder.getF32Type());
      Value m = builder.create<mlir::attn::MergeHeadsOp>(l, merged, out);
      out = builder.create<mlir::attn::ProjectOp>(l, kernel.resultTypes[0], m,
                                                  kernel.values["w_o"],
                                                  spec.projBias.o ? kernel.values["b_o"] : Value());
    }
    SmallVector<Value> results{out};
    if (spec.outputWeights)
      results.push_back(p);
    if (spec.outputLse) {
      Type lseType;
      for (const ArgSpec &arg : kernel.args)
        if (arg.isOutput && arg.name == "lse")
          lseType = computeType(arg, spec.layout);
      if (spec.packed) {
        auto rows = RankedTensorType::get({sType.getDimSize(0), sType.getDimSize(1),
                                           sType.getDimSize(2)},
                                          builder.getF32Type());
        Value lse = builder.create<mlir::attn::LogSumExpOp>(l, rows, s);
        results.push_back(builder.create<mlir::attn::PackOp>(l, lseType, lse,
                                                             kernel.values["cu_seqlens_q"]));
      } else {
        results.push_back(builder.create<mlir::attn::LogSumExpOp>(l, lseType, s));
      }
    }
    // 16-bit results: rounded once, to nearest even (arith.truncf).
    FunctionType funcType = cast<FuncOp>(builder.getBlock()->getParentOp()).getType();
    for (unsigned n = 0; n < results.size(); ++n)
      if (results[n].getType() != funcType.getResult(n))
        results[n] = builder.create<arith::TruncFOp>(l, funcType.getResult(n), results[n]);
    builder.create<ReturnOp>(l, results);
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
