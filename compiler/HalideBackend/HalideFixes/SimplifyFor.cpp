//===- SimplifyFor.cpp - Halide 14's simplifier, a loop's bounds kept inside it ===//
//
// Halide 14's Simplify::visit(const For *) pushes the loop variable's
// bounds (when it knows some) and pops them after the body, except when the
// body turned out unreachable: it then returns early and the bounds stay in
// scope. After loop partitioning, a loop's prologue, steady state and
// epilogue are sibling loops of one variable: an empty prologue (bounds
// [0, -1], so every access is "out of bounds", so unreachable) left its
// bounds to the next loop of that name whose own bounds the simplifier
// could not tell, and that loop's loads were out of bounds too: the whole
// loop nest was dropped. attnc met it in a packed additive backward kernel
// lowered without Halide's asserts (d_kv's sums vanished, d_x was 0; the
// asserts' `extent >= 0` made the steady state's bounds known, which hid
// it). Halide fixed it upstream when the simplifier moved to
// ConstantInterval (a scoped binding, #8222).
//
// libHalide14 calls Simplify::visit(const For *) through its PLT, so this
// definition takes its place (see HalideFixes.h). Simplify is an internal
// class that Halide.h does not declare: this wrapper pushes a marker binding
// of "no bounds known" for the loop variable onto the simplifier's
// `bounds_and_alignment_info` (SimplifyState.h), calls the library's own,
// and pops bindings of that name down to and including the marker.
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"
#include "compiler/HalideBackend/HalideFixes/LibHalideOriginal.h"
#include "compiler/HalideBackend/HalideFixes/SimplifyState.h"

#include <Halide.h>

namespace attnc::halide_backend::fixes {
void anchorSimplifyFor() {}
} // namespace attnc::halide_backend::fixes

// Simplify::visit(const For *), mangled.
#define SIMPLIFY_FOR "_ZN6Halide8Internal8Simplify5visitEPKNS0_3ForE"

namespace {

using attnc::halide_backend::fixes::ExprInfo14;
using Halide::Internal::For;
using Halide::Internal::Stmt;

/// A binding that says nothing (no bounds, any alignment), told apart by
/// the values behind its undefined bounds (small: nothing overflows if a
/// rule computes with them before it looks at the flags).
ExprInfo14 marker() {
  ExprInfo14 info;
  info.min = -0x5eed;
  info.max = 0x5eed;
  return info;
}

bool isMarker(const ExprInfo14 &info) {
  ExprInfo14 m = marker();
  return !info.min_defined && !info.max_defined && info.min == m.min && info.max == m.max;
}

using SimplifyForFn = Stmt (*)(void *simplify, const For *op);

} // namespace

Stmt simplifyFor(void *simplify, const For *op) __asm__(SIMPLIFY_FOR);

Stmt simplifyFor(void *simplify, const For *op) {
  static const auto original = attnc::halide_backend::fixes::libHalideOriginal<SimplifyForFn>(
      SIMPLIFY_FOR, "Simplify::visit(const For *)");
  auto &bounds = attnc::halide_backend::fixes::boundsAndAlignmentInfo(simplify);
  bounds.push(op->name, marker());
  Stmt result = original(simplify, op);
  // Whatever the library left bound to the loop's name goes with the marker.
  while (!isMarker(bounds.get(op->name)))
    bounds.pop(op->name);
  bounds.pop(op->name);
  return result;
}
