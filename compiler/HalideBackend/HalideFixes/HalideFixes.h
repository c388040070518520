//===- HalideFixes.h - Corrections to libHalide14 linked into attnc -------===//
//
// Files in this folder define functions of libHalide14 again, corrected; the
// library calls them through its PLT, so these definitions replace its own
// (see each file). The back end is a static library: emitKernel calls
// linkHalideFixes() so that the linker keeps them.
//===----------------------------------------------------------------------===//
#pragma once

namespace attnc::halide_backend {
namespace fixes {
/// One per file of this folder: referenced, they keep its object linked.
void anchorSolveExpression();
void anchorSimplifyIfThenElse();
} // namespace fixes

/// Does nothing; referencing it links this folder's replacements.
inline void linkHalideFixes() {
  fixes::anchorSolveExpression();
  fixes::anchorSimplifyIfThenElse();
}
} // namespace attnc::halide_backend
