//===- HalideFixes.h - Corrections to libHalide14 linked into attnc -------===//
//
// Files in this folder define functions of libHalide14 again, corrected; the
// library calls them through its PLT, so these definitions replace its own
// (see each file). The back end is a static library: emitKernel calls
// linkHalideFixes() so that the linker keeps them.
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace attnc::halide_backend {

/// While it lives, the loops named `loops` (Halide's names, e.g.
/// "softmax_state.s1.rk$x") are never partitioned by the lowering of this
/// thread (NeverPartition.cpp): Halide 16's Func::never_partition.
class NeverPartition {
public:
  explicit NeverPartition(std::vector<std::string> loops);
  ~NeverPartition();
  NeverPartition(const NeverPartition &) = delete;
  NeverPartition &operator=(const NeverPartition &) = delete;

private:
  std::vector<std::string> previous;
};

namespace fixes {
/// One per file of this folder: referenced, they keep its object linked.
void anchorSolveExpression();
void anchorSimplifyIfThenElse();
void anchorNeverPartition();
} // namespace fixes

/// Does nothing; referencing it links this folder's replacements.
inline void linkHalideFixes() {
  fixes::anchorSolveExpression();
  fixes::anchorSimplifyIfThenElse();
  fixes::anchorNeverPartition();
}
} // namespace attnc::halide_backend
