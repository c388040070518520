//===- Passes.td - Passes of the attn dialect ---------------*- tablegen -*-===//
//
// Each pass has one flag `attn-<verb>-<noun>`, one .cpp file and one lit test
// named after its flag. The default order is written in compiler/Pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_PASSES_TD
#define ATTN_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnFuseAttention : Pass<"attn-fuse-attention", "FuncOp"> {
  let summary = "Fuse score -> scale -> softcap -> bias -> mask -> softmax -> weighted_sum into attn.attention";
  let constructor = "mlir::attn::createFuseAttentionPass()";
}

def AttnAnalyzeMask : Pass<"attn-analyze-mask", "FuncOp"> {
  let summary = "Record the visible key interval [lo(i), hi(i)) of interval masks on attn.attention";
  let constructor = "mlir::attn::createAnalyzeMaskPass()";
}

def AttnFoldScaleIntoQuery : Pass<"attn-fold-scale-into-query", "FuncOp"> {
  let summary = "Apply the score scale to the queries when that takes fewer multiplies";
  let constructor = "mlir::attn::createFoldScaleIntoQueryPass()";
}

def AttnVerifyLowering : Pass<"attn-verify-lowering", "FuncOp"> {
  let summary = "Check that a kernel is ready for the Halide lowering: one attn.attention, nothing unfused";
  let constructor = "mlir::attn::createVerifyLoweringPass()";
}

#endif // ATTN_PASSES_TD
