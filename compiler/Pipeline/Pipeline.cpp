//===- Pipeline.cpp - The attn pass pipeline, written once ----------------===//
//
// Canonicalization first folds scales (a scale of 1 disappears, two merge)
// so fusion sees the simplest chain; mask analysis and the scale move then
// annotate the fused op; verification closes the pipeline so the Halide
// lowering only ever sees the fused form.
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipeline/Pipeline.h"

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace attnc {

void buildDefaultPipeline(mlir::OpPassManager &pm) {
  mlir::OpPassManager &func = pm.nest<mlir::FuncOp>();
  func.addPass(mlir::createCanonicalizerPass());
  func.addPass(mlir::attn::createFuseAttentionPass());
  func.addPass(mlir::attn::createAnalyzeMaskPass());
  func.addPass(mlir::attn::createFoldScaleIntoQueryPass());
  func.addPass(mlir::attn::createVerifyLoweringPass());
}

void registerAttncPasses() {
  mlir::attn::registerAttnPasses();
  mlir::PassPipelineRegistration<>("attn-default-pipeline",
                                   "The pass pipeline attnc runs before the Halide lowering",
                                   [](mlir::OpPassManager &pm) { buildDefaultPipeline(pm); });
}

} // namespace attnc
