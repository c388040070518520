//===- ConvertAttnToHalide.cpp - attn.attention to the back end's input ---===//
//
// One AttentionConfig per kernel function, built from what the optimized IR
// says and nothing else: the argument contract (`attn.arguments`, read by
// ReadContract.cpp), layout (`attn.layout`), sizes (the attention op's
// operand types), score kind and hidden size, scale and where it applies,
// softcap, bias, mask terms and windows, key interval, outputs (weights /
// lse results of the fused op), projections (traced through rotary /
// positions / project / split_heads / merge_heads) and the custom expression regions
// (translated to owned graphs by RegionToHalide.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/AttnToHalide/ConvertAttnToHalide.h"
#include "compiler/Conversion/AttnToHalide/ReadContract.h"
#include "compiler/Conversion/AttnToHalide/RegionToHalide.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arithmetic/IR/Arithmetic.h"
#include "mlir/Dialect/StandardOps/IR/Ops.h"

#include <functional>

using namespace mlir;

namespace attnc {

/// `argName` names a function argument by its contract name.
static halide_backend::KeyInterval
keyInterval(attn::AttentionOp op, const std::function<std::string(Value)> &argName) {
  using halide_backend::KeyBound;
  halide_backend::KeyInterval interval;
  if (auto lo = op.getKeyLoOffset())
    interval.lo = {KeyBound::RelativeToIp, (int64_t)*lo};
  if (auto hi = op.getKeyHiOffset())
    interval.hi = {KeyBound::RelativeToIp, (int64_t)*hi};
  // A bound j < t[b] is passed on only when t is the `valid_len` argument:
  // the back end bounds keys by that argument alone. For a declared input
  // (an expression mask `j < lens[b]`) the element test of the term keeps
  // the result exact; only the key-block skipping is lost.
  else if (auto input = op.getKeyHiInput())
    if (argName(op.getExtra()[*input]) == "valid_len")
      interval.hi = {KeyBound::ValidLen, 0};
  return interval;
}

/// Result `n` of a kernel as computed: a 16-bit result is returned through
/// the arith.truncf that rounds it.
static Value returnedValue(FuncOp func, unsigned n) {
  Value v = cast<ReturnOp>(func.front().getTerminator()).getOperand(n);
  if (auto rounded = v.getDefiningOp<arith::TruncFOp>())
    return rounded.getIn();
  return v;
}

/// Storage types: a 16-bit argument may only be widened by arith.extf (to
/// f32), and a 16-bit result only be an arith.truncf of an f32 value, so
/// the back end's widen-on-load and round-once-on-store are what the IR says.
static LogicalResult checkStorageTypes(FuncOp func) {
  auto isHalf = [](Type t) {
    Type e = t.cast<ShapedType>().getElementType();
    return e.isF16() || e.isBF16();
  };
  for (BlockArgument arg : func.getArguments()) {
    if (!isHalf(arg.getType()))
      continue;
    for (Operation *user : arg.getUsers()) {
      if (auto cache = dyn_cast<attn::CacheOp>(user))
        if (cache.getCache() == arg)
          continue; // a cache is read and written in its storage type
      auto widen = dyn_cast<arith::ExtFOp>(user);
      if (!widen || !widen.getType().cast<ShapedType>().getElementType().isF32())
        return user->emitOpError("reads the 16-bit argument #")
               << arg.getArgNumber() << "; 16-bit arguments must be widened to f32 by "
               << "arith.extf first";
    }
  }
  for (unsigned n = 0; n < func.getNumResults(); ++n) {
    Value v = cast<ReturnOp>(func.front().getTerminator()).getOperand(n);
    auto rounded = v.getDefiningOp<arith::TruncFOp>();
    if (isHalf(func.getType().getResult(n)) !=
        (rounded && rounded.getIn().getType().cast<ShapedType>().getElementType().isF32()))
      return func.emitError("kernel '")
             << func.getName() << "': result " << n
             << (rounded ? " is rounded by arith.truncf but is not 16-bit"
                         : " is 16-bit and must be an arith.truncf of an f32 tensor");
  }
  return success();
}

namespace {

/// Reads the projections around the fused op into the back end's project
/// kind, checking that every tensor it binds by name is that argument.
class ProjectionReader {
public:
  ProjectionReader(FuncOp func, const KernelContract &contract)
      : func(func), contract(contract) {}

