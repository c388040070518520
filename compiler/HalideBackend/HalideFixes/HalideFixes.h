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

/// While it lives, the lowering of this thread does not split the loop over
/// query tiles, and so the key loop inside each tile, into copies
/// (PartitionLoops.cpp): loops over `tileDim` (the tile's Var name) have
/// their bodies partitioned alone, and the clamped rows of `tileProducers`
/// (Halide's Func names) and of tensors read per tile, and the bounds of
/// stages along `tileDim`, are no partitioning boundaries.
class QueryTileStages {
public:
  struct Names {
    std::vector<std::string> tileProducers;
    std::string tileDim;
    /// A key loop (a loop name) partitioned alone, never split itself: a
    /// cache's length made Halide copy a paged decode's key loop whole.
    std::string keyLoop;
  };
  explicit QueryTileStages(Names names);
  ~QueryTileStages();
  QueryTileStages(const QueryTileStages &) = delete;
  QueryTileStages &operator=(const QueryTileStages &) = delete;

private:
  Names previous;
};

namespace fixes {
/// One per file of this folder: referenced, they keep its object linked.
void anchorSolveExpression();
void anchorSimplifyIfThenElse();
void anchorSimplifyFor();
void anchorPartitionLoops();
void anchorSimplifyCorrelatedDifferences();
void anchorVectorizeAtomics();
void anchorPredicatedAccesses();
} // namespace fixes

/// Does nothing; referencing it links this folder's replacements.
inline void linkHalideFixes() {
  fixes::anchorSolveExpression();
  fixes::anchorSimplifyIfThenElse();
  fixes::anchorSimplifyFor();
  fixes::anchorPartitionLoops();
  fixes::anchorSimplifyCorrelatedDifferences();
  fixes::anchorVectorizeAtomics();
  fixes::anchorPredicatedAccesses();
}
} // namespace attnc::halide_backend
