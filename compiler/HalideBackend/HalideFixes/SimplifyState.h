//===- SimplifyState.h - The fields of Halide 14's Simplify that fixes touch ===//
//
// Simplify is an internal class that Halide.h does not declare. The fixes
// that wrap its visitors (SimplifyFor.cpp, PredicatedAccesses.cpp) reach its
// `bounds_and_alignment_info` by offset. The member's offset (0x40: two
// bools, then `Scope<VarInfo> var_info`) and ExprInfo's layout are Halide
// v14.0.0's src/Simplify_Internal.h, checked against libHalide14's code
// (`lea 0x40(%r15)` before its pop in Simplify::visit(const For *)); unit
// HalideFixes.UnreachableLoopKeepsItsBoundsToItself fails if they differ.
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <cstddef>
#include <cstdint>

namespace attnc::halide_backend::fixes {

/// Simplify::ExprInfo of Halide 14.0.0, field for field.
struct ExprInfo14 {
  int64_t min = 0, max = 0;
  bool min_defined = false, max_defined = false;
  Halide::Internal::ModulusRemainder alignment;
};

/// The simplifier's known bounds and alignments, by name: those of loop
/// variables and lets, and `NAME.total_extent_bytes` of allocations.
inline Halide::Internal::Scope<ExprInfo14> &boundsAndAlignmentInfo(void *simplify) {
  constexpr size_t offset = 0x40;
  return *reinterpret_cast<Halide::Internal::Scope<ExprInfo14> *>(static_cast<char *>(simplify) +
                                                                   offset);
}

} // namespace attnc::halide_backend::fixes
