//===- OpaqueClampedIndices.h - clamped indices hidden from LSR --*- C++ -*-===//
//
// A kernel with run-time sizes reads its rows at clamped indices
// (max(min(j, Lk - 1), 0): whole micro-kernels of keys read past Lk, and
// block_score masks them), which reach LLVM as sign-extended min/max
// chains. Code generation's loop strength reduction builds and re-proves
// the scalar evolution of every address in a loop (range analysis and
// implied conditions through each sext of a min/max), for each of a
// micro-kernel's rows: in a dynamic prefill tile it was 77% of the code
// generation (0.23 of 0.30 s CPU), in none of the fixed-size kernels. The
// optimisation pipeline has run by then, so only code generation sees a
// freeze between the clamp and its sign extension: the row index becomes an
// opaque value, the same machine code comes out (the Q.K^T and P.V loops
// instruction for instruction), and LSR's work goes.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace llvm {
class Module;
}

namespace attnc::halide_backend {

/// Freezes the operand of every 32- to 64-bit sign extension whose value is
/// a min/max chain (selects, min/max intrinsics, and integer arithmetic on
/// them, a few levels deep). Run after Halide's optimisation, before code
/// generation.
void hideClampedIndicesFromLSR(llvm::Module &module);

} // namespace attnc::halide_backend
