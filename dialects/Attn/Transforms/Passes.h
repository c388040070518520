//===- Passes.h - Passes of the attn dialect --------------------*- C++ -*-===//
//
// Constructors and registration of the attn passes (see Passes.td).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::attn {

std::unique_ptr<Pass> createFuseAttentionPass();
std::unique_ptr<Pass> createAnalyzeMaskPass();
std::unique_ptr<Pass> createFoldScaleIntoQueryPass();
std::unique_ptr<Pass> createVerifyLoweringPass();

#define GEN_PASS_REGISTRATION
#include "dialects/Attn/Transforms/Passes.h.inc"

} // namespace mlir::attn
