//===- Pipeline.h - The attn pass pipeline, written once -------*- C++ -*-===//
//
// The default order of the attn passes, used by attnc (--emit=mlir-opt and
// every later stage) and by attnc-opt (--attn-default-pipeline).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Pass/PassManager.h"

namespace attnc {

/// canonicalize -> attn-fuse-attention -> attn-analyze-mask ->
/// attn-fold-scale-into-query -> attn-verify-lowering.
void buildDefaultPipeline(mlir::OpPassManager &pm);

/// Registers the attn passes and the `attn-default-pipeline` pipeline.
void registerAttncPasses();

} // namespace attnc
