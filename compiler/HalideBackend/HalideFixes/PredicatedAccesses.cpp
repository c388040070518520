//===- PredicatedAccesses.cpp - Halide 14's simplifier, masked lanes out of bounds ===//
//
// Halide 14's simplifier replaces a load or store whose index lies wholly
// outside its allocation (a `NAME.total_extent_bytes` it knows) by
// `unreachable`, and the branch holding it then disappears: a condition
// that guarded it is taken as always true. It does so for predicated
// accesses too, whose lanes out of bounds are exactly those the predicate
// turns off. A GuardWithIf split wider than its Func's columns is such a
// case: vectorized, `if (all lanes in bounds) store else masked store`;
// the masked store's vector lies past a stack buffer of one row, so the
// whole `if` went and every vector was stored. attnc met it in the
// per-head copy of a stacked QKV projection of 32 columns split by 64 with
// a fixed seq_q of 1: each task wrote 64 floats, over the next head's
// columns and past the buffer's end (tests/python/test_regressions.py).
// Halide fixed it upstream for loads (#7791, 2023) and stores (#7874) by
// deducing unreachability from unpredicated accesses only.
//
// libHalide14 calls Simplify::visit(const Load *, ExprInfo *) and
// Simplify::visit(const Store *) through its PLT, so these definitions
// take their place (see HalideFixes.h): for an access with a predicate
// they hide the allocation's extent from the simplifier's bindings
// (SimplifyState.h) while the library's own runs, and put it back after.
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"
#include "compiler/HalideBackend/HalideFixes/LibHalideOriginal.h"
#include "compiler/HalideBackend/HalideFixes/SimplifyState.h"

#include <Halide.h>

#include <string>
#include <vector>

namespace attnc::halide_backend::fixes {
void anchorPredicatedAccesses() {}
} // namespace attnc::halide_backend::fixes

// Simplify::visit(const Load *, ExprInfo *) and Simplify::visit(const
// Store *), mangled.
#define SIMPLIFY_LOAD "_ZN6Halide8Internal8Simplify5visitEPKNS0_4LoadEPNS1_8ExprInfoE"
#define SIMPLIFY_STORE "_ZN6Halide8Internal8Simplify5visitEPKNS0_5StoreE"

namespace {

using attnc::halide_backend::fixes::ExprInfo14;
using Halide::Expr;
using Halide::Internal::Load;
using Halide::Internal::Scope;
using Halide::Internal::Stmt;
using Halide::Internal::Store;

/// While it lives, the simplifier does not know the extent of allocation
/// `buffer`: its bindings of `buffer.total_extent_bytes` are popped and
/// pushed back in their order after.
class HiddenExtent {
public:
  HiddenExtent(void *simplify, const std::string &buffer)
      : bounds(attnc::halide_backend::fixes::boundsAndAlignmentInfo(simplify)),
        name(buffer + ".total_extent_bytes") {
    while (bounds.contains(name)) {
      hidden.push_back(bounds.get(name));
      bounds.pop(name);
    }
  }
  ~HiddenExtent() {
    for (auto it = hidden.rbegin(); it != hidden.rend(); ++it)
      bounds.push(name, *it);
  }
  HiddenExtent(const HiddenExtent &) = delete;
  HiddenExtent &operator=(const HiddenExtent &) = delete;

private:
  Scope<ExprInfo14> &bounds;
  std::string name;
  std::vector<ExprInfo14> hidden;
};

using SimplifyLoad = Expr (*)(void *simplify, const Load *op, void *bounds);
using SimplifyStore = Stmt (*)(void *simplify, const Store *op);

} // namespace

Expr simplifyLoad(void *simplify, const Load *op, void *bounds) __asm__(SIMPLIFY_LOAD);
Stmt simplifyStore(void *simplify, const Store *op) __asm__(SIMPLIFY_STORE);

Expr simplifyLoad(void *simplify, const Load *op, void *bounds) {
  static const auto original = attnc::halide_backend::fixes::libHalideOriginal<SimplifyLoad>(
      SIMPLIFY_LOAD, "Simplify::visit(const Load *, ExprInfo *)");
  if (Halide::Internal::is_const_one(op->predicate))
    return original(simplify, op, bounds);
  HiddenExtent hide(simplify, op->name);
  return original(simplify, op, bounds);
}

Stmt simplifyStore(void *simplify, const Store *op) {
  static const auto original = attnc::halide_backend::fixes::libHalideOriginal<SimplifyStore>(
      SIMPLIFY_STORE, "Simplify::visit(const Store *)");
  if (Halide::Internal::is_const_one(op->predicate))
    return original(simplify, op);
  HiddenExtent hide(simplify, op->name);
  return original(simplify, op);
}
