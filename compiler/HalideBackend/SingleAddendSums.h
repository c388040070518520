//===- SingleAddendSums.h - sums of one addend stored directly -----*- C++ -*-===//
//
// Decode's scores are dot products reduced in vector lanes (rfactor) and then
// added, once per key and row, to a score buffer Halide first fills with
// zeros: per key a strided load of the rows' zeros, an add and a strided store
// (about ten instructions of the ~130 a key costs a core, f32 or 16-bit K/V).
// Each element is written exactly once, so x + 0 is x: this pass stores the
// reduced value itself. (A sum of products that is -0.0 becomes -0.0 instead
// of +0.0; every score then goes through exp or a comparison, where the sign
// of a zero does not matter.)
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <string>

namespace attnc::halide_backend {

/// A custom lowering pass: every store to `buffer` whose value is a
/// VectorReduce plus a load of the same buffer at the same index (and
/// predicate) stores the VectorReduce alone. Only for buffers whose update
/// writes each element once after a pure stage of zeros.
Halide::Internal::IRMutator *newSingleAddendSumsPass(std::string buffer);

} // namespace attnc::halide_backend
