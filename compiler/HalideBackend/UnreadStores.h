//===- UnreadStores.h - stores no load reads, dropped ---------------*- C++ -*-===//
//
// The softmax state's m, l and u are the same in every value column of a row;
// the update and `out` read them at the row's last column, `weights` and
// `lse` at column 0 (makeState, makeOutputs). The Tuple update stores all four
// components for every vector of columns: per row and key block, Dv/16 - 1
// redundant vector stores of each of the three, beside the accumulator's (12
// of 16 stores at Dv = 64, where only the last column is read). This pass drops a store to one of the named buffers when no load
// of that buffer can read any of its elements: the buffer's loads are
// analysed as residues of their flat indices (Halide's modulus_remainder,
// with the lets in scope), and a store whose every lane falls on a residue
// no load reads is removed. A buffer any of whose loads cannot be analysed,
// or whose name is used other than by loads and stores, is left alone.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <set>
#include <string>

namespace attnc::halide_backend {

/// A custom lowering pass dropping the stores to `buffers` (flat buffer
/// names, e.g. "softmax_state.0") that no load of the same buffer reads.
Halide::Internal::IRMutator *newUnreadStoresPass(std::set<std::string> buffers);

} // namespace attnc::halide_backend
