//===- HalfConversions.h - f16 loads widened by F16C -------------*- C++ -*-===//
//
// Halide 14 widens f16 to f32 with emulated integer code on every x86 target
// (it has no F16C path), about ten operations per vector where F16C's
// vcvtph2ps is one. The algorithm therefore widens f16 through a marker
// call, `attnc_f16_bits_to_f32(uint32 bits)`, which Halide scalarizes into
// one call per lane of each vector; after Halide's LLVM optimisation,
// lowerHalfConversions puts each whole vector back together as one
// `fpext <N x half>` (vcvtph2ps) where the target has F16C, or as the same
// vector integer code elsewhere. A call it cannot regroup (no such vector
// around it) gets the scalar conversion inlined: slower, never wrong.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

namespace llvm {
class Module;
}

namespace attnc::halide_backend {

/// f32 value of the f16 bit patterns in the low 16 bits of `bits`
/// (uint32, any lanes): exact, infinities and NaNs included.
Halide::Expr halfBitsToFloat(const Halide::Expr &bits);

/// Replaces every halfBitsToFloat marker call in `module`, compiled for
/// `target` (see above): F16C where the target's CPU has it
/// (requiredCpuFeatures, TargetDispatch.h).
void lowerHalfConversions(llvm::Module &module, const Halide::Target &target);

} // namespace attnc::halide_backend
