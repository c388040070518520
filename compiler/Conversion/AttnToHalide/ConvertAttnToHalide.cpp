//===- ConvertAttnToHalide.cpp - attn.attention to the back end's input ---===//
//
// One AttentionConfig per kernel function, built from what the optimized IR
// says: score kind and hidden size, scale and where it applies, softcap,
// bias, mask terms and windows, key interval, outputs (weights / lse results
// of the fused op), projections (traced through positions / project /
// split_heads / merge_heads) and the custom expression regions (translated
// to Halide Exprs by RegionToHalide.cpp). The KernelSpec supplies only what
// the IR does not model: argument names and order, layout, size names and
// which sizes are dynamic, and the declared inputs' shapes.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/AttnToHalide/ConvertAttnToHalide.h"
#include "compiler/Conversion/AttnToHalide/RegionToHalide.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/StandardOps/IR/Ops.h"

#include <functional>

using namespace mlir;

namespace attnc {

static Optional<ScoreKind> scoreKind(StringRef name) {
  const std::pair<const char *, ScoreKind> table[] = {
      {"dot", ScoreKind::Dot},         {"scaled_dot", ScoreKind::ScaledDot},
      {"general", ScoreKind::General}, {"additive", ScoreKind::Additive},
      {"custom", ScoreKind::Custom}};
  for (const auto &row : table)
    if (name == row.first)
      return row.second;
  return llvm::None;
}

static Optional<MaskKind> maskKind(StringRef name) {
  const std::pair<const char *, MaskKind> table[] = {
      {"causal", MaskKind::Causal}, {"valid_len", MaskKind::ValidLen},
      {"window", MaskKind::Window}, {"input", MaskKind::Input},
      {"custom", MaskKind::Custom}};
  for (const auto &row : table)
    if (name == row.first)
      return row.second;
  return llvm::None;
}

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

namespace {

/// Reads the projections around the fused op back into KernelSpec terms.
class ProjectionReader {
public:
  ProjectionReader(FuncOp func, const std::vector<std::string> &inputNames)
      : func(func), inputNames(inputNames) {}

  /// The contract name of a function argument, or "" for another value.
  std::string argName(Value v) {
    auto arg = v.dyn_cast<BlockArgument>();
    if (!arg || arg.getOwner() != &func.front() || arg.getArgNumber() >= inputNames.size())
      return "";
    return inputNames[arg.getArgNumber()];
  }

  /// q/k/v: split_heads(project(positions?(x), w, b?)), or a plain argument.
  LogicalResult readInput(Value v, const char *weight, const char *bias, Value &source,
                          KernelSpec &spec) {
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
    bool hasBias = (bool)project.getBias();
    if (seen && hasBias != spec.projBias)
      return project.emitOpError("projections must all have biases or all have none");
    spec.projBias = hasBias;
    seen = true;
    Value x = project.getInput();
    bool positioned = false;
    if (auto pos = x.getDefiningOp<attn::PositionsOp>()) {
      positioned = true;
      x = pos.getInput();
    }
    spec.positional = positioned ? PositionalKind::Sinusoidal : PositionalKind::None;
    if (argName(x).empty())
      return project.emitOpError("input must be a kernel argument (x, x_q or x_kv)");
    spec.modelDim = project.getWeight().getType().cast<RankedTensorType>().getDimSize(0);
    source = x;
    return success();
  }