  /// The contract name of a function argument, or "" for another value. A
  /// 16-bit argument is read through the arith.extf that widens it.
  std::string argName(Value v) {
    if (auto widened = v.getDefiningOp<arith::ExtFOp>())
      v = widened.getIn();
    auto arg = v.dyn_cast<BlockArgument>();
    if (!arg || arg.getOwner() != &func.front() || arg.getArgNumber() >= func.getNumArguments())
      return "";
    return contract.inputName(arg.getArgNumber());
  }

  /// q/k/v: split_heads(project(positions?(x), w, b?)), or a plain argument.
  LogicalResult readInput(Value v, const char *weight, const char *bias, bool &hasBias,
                          Value &source, halide_backend::KernelDesc &spec) {
    auto split = v.getDefiningOp<attn::SplitHeadsOp>();
    if (!split) {
      source = {};
      return success();
    }
    auto project = split.getInput().getDefiningOp<attn::ProjectOp>();
    if (!project)
      return split.emitOpError("must split the heads of an attn.project to be lowered");
    if (argName(project.getWeight()) != weight)
      return project.emitOpError("weight must be the kernel argument '") << weight << "'";
    if (project.getBias() && argName(project.getBias()) != bias)
      return project.emitOpError("bias must be the kernel argument '") << bias << "'";
    hasBias = (bool)project.getBias();
    Value x = project.getInput();
    bool positioned = false;
    if (auto pos = x.getDefiningOp<attn::PositionsOp>()) {
      positioned = true;
      x = pos.getInput();
    }
    spec.positional = positioned ? PositionalKind::Sinusoidal : PositionalKind::None;
    if (argName(x).empty())
      return project.emitOpError("input must be a kernel argument (x, x_q or x_kv)");
    // w : [N, M]: its columns are the projected input's width.
    int64_t width = project.getWeight().getType().cast<RankedTensorType>().getDimSize(1);
    if (std::string(weight) == "w_q")
      spec.modelDim = width;
    else
      spec.kvModelDim = width;
    source = x;
    return success();
  }

  /// KV caches: k and v are attn.cache appends of the new rows to the
  /// kernel arguments k_cache and v_cache, by cache_len (and block_table),
  /// both of one kind; or neither. `k` and `v` become the new rows.
  LogicalResult readCache(attn::AttentionOp op, Value &k, Value &v,
                          halide_backend::KernelDesc &spec) {
    auto ck = k.getDefiningOp<attn::CacheOp>(), cv = v.getDefiningOp<attn::CacheOp>();
    spec.cache = {};
    if (!ck && !cv)
      return success();
    if (!ck || !cv)
      return op.emitOpError("k and v must both be attn.cache appends, or neither");
    if (argName(ck.getCache()) != "k_cache" || argName(cv.getCache()) != "v_cache")
      return op.emitOpError("k must be appended to the kernel argument 'k_cache' and v to "
                            "'v_cache'");
    for (attn::CacheOp c : {ck, cv})
      if (argName(c.getCacheLen()) != "cache_len" ||
          (c.getBlockTable() && argName(c.getBlockTable()) != "block_table"))
        return c.emitOpError("must read the kernel arguments 'cache_len' and 'block_table'");
    if (ck.getKind() != cv.getKind() || ck.getBlock() != cv.getBlock())
      return op.emitOpError("k and v caches must be of one kind and block size");
    bool paged = ck.getKind() == attn::CacheKind::paged;
    spec.cache = {paged ? CacheKind::Paged : CacheKind::Contiguous,
                  paged ? (int64_t)*ck.getBlock() : 0};
    auto cacheType = ck.getCache().getType().cast<RankedTensorType>();
    spec.seqK = paged || cacheType.isDynamicDim(2) ? 0 : cacheType.getDimSize(2); // Lmax
    k = ck.getRows();
    v = cv.getRows();
    return success();
  }

