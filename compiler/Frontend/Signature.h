//===- Signature.h - A kernel's arguments in their contract order -*- C++ -*-===//
//
// The one place that derives a kernel's argument list (docs/language.md §6):
// names, element types, directions and logical shapes (outermost dimension
// first, each a size name or a constant). MLIRGen, the Halide back end, the
// header writer and the runtime metadata all read it, so they never disagree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "abi/KernelAbi.h"
#include "compiler/Frontend/AST.h"

#include <string>
#include <vector>

namespace attnc {

/// The values of the size names of a kernel (0 for dynamic sizes).
struct SizeTable {
  int64_t B = 0, H = 0, G = 0, Lq = 0, Lk = 0, D = 0, Dk = 0, Dv = 0, M = 0, Mkv = 0;
  int64_t Lmax = 0, block = 0; // a contiguous cache's rows; a paged cache's block
  /// seq_k = seq_q or self-attention: key dimensions are named `Lq`, so
  /// checkers see that they must agree with the queries.
  bool keysTiedToQueries = false;
  /// Only a dynamic tie needs the shared name; a fixed one is checked by value.
  bool isDynamicTie() const { return keysTiedToQueries && Lq == 0; }
  /// Looks up a size name; returns false when `name` is not one.
  bool lookup(const std::string &name, ArgDim &dim) const;
};

SizeTable sizesOf(const KernelSpec &spec);

/// Every argument of `spec`, inputs then outputs, in the contract order.
std::vector<ArgSpec> kernelArguments(const KernelSpec &spec);

/// The dynamic sizes that `NAME_run` takes, in order: a subset of B, Lq, Lk.
std::vector<std::string> dynamicSizeNames(const KernelSpec &spec);

} // namespace attnc