  LogicalResult read(attn::AttentionOp op, KernelSpec &spec) {
    Value xq, xk, xv;
    if (failed(readInput(op.getQuery(), "w_q", "b_q", xq, spec)) ||
        failed(readInput(op.getKey(), "w_k", "b_k", xk, spec)) ||
        failed(readInput(op.getValue(), "w_v", "b_v", xv, spec)))
      return failure();
    if (!xq && !xk && !xv) {
      spec.project = ProjectKind::None;
      spec.projBias = false;
      spec.positional = PositionalKind::None;
      return success();
    }
    if (!xq || !xk || !xv || xk != xv)
      return op.emitOpError("q, k and v must all be projected, k and v from one input");
    bool self = xq == xk;
    // The output projection: return project(merge_heads(out), w_o, b_o?).
    bool outProject = false;
    auto ret = cast<ReturnOp>(func.front().getTerminator());
    if (auto project = ret.getOperand(0).getDefiningOp<attn::ProjectOp>()) {
      auto merge = project.getInput().getDefiningOp<attn::MergeHeadsOp>();
      if (!merge || merge.getInput() != op.getResults()[0])
        return project.emitOpError("output projection must read merge_heads of the attention");
      if (argName(project.getWeight()) != "w_o")
        return project.emitOpError("weight must be the kernel argument 'w_o'");
      if ((bool)project.getBias() != spec.projBias)
        return project.emitOpError("projections must all have biases or all have none");
      outProject = true;
    }
    spec.project = self ? (outProject ? ProjectKind::SelfQKVOut : ProjectKind::SelfQKV)
                        : (outProject ? ProjectKind::QKVOut : ProjectKind::QKV);
    return success();
  }

private:
  FuncOp func;
  const std::vector<std::string> &inputNames;
  bool seen = false;
};

} // namespace

static LogicalResult convertKernel(FuncOp func, const KernelSpec &spec,
                                   halide_backend::AttentionConfig &config) {
  attn::AttentionOp op;
  func.walk([&](attn::AttentionOp found) { op = found; });
  if (!op)
    return func.emitError("no attn.attention to lower in kernel '") << spec.name << "'";

  Optional<ScoreKind> score = scoreKind(op.getScore());
  if (!score)
    return op.emitError("unknown score kind '") << op.getScore() << "'";

  config.name = spec.name;
  config.spec = spec;
  KernelSpec &out = config.spec;
  out.score = *score;
  if (auto hidden = op.getHidden())
    out.additiveHidden = (int64_t)*hidden;
  out.scale = op.getScale().convertToDouble();
  out.softcap.reset();
  if (auto cap = op.getSoftcap())
    out.softcap = cap->convertToDouble();
  StringRef bias = op.getBias() ? *op.getBias() : StringRef("none");
  out.bias = bias == "alibi" ? BiasKind::Alibi : bias == "custom" ? BiasKind::Custom
                                                                  : BiasKind::None;
  out.masks.clear();
  for (auto it : llvm::enumerate(op.getMasks())) {
    MaskTerm term{*maskKind(it.value().cast<StringAttr>().getValue()), spec.loc, 0, nullptr};
    // Keep the source term (location, expression text for the header) when
    // the IR still has it in the same place.
    if (it.index() < spec.masks.size() && spec.masks[it.index()].kind == term.kind)
      term = spec.masks[it.index()];
    if (term.kind == MaskKind::Window)
      term.window = (int64_t)op.getWindow().getValueOr(1);
    out.masks.push_back(term);
  }
  // Outputs: weights is the rank-4 result after out, lse the rank-3 one.
  out.outputWeights = out.outputLse = false;
  for (Value result : op.getResults().drop_front()) {
    int64_t rank = result.getType().cast<RankedTensorType>().getRank();
    (rank == 4 ? out.outputWeights : out.outputLse) = true;
  }

  // Argument names come from the contract; check the IR agrees on them.
  std::vector<ArgSpec> contract = kernelArguments(spec);
  std::vector<std::string> inputNames;
  for (const ArgSpec &arg : contract)
    if (!arg.isOutput)
      inputNames.push_back(arg.name);
  ProjectionReader projections(func, inputNames);
  if (failed(projections.read(op, out)))
    return failure();
  config.arguments = kernelArguments(out);
  size_t irInputs = func.getNumArguments(), irOutputs = func.getNumResults();
  size_t inputs = 0;
  for (const ArgSpec &arg : config.arguments)
    inputs += !arg.isOutput;
  if (irInputs != inputs || irOutputs != config.arguments.size() - inputs)
    return func.emitError("kernel '") << spec.name << "': the IR has " << irInputs
                                      << " inputs and " << irOutputs
                                      << " outputs, the argument contract " << inputs
                                      << " and " << config.arguments.size() - inputs;

  config.scale = out.scale;
  config.scaleOnQuery = op.getScaleOnQuery();
  config.interval =
      keyInterval(op, [&](Value v) { return projections.argName(v); });
  config.maskNeedsElementTest = op.getMaskNeedsTest();
  // A j < t[b] bound the back end cannot take (t not `valid_len`) must be
  // tested per element.
  if (op.getKeyHiInput() && config.interval.hi.kind != halide_backend::KeyBound::ValidLen &&
      projections.argName(op.getExtra()[*op.getKeyHiInput()]) != "valid_len")
    config.maskNeedsElementTest = true;

  // Custom expressions: the regions, translated to Halide when built.
  std::map<void *, std::string> tensorNames;
  for (const InputAST &input : spec.inputs)
    for (size_t a = 0; a < inputNames.size(); ++a)
      if (inputNames[a] == input.name)
        tensorNames[func.getArgument(a).getAsOpaquePointer()] = input.name;
  if (out.score == ScoreKind::Custom) {
    auto builder = translateExprRegion(op.getScoreBody(), tensorNames);
    if (failed(builder))
      return failure();
    config.customScore = *builder;
  }
  if (out.bias == BiasKind::Custom) {
    auto builder = translateExprRegion(op.getBiasBody(), tensorNames);
    if (failed(builder))
      return failure();
    config.customBias = *builder;
  }
  for (Region &body : op.getMaskBodies()) {
    auto builder = translateExprRegion(body, tensorNames);
    if (failed(builder))
      return failure();
    config.customMasks.push_back(*builder);
  }
  return success();
}

LogicalResult convertAttnToHalide(ModuleOp module, const std::vector<KernelSpec> &specs,
                                  std::vector<halide_backend::AttentionConfig> &configs) {
  for (const KernelSpec &spec : specs) {
    auto func = module.lookupSymbol<FuncOp>(spec.name);
    if (!func)
      return module.emitError("kernel '") << spec.name << "' is missing from the IR";
    halide_backend::AttentionConfig config;
    if (failed(convertKernel(func, spec, config)))
      return failure();
    configs.push_back(std::move(config));
  }
  return success();
}

} // namespace attnc
