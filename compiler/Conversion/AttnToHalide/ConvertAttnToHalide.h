//===- ConvertAttnToHalide.h - attn.attention to the back end's input -*- C++ -*-===//
//
// convert-attn-to-halide: reads the fused attn.attention op of each kernel
// function, after the pass pipeline, into the Halide back end's
// AttentionConfig. The attention semantics (score, scale and where it
// applies, softcap, bias, masks, key interval) come from the op; the memory
// contract (argument names, layout, size names) from the kernel's KernelSpec.
// Custom expressions become ExprBuilders that read the module's regions:
// keep the module (and its context) alive until the back end has built.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <vector>

namespace attnc {

mlir::LogicalResult convertAttnToHalide(mlir::ModuleOp module,
                                        const std::vector<KernelSpec> &specs,
                                        std::vector<halide_backend::AttentionConfig> &configs);

} // namespace attnc
