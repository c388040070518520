//===- AlignedStackScalars.h - one-element stack buffers read as vectors -*- C++ -*-===//
//
// Halide 14's code generation aligns a stack allocation to the native vector
// width only when it holds more than one element, yet it takes every
// internal buffer to be vector-aligned when it emits a vector access to it:
// a product tile of one column (the additive score's W_q q with hidden = 1,
// one query row) is a 4-byte alloca read by a masked 16-lane load declared
// 64-byte aligned. LLVM may then emit `vmovaps ... {k1}`, which faults on
// an unaligned address whatever the mask (it did under ASan, whose stack
// frames moved the buffer); the plain build scalarized the load by luck.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

namespace attnc::halide_backend {

/// A custom lowering pass: a stack allocation of one element that the code
/// reads or writes as a vector is allocated as two elements, which Halide
/// aligns to the native vector width.
Halide::Internal::IRMutator *newAlignedStackScalarsPass();

} // namespace attnc::halide_backend