  /// Rotary embeddings: attn.rotary on both q (rows = queries) and k (rows =
  /// keys, or queries when k holds a cache's new rows) with one base, style
  /// and dims, or on neither. `q` and `k` become the values they turn.
  LogicalResult readRotary(attn::AttentionOp op, Value &q, Value &k, bool &rotary,
                           halide_backend::KernelDesc &spec) {
    auto rq = q.getDefiningOp<attn::RotaryOp>(), rk = k.getDefiningOp<attn::RotaryOp>();
    rotary = rq || rk;
    if (!rotary)
      return success();
    if (!rq || !rk)
      return op.emitOpError("rotary embeddings must turn both q and k");
    attn::RotaryRows keyRows =
        spec.cache.any() ? attn::RotaryRows::queries : attn::RotaryRows::keys;
    if (rq.getRows() != attn::RotaryRows::queries || rk.getRows() != keyRows)
      return op.emitOpError(spec.cache.any()
                                ? "q and the new keys of a cache must be turned at the "
                                  "queries' positions"
                                : "q must be turned at the queries' positions and k at the "
                                  "keys'");
    if (rq.getBase() != rk.getBase() || rq.getStyle() != rk.getStyle() ||
        rq.getDims() != rk.getDims())
      return op.emitOpError("q and k must be turned with the same base, style and dims");
    spec.rotary.base = rq.getBase().convertToDouble();
    spec.rotary.style = *parseRotaryStyle(attn::stringifyRotaryStyle(rq.getStyle()).str());
    spec.rotary.dims = (long)rq.getDims();
    q = rq.getInput();
    k = rk.getInput();
    return success();
  }

  /// Packed batches: q, k and v are attn.sequences views of the arguments
  /// by cu_seqlens_q (q) and cu_seqlens_k (k, v), and every result is
  /// attn.pack'ed by cu_seqlens_q; or none of this. The values become the
  /// viewed tokens.
  LogicalResult readPacked(attn::AttentionOp op, Value &q, Value &k, Value &v,
                           halide_backend::KernelDesc &spec) {
    auto sq = q.getDefiningOp<attn::SequencesOp>(), sk = k.getDefiningOp<attn::SequencesOp>(),
         sv = v.getDefiningOp<attn::SequencesOp>();
    spec.packed = sq || sk || sv;
    if (!spec.packed)
      return success();
    if (!sq || !sk || !sv)
      return op.emitOpError("q, k and v must all be attn.sequences views, or none");
    if (argName(sq.getCuSeqlens()) != "cu_seqlens_q" ||
        argName(sk.getCuSeqlens()) != "cu_seqlens_k" ||
        argName(sv.getCuSeqlens()) != "cu_seqlens_k")
      return op.emitOpError("q must be viewed by the kernel argument 'cu_seqlens_q', k and v "
                            "by 'cu_seqlens_k'");
    for (unsigned n = 0; n < op.getNumResults(); ++n) {
      Value returned = returnedValue(func, n);
      // The output projection runs on the packed tokens: project(merge_heads(pack(out))).
      if (auto project = returned.getDefiningOp<attn::ProjectOp>())
        if (auto merge = project.getInput().getDefiningOp<attn::MergeHeadsOp>())
          returned = merge.getInput();
      auto pack = returned.getDefiningOp<attn::PackOp>();
      if (!pack || pack.getInput() != op.getResult(n) ||
          argName(pack.getCuSeqlens()) != "cu_seqlens_q")
        return op.emitOpError("result #") << n << " must be returned through attn.pack by "
                                          << "'cu_seqlens_q'";
    }
    q = sq.getInput();
    k = sk.getInput();
    v = sv.getInput();
    return success();
  }

