//===- ConvertAttnToHalide.cpp - attn.attention to the back end's input ---===//
//
// One AttentionConfig per kernel function. Each field the passes may have
// changed is read from the fused op, so the back end builds exactly what the
// optimized IR says.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/AttnToHalide/ConvertAttnToHalide.h"

#include "dialects/Attn/IR/AttnOps.h"

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

static halide_backend::KeyInterval keyInterval(attn::AttentionOp op) {
  using halide_backend::KeyBound;
  halide_backend::KeyInterval interval;
  if (auto lo = op.getKeyLoOffset())
    interval.lo = {KeyBound::RelativeToIp, (int64_t)*lo};
  if (auto hi = op.getKeyHiOffset())
    interval.hi = {KeyBound::RelativeToIp, (int64_t)*hi};
  else if (op.getKeyHiValidLen())
    interval.hi = {KeyBound::ValidLen, 0};
  return interval;
}

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
  config.spec.score = *score;
  config.spec.scale = op.getScale().convertToDouble();
  config.spec.softcap.reset();
  if (auto cap = op.getSoftcap())
    config.spec.softcap = cap->convertToDouble();
  config.arguments = kernelArguments(config.spec);
  config.scale = op.getScale().convertToDouble();
  config.scaleOnQuery = op.getScaleOnQuery();
  config.interval = keyInterval(op);
  config.maskNeedsElementTest = op.getMaskNeedsTest();
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
