//===- SimplifyIfThenElse.cpp - Halide 14's simplifier, one undefined Stmt fixed ===//
//
// Halide 14's simplifier returns the missing else branch, an undefined Stmt,
// for `if (c) { ... }` whose then branch it finds unreachable. The LetStmt
// around it then dereferences that null body: a segmentation fault in
// simplify_let. attnc met it with a fixed batch of 1 and a fixed seq_q of 64
// under `mask = valid_len & causal` (tests/python/test_regressions.py; unit
// HalideFixes.SimplifiedIfWhoseBranchIsUnreachableIsANoOp). Halide fixed it
// upstream (issue 7815, "Don't return an undefined Stmt() from IfThenElse
// visitor", 2023) by returning a no-op there.
//
// libHalide14 calls Simplify::visit(const IfThenElse *) through its PLT, so
// this definition takes its place (see HalideFixes.h); it calls the library's
// own and turns an undefined result into that no-op. Simplify is an internal
// class that Halide.h does not declare, hence the definition by its mangled
// name: a member function with a class return value takes the same arguments
// as this free function in the Itanium ABI (the result's address, then this,
// then op).
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"
#include "compiler/HalideBackend/HalideFixes/LibHalideOriginal.h"

#include <Halide.h>

namespace attnc::halide_backend::fixes {
void anchorSimplifyIfThenElse() {}
} // namespace attnc::halide_backend::fixes

// Simplify::visit(const IfThenElse *), mangled: the name this file defines
// and the one it looks up in libHalide14.
#define SIMPLIFY_IF_THEN_ELSE "_ZN6Halide8Internal8Simplify5visitEPKNS0_10IfThenElseE"

namespace {

using Halide::Internal::IfThenElse;
using Halide::Internal::Stmt;

using SimplifyIfThenElse = Stmt (*)(void *simplify, const IfThenElse *op);

} // namespace

Stmt simplifyIfThenElse(void *simplify, const IfThenElse *op) __asm__(SIMPLIFY_IF_THEN_ELSE);

Stmt simplifyIfThenElse(void *simplify, const IfThenElse *op) {
  static const auto original =
      attnc::halide_backend::fixes::libHalideOriginal<SimplifyIfThenElse>(
          SIMPLIFY_IF_THEN_ELSE, "Simplify::visit(const IfThenElse *)");
  Stmt result = original(simplify, op);
  return result.defined() ? result : Halide::Internal::Evaluate::make(0);
}