  LogicalResult read(attn::AttentionOp op, halide_backend::KernelDesc &spec) {
    Value xq, xk, xv;
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    bool rotary = false;
    spec.projBias = {};
    if (failed(readCache(op, k, v, spec)) || failed(readRotary(op, q, k, rotary, spec)) ||
        failed(readPacked(op, q, k, v, spec)) ||
        failed(readInput(q, "w_q", "b_q", spec.projBias.q, xq, spec)) ||
        failed(readInput(k, "w_k", "b_k", spec.projBias.k, xk, spec)) ||
        failed(readInput(v, "w_v", "b_v", spec.projBias.v, xv, spec)))
      return failure();
    if (spec.cache.any() && spec.positional == PositionalKind::Sinusoidal)
      return op.emitOpError("sinusoidal positions would number a cache's new tokens from 0: "
                            "not supported");
    if (rotary) {
      if (spec.positional == PositionalKind::Sinusoidal)
        return op.emitOpError("sinusoidal positions and rotary embeddings exclude each other");
      spec.positional = PositionalKind::Rotary;
    }
    if (!xq && !xk && !xv) {
      const std::pair<Value, const char *> data[] = {{q, "q"}, {k, "k"}, {v, "v"}};
      for (const auto &[value, name] : data)
        if (argName(value) != name)
          return op.emitOpError("operand '") << name << "' must be the kernel argument '"
                                             << name << "'";
      spec.project = ProjectKind::None;
      spec.projBias = {};
      spec.positional = rotary ? PositionalKind::Rotary : PositionalKind::None;
      return success();
    }
    if (!xq || !xk || !xv || xk != xv)
      return op.emitOpError("q, k and v must all be projected, k and v from one input");
    bool self = xq == xk;
    if (self ? argName(xq) != "x" : argName(xq) != "x_q" || argName(xk) != "x_kv")
      return op.emitOpError(self ? "projects one input, which must be the kernel argument 'x'"
                                 : "projects two inputs, which must be the kernel arguments "
                                   "'x_q' and 'x_kv'");
    // The output projection: return project(merge_heads(out), w_o, b_o?).
    bool outProject = false;
    if (auto project = returnedValue(func, 0).getDefiningOp<attn::ProjectOp>()) {
      auto merge = project.getInput().getDefiningOp<attn::MergeHeadsOp>();
      Value merged = merge ? merge.getInput() : Value();
      if (auto pack = merged ? merged.getDefiningOp<attn::PackOp>() : attn::PackOp())
        merged = pack.getInput(); // packed tokens (checked by readPacked)
      if (!merge || merged != op.getResults()[0])
        return project.emitOpError("output projection must read merge_heads of the attention");
      if (argName(project.getWeight()) != "w_o")
        return project.emitOpError("weight must be the kernel argument 'w_o'");
      if (project.getBias() && argName(project.getBias()) != "b_o")
        return project.emitOpError("bias must be the kernel argument 'b_o'");
      spec.projBias.o = (bool)project.getBias();
      outProject = true;
    }
    spec.project = self ? (outProject ? ProjectKind::SelfQKVOut : ProjectKind::SelfQKV)
                        : (outProject ? ProjectKind::QKVOut : ProjectKind::QKV);
    return success();
  }

private:
  FuncOp func;
  const KernelContract &contract;
};

} // namespace

/// The kinds of the fused op: the dialect's enums to the back end's, by
/// their shared spelling (AttnKinds.h checks both name every kind).
static LogicalResult readKinds(attn::AttentionOp op, halide_backend::KernelDesc &out) {
  out.score = *parseScoreKind(attn::stringifyScoreKind(op.getScore()).str());
  out.bias = BiasKind::None;
  if (op.getBias())
    out.bias = *parseBiasKind(attn::stringifyBiasKind(*op.getBias()).str());
  for (attn::MaskKind kind : op.getMaskKinds()) {
    halide_backend::MaskTermDesc term;
    term.kind = *parseMaskKind(attn::stringifyMaskKind(kind).str());
    if (const char *attr = kindInfo(term.kind).widthAttr)
      term.width = op->getAttrOfType<IntegerAttr>(attr).getInt(); // verified present
    out.masks.push_back(std::move(term));
  }
  if (auto groups = op.getMaskGroups()) {
    // Per term (the IR) to per group (the back end).
    for (size_t t = 0; t < groups->size(); ++t)
      for (Attribute g : (*groups)[t].cast<ArrayAttr>()) {
        size_t group = (size_t)g.cast<IntegerAttr>().getInt();
        if (out.maskGroups.size() <= group)
          out.maskGroups.resize(group + 1);
        out.maskGroups[group].push_back((int)t);
      }
  }
  return success();
}

/// Sizes from the attention op's operand types: q [B, H, Lq, D], k [B, G,
/// Lk, Dk], v [B, G, Lk, Dv]; a dynamic size is 0.
static void readSizes(attn::AttentionOp op, halide_backend::KernelDesc &out) {
  auto q = op.getQuery().getType().cast<RankedTensorType>();
  auto k = op.getKey().getType().cast<RankedTensorType>();
  auto v = op.getValue().getType().cast<RankedTensorType>();
  auto fixed = [](RankedTensorType t, unsigned d) {
    return t.isDynamicDim(d) ? (int64_t)0 : t.getDimSize(d);
  };
  out.batch = fixed(q, 0);
  out.heads = fixed(q, 1);
  out.seqQ = fixed(q, 2);
  out.headDim = fixed(q, 3);
  out.kvHeads = fixed(k, 1);
  out.seqK = fixed(k, 2);
  out.keyDim = fixed(k, 3);
  out.valueDim = fixed(v, 3);
}

/// The arguments a kind reads by name, which the back end binds by name.
static LogicalResult checkNamedArguments(FuncOp func, const halide_backend::KernelDesc &k,
                                         const KernelContract &contract) {
  std::vector<const char *> needed;
  if (k.score == ScoreKind::General)
    needed = {"score_w"};
  if (k.score == ScoreKind::Additive)
    needed = {"score_wq", "score_wk", "score_wv"};
  for (const MaskKindInfo &mask : kMaskKinds)
    if (mask.hasInput && k.hasMask(mask.kind))
      needed.push_back(mask.input.name);
  for (const char *name : needed)
    if (!contract.has(name))
      return func.emitError("kernel '") << func.getName() << "' needs the argument '" << name
                                        << "' in 'attn.arguments'";
  return success();
}

static LogicalResult convertKernel(FuncOp func, halide_backend::AttentionConfig &config) {
  std::string name = func.getName().str();
  attn::AttentionOp op;
  unsigned fused = 0;
  func.walk([&](attn::AttentionOp found) {
    op = found;
    ++fused;
  });
  if (!op)
    return func.emitError("no attn.attention to lower in kernel '") << name << "'";
  if (fused > 1)
    return func.emitError("kernel '") << name << "' has " << fused
                                      << " attn.attention ops; the back end builds one";

  KernelContract contract;
  if (failed(readContract(func, contract)) || failed(checkStorageTypes(func)))
    return failure();
  config.name = name;
  config.arguments = contract.arguments;
  halide_backend::KernelDesc &out = config.kernel;

  auto layout = func->getAttrOfType<StringAttr>("attn.layout");
  Optional<Layout> parsedLayout;
  if (layout)
    if (auto l = parseLayout(layout.getValue().str()))
      parsedLayout = *l;
  if (!parsedLayout)
    return func.emitError("kernel '") << name << "' needs 'attn.layout' = \"bhsd\" or \"bshd\"";
  out.layout = *parsedLayout;
  out.seqKIsSeqQ = func->hasAttr("attn.seq_k_is_seq_q");

  readSizes(op, out);
  if (failed(readKinds(op, out)))
    return failure();
  if (auto hidden = op.getHidden())
    out.additiveHidden = (int64_t)*hidden;
  if (auto cap = op.getSoftcap())
    out.softcap = cap->convertToDouble();
  // Outputs: weights is the rank-4 result after out, lse the rank-3 one.
  for (Value result : op.getResults().drop_front()) {
    int64_t rank = result.getType().cast<RankedTensorType>().getRank();
    (rank == 4 ? out.outputWeights : out.outputLse) = true;
  }
  // Results are out, then weights and/or lse, as the fused op returns them.
  for (unsigned n = 0; n < func.getNumResults(); ++n) {
    const std::string &result = contract.arguments[func.getNumArguments() + n].name;
    int64_t rank = func.getType().getResult(n).cast<RankedTensorType>().getRank();
    const char *expected = n == 0 ? "out" : rank == 4 ? "weights" : "lse";
    if (result != expected)
      return func.emitError("kernel '") << name << "': result " << n << " is named '" << result
                                        << "' in 'attn.arguments'; expected '" << expected << "'";
  }
  if (func.getNumResults() != op.getNumResults())
    return func.emitError("kernel '") << name << "' returns " << func.getNumResults()
                                      << " values but its attn.attention has "
                                      << op.getNumResults() << " results";
  out.dtype = contract.arguments[func.getNumArguments()].type; // out's
  out.kvDtype = contract.has("k") ? contract.find("k")->type : out.dtype;
  for (size_t n = 0; n < contract.arguments.size(); ++n)
    if (contract.roles[n] == "declared")
      out.inputs.push_back({contract.arguments[n].name, contract.arguments[n].type,
                            contract.arguments[n].shape});

  ProjectionReader projections(func, contract);
  if (failed(projections.read(op, out)) || failed(checkNamedArguments(func, out, contract)))
    return failure();
  // Every result is the fused op's, as computed: only the output projection
  // and the packing (read above) may stand between them.
  for (unsigned n = 0; n < func.getNumResults(); ++n) {
    Value returned = returnedValue(func, n);
    if (returned != op.getResult(n) && !(n == 0 && out.outputProjected()) && !out.packed)
      return func.emitError("kernel '") << name << "': result " << n
                                        << " must be result " << n << " of the attn.attention";
  }
  if (out.seqKIsSeqQ && out.selfAttention() == false && out.seqK != out.seqQ)
    return func.emitError("kernel '") << name << "': 'attn.seq_k_is_seq_q' but keys have "
                                      << out.seqK << " rows and queries " << out.seqQ;
  if (out.selfAttention() || out.seqKIsSeqQ)
    out.seqKIsSeqQ = true;

  config.scale = op.getScale().convertToDouble();
  config.scaleOnQuery = op.getScaleOnQuery();
  config.interval =
      keyInterval(op, [&](Value v) { return projections.argName(v); });
  config.maskNeedsElementTest = op.getMaskNeedsTest();
  // A j < t[b] bound the back end cannot take (t not `valid_len`) must be
  // tested per element.
  if (op.getKeyHiInput() && config.interval.hi.kind != halide_backend::KeyBound::ValidLen &&
      projections.argName(op.getExtra()[*op.getKeyHiInput()]) != "valid_len")
    config.maskNeedsElementTest = true;

  // Custom expressions: the regions, translated into owned graphs.
  std::map<void *, std::string> tensorNames;
  for (unsigned a = 0; a < func.getNumArguments(); ++a)
    if (contract.roles[a] == "declared")
      tensorNames[func.getArgument(a).getAsOpaquePointer()] = contract.inputName(a);
  if (out.score == ScoreKind::Custom) {
    auto graph = translateExprRegion(op.getScoreBody(), tensorNames);
    if (failed(graph))
      return failure();
    config.customScore = std::move(*graph);
  }
  if (out.bias == BiasKind::Custom) {
    auto graph = translateExprRegion(op.getBiasBody(), tensorNames);
    if (failed(graph))
      return failure();
    config.customBias = std::move(*graph);
  }
  auto body = op.getMaskBodies().begin(), bodiesEnd = op.getMaskBodies().end();
  for (halide_backend::MaskTermDesc &term : out.masks) {
    if (term.kind != MaskKind::Custom)
      continue;
    if (body == bodiesEnd)
      return op.emitOpError("has more custom masks than mask regions");
    auto graph = translateExprRegion(*body++, tensorNames);
    if (failed(graph))
      return failure();
    term.expr = std::move(*graph);
  }
  return success();
}

LogicalResult convertAttnToHalide(ModuleOp module,
                                  std::vector<halide_backend::AttentionConfig> &configs) {
  for (FuncOp func : module.getOps<FuncOp>()) {
    halide_backend::AttentionConfig config;
    if (failed(convertKernel(func, config)))
      return failure();
    configs.push_back(config);
    if (func->hasAttr("attn.backward")) {
      // NAME_backward: the same kernel, differentiated (docs/language.md, training).
      config.name += "_backward";
      config.backward = true;
      config.arguments = backwardArguments(config.arguments);
      if (config.arguments.empty())
        return func.emitError("kernel '") << func.getName()
                                          << "' has 'attn.backward' but does not return "
                                             "'out' and 'lse'";
      configs.push_back(std::move(config));
    }
  }
  if (configs.empty())
    return module.emitError("no kernel function to lower");
  return success();
}

} // namespace attnc
