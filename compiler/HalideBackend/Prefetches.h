//===- Prefetches.h - decode's K and V rows prefetched ahead ------*- C++ -*-===//
//
// Decode reads every K and V row once and waits on those loads: the hardware
// prefetchers restart at each 4 KiB page and at each switch between the K
// and the V stream. Measured on AVX-512 (H=32, G=8, D=128, Lk=32768), rows
// prefetched about 4 KiB ahead into L2 made f32 decode 1.3x, bf16 decode 1.8x
// and paged-cache decode 1.3x faster (docs/benchmarks.md).
//
// Halide's own `prefetch` directive cannot do it in version 14: it steps its
// cache lines in elements rather than bytes (float rows got one line in four,
// at four times their address), it refuses a pipeline's outputs (a KV cache),
// it bounds a paged cache's next row by the whole pool, and its runtime emits
// `prefetchnta`, whose lines are evicted before a key block is read again.
// So a lowering pass of attnc's own adds the prefetches: each iteration of a
// key loop prefetches the K or V row that its loads will read `ahead` keys
// later, a line at a time, from an address computed as the loads' (block
// table included); keepPrefetchesInL2 makes them `prefetcht1`. Where the
// core's own prefetchers fetch K (an AMD host), it asks only for each key's V
// row, so that K and V stream at once (RowPrefetch::rowsAhead).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

namespace llvm {
class Module;
}

namespace attnc::halide_backend {

/// The rows of `buffers` that the loop `func.s<stage>.<var>` reads (`var` as
/// split, e.g. `j.jk`; in its body or the loops within it), prefetched
/// `ahead` iterations early, once per iteration: `lines` cache lines from the
/// element its inner loops start at. Also the same rows of `twins`, buffers
/// laid out as `buffers`, for the current iteration (decode's V row of the
/// key whose K row the Q.K^T loop reads: P.V reads it once the block's scores
/// are done, and its own loop keeps its sums in registers without calls in
/// it).
struct RowPrefetch {
  std::string func, var;
  int stage = 1;
  std::vector<std::string> buffers;
  int ahead = 8;
  int lines = 1;
  std::vector<std::string> twins;
  /// false: only the twins' rows (the buffers' own rows are left to the
  /// core's prefetchers).
  bool rowsAhead = true;
};

/// Adds the lowering pass of `prefetches` (none: nothing) to `pipeline`.
void addRowPrefetches(Halide::Pipeline &pipeline, const std::vector<RowPrefetch> &prefetches);

/// Every llvm.prefetch of `module` with locality 2 (x86: prefetcht1).
void keepPrefetchesInL2(llvm::Module &module);

} // namespace attnc::halide_backend
