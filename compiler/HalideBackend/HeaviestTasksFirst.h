//===- HeaviestTasksFirst.h - causal query tiles, last tile first -*- C++ -*-===//
//
// The threads claim a parallel loop's tasks in index order, and a causal
// query tile's work grows with its index (tile qt of a head sees (qt + 1)
// key blocks): in index order the call ends on its heaviest tile, which one
// thread then runs while the other waits. Taken last tile first, the call
// ends on the lightest ones (N=128, 32 tasks of 1-4 blocks: the ideal end
// of two threads 40 units against 41).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <string>

namespace attnc::halide_backend {

/// A custom lowering pass: the parallel loop of Func `func` over Var `task`
/// (the pure stage's, `func.s0. ... .task`) runs its tasks in reverse order,
/// a bijection of its range: every task still runs once.
Halide::Internal::IRMutator *newHeaviestTasksFirstPass(const std::string &func,
                                                       const std::string &task);

} // namespace attnc::halide_backend
