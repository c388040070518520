//===- ConvertAttnToHalide.h - attn.attention to the back end's input -*- C++ -*-===//
//
// convert-attn-to-halide: reads each kernel function of the optimized IR
// into the Halide back end's AttentionConfig, from the IR alone: the
// argument contract (`attn.arguments`), the layout (`attn.layout`), the
// sizes (tensor types), the fused attn.attention op's fields and the
// projections around it. Custom expression regions become owned graphs, so
// the module may be destroyed once this returns.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <vector>

namespace attnc {

/// One config per function of `module`, in order. Emits a located error
/// and fails on IR that does not state a kernel the back end can build.
mlir::LogicalResult convertAttnToHalide(mlir::ModuleOp module,
                                        std::vector<halide_backend::AttentionConfig> &configs);

} // namespace attnc
