//===- Schedules.cpp - The schedules of the attention algorithm --------===//
//
// Three named policies over the Funcs of AttentionAlgorithm.h. `tuned`:
// (b, h, query tile) in one parallel loop with the tile's softmax state inside
// it; per key block a Q.K^T micro-kernel of 2 vectors of queries x 8 keys, the
// block's max / exp / sum vectorized over queries, and a P.V micro-kernel of a
// few rows x Dv; key blocks no query of the tile sees are skipped by the RDom
// predicate. Decode (few rows) vectorizes the dot product along d and runs the
// key chunks in parallel; projections are register-blocked matrix products.
// `simple` and `auto` are for debugging and comparison.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/Schedules.h"
#include "compiler/HalideBackend/BackendError.h"
#include "compiler/HalideBackend/HalideWarnings.h"

#include <mutex>
#include <optional>

using namespace Halide;

namespace attnc::halide_backend {

// attnc::Expr is the frontend's AST node; here Expr means Halide's.
using Halide::Expr;

const char *toString(SchedulePolicy policy) {
  switch (policy) {
  case SchedulePolicy::Tuned:
    return "tuned";
  case SchedulePolicy::Simple:
    return "simple";
  case SchedulePolicy::Auto:
    return "auto";
  }
  return "?";
}

TailStrategy pureTail(int extent, int vec) {
  return extent > vec && extent % vec == 1 ? TailStrategy::ShiftInwards
                                           : TailStrategy::GuardWithIf;
}

int constantOf(const Expr &e, int fallback) {
  if (const int64_t *v = as_const_int(e))
    return (int)*v;
  return fallback;
}

void scheduleHeadMajorRows(const AlgorithmFuncs &f, Func rows, int vec, TailStrategy tail) {
  Var jo("jo"), ji("ji"), task("task");
  rows.compute_root()
      .split(f.j, jo, ji, 64, TailStrategy::GuardWithIf)
      .vectorize(f.d, vec, tail)
      .reorder(f.d, ji, jo, f.g, f.b)
      .fuse(jo, f.g, task)
      .fuse(task, f.b, task)
      .parallel(task);
}

void scheduleRowSums(Func sums, const Var &row, int rows, const Var &outer, int vec) {
  sums.compute_root().vectorize(row, vec, pureTail(rows, vec)).parallel(outer);
  if (rows > vec && rows % vec == 1)
    sums.update().parallel(outer);
  else
    sums.update().vectorize(row, vec, TailStrategy::GuardWithIf).parallel(outer);
}

namespace {

/// The fixed extent of an output's innermost dimension, else 0.
int fixedInnerExtent(Func out) {
  if (const int64_t *v = as_const_int(out.output_buffer().parameter().extent_constraint(0)))
    return (int)*v;
  return 0;
}
} // namespace

/// Outputs: vectorized over the innermost dimension, the two outermost fused
/// and parallel. `perVector` is computed per vector of `out`, vectorized
/// itself: left to Halide's default it was computed inside the vectorized
/// loop, where a score condition on i and j (`select(j > i, dot(q, k), 2)`)
/// trimmed its region lane by lane, and the vectorizer indexed its 16-float
/// buffer far past the end (a crash; campaign seed 275316916293998).
void scheduleOutput(Func out, int vec, Func perVector) {
  std::vector<Var> args = out.args();
  if (args.empty()) // a scalar (the gradient of a declared f32 scalar)
    return;
  const TailStrategy tail = pureTail(fixedInnerExtent(out), vec);
  if (perVector.defined()) {
    Var outer(args.front().name() + "_vectors"), lanes(args.front().name() + "_lanes");
    out.split(args.front(), outer, lanes, vec, tail).vectorize(lanes);
    Var inner = perVector.args().front();
    perVector.compute_at(out, outer).vectorize(inner, vec, TailStrategy::GuardWithIf);
    perVector.update().vectorize(inner, vec, TailStrategy::GuardWithIf);
  } else {
    out.vectorize(args.front(), vec, tail);
  }
  if (args.size() >= 3) {
    Var fused("fused");
    out.fuse(args[args.size() - 2], args.back(), fused).parallel(fused);
  } else {
    out.parallel(args.back());
  }
}

void fuseIntoParallel(Stage stage, const std::vector<VarOrRVar> &vars, const std::string &base) {
  VarOrRVar inner = vars.front();
  for (size_t n = 1; n < vars.size(); ++n) {
    Var fused(base + std::to_string(n));
    stage.fuse(inner, vars[n], fused);
    inner = fused;
  }
  stage.parallel(inner);
}

namespace {

/// Rows x column vectors of a matrix product's sums held in registers:
/// AVX-512's 32 hold 6 x 4 beside the 4 weight vectors and a broadcast, so
/// each block of weight columns (M x 64 floats, in L2) is read once per 6
/// rows, not per 4 (MHA with projections at N=512 9-11% faster, the additive
/// d2l shape 5-12%); AVX2's 16 hold 4 x 2 (16 accumulators spilled).
struct ProductBlock {
  int rows, colVectors;
};
ProductBlock productBlock(int vec) { return vec >= 16 ? ProductBlock{6, 4} : ProductBlock{4, 2}; }

/// A projection's matrix product p(c, row, ...) += x(r, row) * w(c, r) as a
/// register-blocked micro-kernel of productBlock(vec) held across the whole
/// reduction; returns the stage (its outermost variable is rowO).
Stage blockMatrixProduct(Func p, int vec, Var rowO) {
  const ProductBlock block = productBlock(vec);
  std::vector<Var> args = p.args();
  Var c = args[0], row = args[1];
  Var rowI("rowI"), cO("cO"), cM("cM"), cI("cI"), cV("cV");
  std::vector<VarOrRVar> order{cI, cM, rowI};
  const Internal::Definition &update = p.function().update(0);
  for (const Internal::ReductionVariable &rv : update.schedule().rvars())
    order.push_back(RVar(rv.var));
  order.push_back(cO);
  order.push_back(rowO);
  for (size_t k = 2; k < args.size(); ++k)
    order.push_back(args[k]);
  Stage stage = p.update();
  // Vectors first, then blocks of them (see splitValueRegisters: the other
  // order miscompiles in Halide 14, e.g. 17 columns lost their last one).
  stage.split(row, rowO, rowI, block.rows, TailStrategy::GuardWithIf)
      .split(c, cV, cI, vec, TailStrategy::GuardWithIf)
      .split(cV, cO, cM, block.colVectors, TailStrategy::GuardWithIf)
      .reorder(order)
      .vectorize(cI)
      .unroll(cM)
      .unroll(rowI);
  return stage;
}

/// A matrix product tile by tile: its root copy (Func::in, what consumers
/// read) in parallel tiles of the micro-kernel's size, the sums computed per
/// tile in registers from their start (bias or 0). The product at the root
/// had a pass of its own writing the starts, serial over the whole output
/// (MHA with projections at N=512 6% slower), and its heap buffers.
/// One parallel loop over row tiles x the outer dimensions (heads, batch):
/// a parallel loop per head or batch row would wake the threads each time.
/// `tiles` is the copy: p.in(), or the kernel's `out` when it reads the
/// output projection alone (the copy would be a pass of its own).
void scheduleProductTiles(Func p, Func tiles, int vec) {
  std::vector<Var> args = tiles.args(); // (column, row, outer...), as p's
  const ProductBlock block = productBlock(vec);
  Var c = args[0], row = args[1];
  Var rowO("rowO"), rowI("rowI"), cO("cO"), cI("cI"), cM("cM");
  std::vector<VarOrRVar> order{cI, rowI, cO, rowO};
  for (size_t k = 2; k < args.size(); ++k)
    order.push_back(args[k]);
  tiles.compute_root()
      .split(row, rowO, rowI, block.rows, TailStrategy::GuardWithIf)
      .split(c, cO, cI, vec * block.colVectors, TailStrategy::GuardWithIf)
      .reorder(order)
      .vectorize(cI, vec, TailStrategy::GuardWithIf);
  VarOrRVar tasks = rowO;
  for (size_t k = 2; k < args.size(); ++k) {
    Var fused("task" + std::to_string(k));
    tiles.fuse(tasks, args[k], fused);
    tasks = fused;
  }
  tiles.parallel(tasks);
  Var pc = p.args()[0], prow = p.args()[1];
  p.compute_at(tiles, cO).store_in(MemoryType::Stack).vectorize(pc, vec, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> inner{cI, cM, prow};
  for (const Internal::ReductionVariable &rv : p.function().update(0).schedule().rvars())
    inner.push_back(RVar(rv.var));
  p.update()
      .split(pc, cM, cI, vec, TailStrategy::GuardWithIf)
      .reorder(inner)
      .vectorize(cI)
      .unroll(cM)
      .unroll(prow);
}

void scheduleProjection(Func p, int vec) { scheduleProductTiles(p, p.in(), vec); }

/// The storage order of an rfactor's intermediate with its lane variable
/// `u` innermost (rfactor appends it last).
std::vector<Var> lanesInnermost(Func lanes, const Var &u) {
  std::vector<Var> order = lanes.args();
  order.erase(std::find_if(order.begin(), order.end(),
                           [&](const Var &v) { return v.same_as(u); }));
  order.insert(order.begin(), u);
  return order;
}

/// A projection reading its weight [N, M] in place (AlgorithmFuncs::
/// inPlaceProjections): each (row, column) is a dot product along the
/// contiguous M, summed in vector lanes (rfactor) for a block of 4 columns x
/// a few rows at once, then the lanes of each (row, column) added. One
/// decode row streams each weight row once, at the memory's pace.
void scheduleInPlaceProjection(const AlgorithmFuncs::InPlaceProjection &projection, int vec) {
  Func p = projection.func;
  std::vector<Var> args = p.args(); // (column, row, [head,] b)
  Var c = args[0], row = args[1];
  const int rows = vec >= 16 ? 4 : 2, columns = divisorAtMost(projection.columns, 4);
  const Internal::Definition &update = p.function().update(0);
  std::vector<RVar> outer; // (the output projection also sums over heads)
  for (const Internal::ReductionVariable &rv : update.schedule().rvars())
    outer.push_back(RVar(rv.var));
  RVar along = outer.front(); // the contiguous M (or Dv)
  outer.erase(outer.begin());
  RVar ro("along_vectors"), ri("along_lanes");
  Var u("u"), cO("cO"), cI("cI"), rowO("rowO"), rowI("rowI");
  p.compute_root();
  Func lanes = p.update().split(along, ro, ri, vec).rfactor(ri, u);
  std::vector<VarOrRVar> order{ri, cI, rowI, cO, rowO};
  for (size_t k = 2; k < args.size(); ++k)
    order.push_back(args[k]);
  Stage sum = p.update();
  // Column blocks divide the row's columns, which are all computed: rounding
  // up needs no guard (a cache's bounds leave Halide unsure of the region).
  sum.split(c, cO, cI, columns, TailStrategy::RoundUp)
      .split(row, rowO, rowI, rows, TailStrategy::GuardWithIf)
      .reorder(order)
      .unroll(ri); // (atomic().vectorize(ri) would add each sum by compare-and-swap)
  // One parallel loop over column blocks x rows x the outer dimensions.
  VarOrRVar tasks = cO;
  for (size_t k = 1; k < order.size() - 3; ++k) {
    Var fused("task" + std::to_string(k));
    sum.fuse(tasks, order[3 + k].var, fused);
    tasks = fused;
  }
  sum.parallel(tasks);
  // The lanes of the block: rows x columns vectors in registers over M.
  lanes.compute_at(p, tasks.var).reorder_storage(lanesInnermost(lanes, u)).vectorize(u);
  std::vector<VarOrRVar> laneOrder{u, c, row, ro};
  laneOrder.insert(laneOrder.end(), outer.begin(), outer.end());
  lanes.update().reorder(laneOrder).vectorize(u).unroll(c).unroll(row);
}

/// The same micro-kernel computed inside another Func's parallel task: the
/// product of the rows that task reads, while they are in cache, and a
/// buffer small enough to be reused rather than mapped afresh per call.
void scheduleProjectionAt(Func p, LoopLevel level, int vec) {
  p.compute_at(level).vectorize(p.args()[0], vec, TailStrategy::GuardWithIf);
  blockMatrixProduct(p, vec, Var("rowO"));
}

/// Packed batches: cu_seqlens checked and the token -> sequence tables, at
/// the root (scatters and scans, O(B + T) each).
void scheduleSequenceTables(AlgorithmFuncs &f) {
  for (Func t : f.sequenceTables)
    t.compute_root();
}

/// KV caches: the new rows' stores, vectorized over the row's channels (the
/// pure definitions are undefined: the rest of each cache is not touched).
/// The channels are a reduction variable of constant extent, whose tail must
/// stay guarded; one of a single value would lose its guard (pureTail), so
/// such rows are stored a value at a time.
void scheduleCacheWrites(AlgorithmFuncs &f, int vec) {
  for (Func cache : f.caches) {
    const Internal::ReductionVariable &channel =
        cache.function().update(0).schedule().rvars().front();
    int channels = constantOf(channel.extent, 0);
    if (pureTail(channels, vec) == TailStrategy::GuardWithIf)
      cache.update(0).vectorize(RVar(channel.var), vec, TailStrategy::GuardWithIf);
  }
}

/// Projection weights transposed once per call, in vec x vec tiles: vectors
/// of output columns (strided loads of the weight), the tile's rows a loop,
/// tiles of rows (of each head's panel) in parallel. Stacked panels
/// (stackedProjections) are written by one update per weight, each tiled
/// the same way over its heads. A strided load is vec scalar loads either
/// way; unrolled, the tile's vec^2 loads and inserts were a third of a
/// projecting kernel's LLVM optimisation time (SLP vectorizer, InstCombine).
void scheduleWeightTransposes(AlgorithmFuncs &f, int vec) {
  for (Func t : f.weightTransposes) {
    std::vector<Var> args = t.args();
    Var n = args[0], m = args[1], no("no"), mo("mo"), ni("ni"), mi("mi"), task("task");
    if (t.has_update_definition()) { // stacked panels: one update per weight
      t.compute_root();
      for (int k = 0; k < t.num_update_definitions(); ++k) {
        RVar head(t.function().update(k).schedule().rvars().front().var);
        t.update(k)
            .tile(n, m, no, mo, ni, mi, vec, vec, TailStrategy::GuardWithIf)
            .reorder(ni, mi, no, head, mo)
            .vectorize(ni)
            .parallel(mo);
      }
      continue;
    }
    t.compute_root()
        .tile(n, m, no, mo, ni, mi, vec, vec, TailStrategy::GuardWithIf)
        .vectorize(ni);
    if (args.size() == 3)
      t.fuse(mo, args[2], task).parallel(task);
    else
      t.parallel(mo);
  }
}

/// A relative bias's table (ScoreFunctions.cpp customBias): once per call,
/// along j - i in whole vectors (it reads only clamped inputs, and a guarded
/// last vector of one value miscompiles in Halide 14), heads in parallel.
void scheduleBiasTable(AlgorithmFuncs &f, int vec) {
  if (!f.biasTable.defined())
    return;
  std::vector<Var> t = f.biasTable.args(); // (delta, h, b)
  f.biasTable.compute_root().vectorize(t[0], vec, TailStrategy::RoundUp).parallel(t[1]);
  f.scheduleNotes.push_back("bias_table: compute_root, the bias per (j - i, h, b) once per call");
}

/// Root-level precomputations: projections as register-blocked matrix
/// products; the rest vectorized over the innermost dimension and parallel
/// over the outermost.
void schedulePrecomputed(AlgorithmFuncs &f, int vec) {
  scheduleSequenceTables(f);
  scheduleBiasTable(f, vec);
  scheduleCacheWrites(f, vec);
  scheduleWeightTransposes(f, vec);
  bool outProjected = false;
  for (Func p : f.precomputed) {
    auto inPlace = std::find_if(
        f.inPlaceProjections.begin(), f.inPlaceProjections.end(),
        [&](const AlgorithmFuncs::InPlaceProjection &q) { return q.func.name() == p.name(); });
    if (inPlace != f.inPlaceProjections.end()) {
      scheduleInPlaceProjection(*inPlace, vec);
      outProjected = outProjected || p.name() == "out_proj";
      continue;
    }
    if (p.has_update_definition()) {
      // `out` reads the output projection alone (its dtype's rounding):
      // its tiles are the product's.
      if (p.name() == "out_proj" && f.out.defined() && f.out.dimensions() >= 2 &&
          std::find_if(f.outputs.begin(), f.outputs.end(),
                       [&](const Func &o) { return o.name() == f.out.name(); }) !=
              f.outputs.end()) {
        scheduleProductTiles(p, f.out, vec);
        f.outIsProductTiles = true;
      } else {
        scheduleProjection(p, vec);
      }
      outProjected = outProjected || p.name() == "out_proj";
      continue;
    }
    std::vector<Var> args = p.args();
    p.compute_root();
    p.vectorize(args.front(), vec, TailStrategy::GuardWithIf).parallel(args.back());
  }
  // The output projection reads every head's result once per output column
  // block: normalize them once.
  if (outProjected && !f.attnTiledByState)
    f.attn.compute_root()
        .vectorize(f.d, vec, TailStrategy::GuardWithIf)
        .parallel(f.h);
}

/// Per-row score precomputations (the cosine score's row norms and unit
/// keys): once per row at the root, so no (i, j) iteration recomputes them.
void scheduleScoreRows(AlgorithmFuncs &f, int vec, std::vector<std::string> &notes) {
  if (!f.kUnit.defined())
    return;
  // Rows of a fixed count whose last vector holds one value (seq_k = 17 on
  // AVX-512) keep the norms' sums in a plain loop (scheduleRowSums): Halide
  // 14 miscompiled the guarded vectors of that update (bf16 cosine scores
  // were wrong). O(rows x D) once per call.
  scheduleRowSums(f.qNormSq, f.i, constantOf(f.Lq, 0), f.b, vec);
  scheduleRowSums(f.kNormSq, f.j, constantOf(f.Lk, 0), f.b, vec);
  f.kUnit.compute_root().vectorize(f.d, vec, pureTail(constantOf(f.Dk, 0), vec)).parallel(f.b);
  notes.push_back("q_norm_sq, k_norm_sq, k_unit: compute_root, once per row");
}

/// Rows turned by rotary embeddings with every load dense: d is split at its
/// pair boundary (dims/2 for half, 2 for interleaved) and the outer part
/// unrolled, so each unrolled copy knows on which side of its pairs it is
/// and reads partner channels and table entries at affine offsets instead
/// of gathering them. `width` is the rows' values (0: not known); a last
/// vector of one lane shifts inwards (pureTail): guarded, head_dim 33's
/// interleaved q_in stored its first 16 pairs twice and never channel 32.
/// Returns (inner, outer) for reordering.
std::pair<Var, Var> vectorizeTurnedRows(Func rows, Var d, const RotarySpec &rotary, int vec,
                                        int width) {
  Var lane("d_lane"), side("d_side");
  if (rotary.style == RotaryStyle::Half) {
    int half = (int)rotary.dims / 2, laneVec = std::min(vec, half);
    rows.split(d, side, lane, half, TailStrategy::GuardWithIf)
        .unroll(side)
        .vectorize(lane, laneVec, pureTail(half, laneVec));
  } else {
    rows.split(d, lane, side, 2, TailStrategy::GuardWithIf)
        .reorder(side, lane)
        .unroll(side)
        .vectorize(lane, vec, pureTail((width + 1) / 2, vec));
  }
  return {lane, side};
}

/// Rotary embeddings: the cos/sin table once per call, and the keys turned
/// once at the root (the Q.K^T loops read each key row once per query
/// tile). Queries turn where the tile's queries are gathered (`qLevel`, or
/// wherever q_scaled is inlined with the simple policy).
void scheduleRotary(AlgorithmFuncs &f, const AttentionConfig &config, int vec,
                    std::optional<LoopLevel> qLevel) {
  if (!f.ropeTable.defined())
    return;
  const RotarySpec &rotary = config.kernel.rotary;
  f.ropeInvFreq.compute_root();
  if (config.kernel.cache.any()) {
    // Only the Lq new rows turn (the cache holds its keys turned): their
    // angles inline, no table over every cache position.
    if (qLevel) {
      f.qIn.compute_at(f.qNormSq.defined() ? LoopLevel::root() : *qLevel);
      vectorizeTurnedRows(f.qIn, f.d, rotary, vec, constantOf(f.D, 0));
    }
    // The new keys per row of the cache's write, their channels split at the
    // pairs like q's: inlined into the write (vectorized over the channels),
    // an interleaved partner d + 1 - 2 (d % 2) was a gather, and with one
    // pair (head_dim 2) a reversed masked load whose lanes before the row's
    // start Halide 14's code generation refused ("base >= 0") once a decode
    // variant's row was a constant.
    const Internal::ReductionVariable &row = f.kCache.function().update(0).schedule().rvars()[1];
    f.kNewRotated.compute_at(f.kCache, RVar(row.var));
    vectorizeTurnedRows(f.kNewRotated, f.kNewRotated.args()[0], rotary, vec, constantOf(f.D, 0));
    f.scheduleNotes.push_back("rope_cos_sin: inline for the new rows (q per query tile, new "
                              "keys per row as they are stored)");
    return;
  }
  std::vector<Var> t = f.ropeTable.args(); // (c, p)
  Var po("po"), pi("pi");
  // Pairs rounded up to whole vectors: the table reads no buffer, and a
  // guarded last vector of one pair (dims = 18) miscompiled in Halide 14 (the
  // pair loop stored its first vector twice and never the ninth pair).
  f.ropeTable.compute_root()
      .vectorize(t[0], vec, TailStrategy::RoundUp)
      .split(t[1], po, pi, 64, TailStrategy::GuardWithIf)
      .parallel(po);
  Var jo("jo"), ji("ji"), task("task");
  f.kIn.compute_root().split(f.j, jo, ji, 64, TailStrategy::GuardWithIf);
  auto [lane, side] = vectorizeTurnedRows(f.kIn, f.d, rotary, vec, constantOf(f.D, 0));
  f.kIn.reorder(lane, side, ji, jo, f.g, f.b).fuse(jo, f.g, task).fuse(task, f.b, task).parallel(task);
  std::string note = "rope_cos_sin: compute_root (float64 angles); k_in: keys turned once, "
                     "compute_root, 64-row tasks parallel";
  if (qLevel) {
    // The cosine score's root-level row norms read q_in too.
    f.qIn.compute_at(f.qNormSq.defined() ? LoopLevel::root() : *qLevel);
    vectorizeTurnedRows(f.qIn, f.d, rotary, vec, constantOf(f.D, 0));
    note += "; q_in: per query tile";
  }
  f.scheduleNotes.push_back(note + "; d split at the pairs, loads dense");
}

/// Splits d of `stage` into vectors (dI, vectorized) and unrolled vector
/// indices (dO). Up to `chunk` vectors, dO covers the whole row; wider rows
/// also get an outer chunk loop (returned, else undefined) so the registers
/// hold one chunk and the unrolled code stays small however large Dv is (a
/// fully unrolled 2^20-wide row took minutes to compile and overflowed the
/// compiler's stack).
std::optional<Var> splitValueRegisters(Stage &stage, const Var &d, const Var &dO,
                                       const Var &dI, int vec, int dVectors, int chunk) {
  if (dVectors <= chunk) {
    stage.split(d, dO, dI, vec, TailStrategy::GuardWithIf).vectorize(dI).unroll(dO);
    return std::nullopt;
  }
  // Vectors first, then chunks of them: both splits guarded (splitting the
  // row into chunks first and each chunk into vectors, both with
  // GuardWithIf, miscompiled rows of 3 chunks or more in Halide 14).
  Var dC(dO.name() + "_chunk"), dV(dO.name() + "_vectors");
  stage.split(d, dV, dI, vec, TailStrategy::GuardWithIf)
      .split(dV, dC, dO, chunk, TailStrategy::GuardWithIf)
      .vectorize(dI)
      .unroll(dO);
  return dC;
}

/// Splits the value columns d of a softmax_state update into vectors (dI,
/// vectorized), and unrolls them and the rows `iu` up to 32 vectors; wider
/// rows loop over both.
/// The merge runs once per key block and row, so the loops cost nothing, and
/// two other schedules miscompiled in Halide 14 when the row's last vector
/// has one value (value_dim 33, 49, 65, ...): chunks of unrolled vectors ran
/// the first chunk every time and never the last vector, and a row loop of
/// unrolled rows lost the tail guard of every row after the first.
/// `outer` are the loops outside the rows, innermost first.
void splitStateVectors(Stage &stage, const RVar &d, const RVar &dO, const RVar &dI, const Var &iu,
                       int vec, int dVectors, std::vector<VarOrRVar> outer) {
  stage.split(d, dO, dI, vec, TailStrategy::GuardWithIf).vectorize(dI);
  outer.insert(outer.begin(), {dI, dO, iu});
  stage.reorder(outer);
  if (dVectors <= 32)
    stage.unroll(dO).unroll(iu);
}

/// `order` with `chunk` (if any) inserted before position `at`.
std::vector<VarOrRVar> withChunk(std::vector<VarOrRVar> order, const std::optional<Var> &chunk,
                                 size_t at) {
  if (chunk)
    order.insert(order.begin() + at, *chunk);
  return order;
}

/// What the steps of the tuned schedule share: tile sizes and register
/// blocking chosen once, and where softmax_state lives.
struct TunedPlan {
  int vec, TQ, BK, Dv, dVectors, pvRows;
  /// Register blocking of P.V: value vectors per chunk of a row (Q.K^T's
  /// keys per register block are AlgorithmFuncs::qkKeys). AVX-512 has 32
  /// vector registers, AVX2 16: there half as many accumulators fit beside
  /// the loads and broadcasts (16 spilled on AVX2 and ran at a third of peak).
  int pvChunk = 16;
  /// P.V of a decode tile of a few rows (a GQA group) on AVX2, where the
  /// rows' value registers do not fit: all rows' sums stay in block_pv (L1)
  /// and each V vector is loaded once per key for every row, instead of
  /// re-reading the block once per row (f16 V was widened once per row).
  bool pvSharedV = false;
  /// Q.K^T vectorized over the tile's rows (whole vectors of them), or, for
  /// fewer rows (decode), along d; the queries' storage and the K/V copies
  /// follow the same choice.
  bool rowVectors = false;
  Var io{"io"};
  bool stateInOutTile = false;
  /// Where softmax_state is computed: out's task (stateInOutTile) or the root.
  LoopLevel stateLevel = LoopLevel::root();
  /// The parallel task of a root-level softmax_state (batch, head, key
  /// chunk), when it is one.
  std::optional<LoopLevel> stateTask;
};

/// softmax_state: inside out's parallel tiles, or at the root.
void scheduleTunedState(AlgorithmFuncs &f, const AttentionConfig &config, TunedPlan &p) {
  const int vec = p.vec, TQ = p.TQ, dVectors = p.dVectors, pvRows = p.pvRows;
  std::vector<std::string> &notes = f.scheduleNotes;
  Var d = f.d, ii = f.ii, qt = f.qt, h = f.h, b = f.b, i = f.i, io = p.io;
  // The state of a query tile: one parallel task per (query tile, key chunk,
  // row group, batch); with one chunk and one tile (decode) that would leave
  // a single task per head, hence the key split of the algorithm.
  Var iu("iu"), t1("t1"), task("task");
  RVar cO("cO"), cI("cI"); // the update's value columns, split into vectors
  // With `out` as the only output, one query tile of one head per task of
  // out's parallel loop, and that tile's state computed inside it: one
  // parallel loop in all and no root-level state (small problems are
  // dominated by thread wake-ups and passes over root buffers otherwise).
  // (Packed batches' out is tokens (d, h, i): the same tiles of rows, no b.)
  const bool packedOut = config.kernel.packed && f.out.dimensions() == 3;
  // GQA (P query heads per row group): out's tiles are then TQ / P queries
  // of P heads, the rows r = i * P + h % P of one state tile.
  const bool groupTiles = f.groupP > 1 && f.out.dimensions() == 4 && !f.attnTiledByState &&
                          !config.kernel.packed && config.kernel.layout != Layout::BSHD &&
                          TQ % f.groupP == 0;
  p.stateInOutTile = f.splits == 1 && (f.groupP == 1 || groupTiles) &&
                     f.outputs.size() - f.caches.size() == 1 &&
                     (f.out.dimensions() == 4 || packedOut || f.attnTiledByState);
  if (p.stateInOutTile) {
    // The tiles' Func: out, or the heads' results an output projection reads
    // (never with packed batches).
    Func tiles = f.attnTiledByState ? f.attn : f.out;
    if (f.attnTiledByState)
      tiles.compute_root();
    Var oi("oi"), oii("oii"), ot("ot"), oTask("oTask"), hb("hb"), hp("hp");
    tiles.split(i, oi, oii, TQ / f.groupP, TailStrategy::GuardWithIf);
    if (packedOut)
      tiles.reorder(d, oii, oi, h);
    else if (f.groupP > 1)
      tiles.split(h, hb, hp, f.groupP, TailStrategy::GuardWithIf).reorder(d, hp, oii, oi, hb, b);
    else
      tiles.reorder(d, oii, oi, h, b);
    // (Its last vector shifts inwards where it would hold one value: see
    // pureTail; a guarded one wrote value_dim 33's rows 15 floats long.)
    int values = f.attnTiledByState ? constantOf(f.Dv, 0) : fixedInnerExtent(f.out);
    // One head's (row group's) tiles next to each other: both threads share its K/V.
    tiles.vectorize(d, vec, pureTail(values, vec)).fuse(oi, f.groupP > 1 ? hb : h, ot);
    if (packedOut)
      tiles.rename(ot, oTask);
    else
      tiles.fuse(ot, b, oTask);
    tiles.parallel(oTask);
    if (f.tileWorkGrows)
      f.heaviestTasksFirst = {tiles.name(), oTask.name()};
    p.stateLevel = LoopLevel(tiles, oTask);
    f.state.compute_at(p.stateLevel);
    if (dVectors <= 8) {
      // A row's starting values unrolled by vector: the stores of m, l and u
      // to vectors without the row's last column are then at known columns,
      // and UnreadStores drops them (LLVM made l's zeros a 4 KiB memset call
      // per tile: 1-2% of causal N=128).
      Var dO("dO"), dI("dI");
      f.state.split(d, dO, dI, vec, TailStrategy::GuardWithIf).vectorize(dI).unroll(dO);
    } else {
      f.state.vectorize(d, vec, TailStrategy::GuardWithIf);
    }
    Stage update = f.state.update();
    update.split(ii, io, iu, pvRows);
    splitStateVectors(update, f.rc, cO, cI, iu, vec, dVectors, {io, f.rk, qt, f.s, h, b});
    notes.push_back("out: (batch, head, query tile of " + std::to_string(TQ) +
                    " rows) fused parallel; softmax_state computed per tile inside");
  } else {
    // The starting values stored by parallel tasks too: a serial nest of
    // constant extents was unrolled whole by LLVM, and with value_dim 33 (a
    // masked store per row) its instruction selection did not end on 96 rows
    // (BUG-14, as BUG-12 in the backward's sums).
    f.state.compute_root().vectorize(d, vec, TailStrategy::GuardWithIf);
    fuseIntoParallel(f.state, {qt, f.s, h, b}, "p");
    Stage update = f.state.update();
    update.split(ii, io, iu, pvRows);
    if (f.headsInsideBlocks) {
      // Paged decode: (sequence, key chunk) tasks, every KV head inside a
      // key block (AttentionAlgorithm.cpp chooseTiles).
      splitStateVectors(update, f.rc, cO, cI, iu, vec, dVectors, {io, h, f.rk, qt, f.s, b});
      update.fuse(f.s, b, task);
    } else {
      splitStateVectors(update, f.rc, cO, cI, iu, vec, dVectors, {io, f.rk, qt, f.s, h, b});
      update.fuse(f.s, h, t1).fuse(t1, b, task);
    }
    update.parallel(task).parallel(qt);
    p.stateTask = LoopLevel(f.state, task);
  }
  const char *nest = p.stateInOutTile       ? "per out tile > rk"
                     : f.headsInsideBlocks ? "compute_root; update loops (b, s) fused parallel > qt "
                                             "parallel > rk > h"
                                           : "compute_root; update loops (b, h, s) fused parallel > "
                                             "qt parallel > rk";
  notes.push_back(std::string("softmax_state: ") + nest + " > ii/" + std::to_string(pvRows) +
                  " > d vectorized x" + std::to_string(vec) + "; " +
                  std::to_string(f.splits) + " key chunk(s), " + std::to_string(f.groupP) +
                  " query head(s) per K/V block");
  if (f.splits > 1) {
    f.merged.compute_root().vectorize(d, vec, TailStrategy::GuardWithIf);
    fuseIntoParallel(f.merged, {qt, h, b}, "m");
    // The vectors of a row unrolled inside the loop over the chunks: a loop
    // over them repeated its first vector when the last holds one value
    // (value_dim 17 on AVX-512: the 17th column stayed 0), as in
    // splitStateVectors.
    RVar dO("dO"), dI("dI");
    Stage merge = f.merged.update();
    merge.split(f.rs[0], dO, dI, vec, TailStrategy::GuardWithIf)
        .vectorize(dI)
        .reorder(dI, dO, f.rs[1]);
    if (dVectors <= 32)
      merge.unroll(dO);
    // One parallel loop over (tile, head, batch row): a loop over the batch
    // around a parallel one woke the threads B times per call.
    fuseIntoParallel(merge, {qt, h, b}, "u");
    notes.push_back("softmax_merged: compute_root, merges the " + std::to_string(f.splits) +
                    " key chunks' partial states");
  }
}

/// The queries of a tile (and the general / additive score's hoisted parts).
void scheduleTunedQueries(AlgorithmFuncs &f, const AttentionConfig &config, const TunedPlan &p) {
  const int vec = p.vec;
  std::vector<std::string> &notes = f.scheduleNotes;
  Var d = f.d, qt = f.qt, i = f.i, j = f.j;
  // Queries of the tile, stored so the Q.K^T kernel loads vectors: rows
  // innermost where it is vectorized over rows, d innermost where the dot
  // product runs along d (decode; rows innermost made each load of a GQA
  // group's query a strided gather).
  // With `weights` they are also read outside the state's loops: keep them all
  // (with GQA too: the weights read q_scaled, and with it the W-transformed or
  // turned queries, per query head).
  // The sink prefix reads them beside the state: one tile's at out's task.
  bool qsShared = f.weights.defined();
  LoopLevel qLevel = qsShared ? LoopLevel::root() : LoopLevel(f.state, qt);
  if (!qsShared && f.hasSinkPrefix())
    qLevel = p.stateLevel;
  if (f.qRow.defined()) {
    f.qRow.compute_at(qLevel);
    if (p.rowVectors)
      f.qRow.reorder_storage(i, d).reorder(i, d).vectorize(i, vec, TailStrategy::GuardWithIf);
    else
      f.qRow.vectorize(d, vec, TailStrategy::GuardWithIf);
  }
  if (f.bf16Products)
    f.qPairs.compute_at(qLevel).vectorize(f.e).vectorize(i, vec, TailStrategy::GuardWithIf);
  if (f.qHoist.defined() && !f.kHoist.defined())
    f.qHoist.compute_at(qLevel); // general: W^T q per query tile
  scheduleRotary(f, config, vec, qLevel);
  if (f.kHoist.defined()) {
    // Additive: W_q q and W_k k once per row, outside the (i, j) loops, as
    // matrix products over hidden-unit vectors; W is read transposed (a copy
    // with the hidden unit innermost) so its vectors load contiguously.
    for (const ImageParam &w : f.inputs) {
      if (w.name() != "score_wq" && w.name() != "score_wk")
        continue;
      Func hoist = w.name() == "score_wq" ? f.qHoist : f.kHoist;
      Func wT = ImageParam(w).in(hoist);
      std::vector<Var> wArgs = wT.args();
      wT.compute_root().reorder_storage(wArgs[1], wArgs[0]).reorder(wArgs[1], wArgs[0]);
    }
    scheduleProjection(f.qHoist, vec);
    // W_k k per state task (its batch row and key chunk) when the tasks own
    // their keys: a root buffer of B x Lk x N would be written, zeroed and
    // page-faulted in whole before any score reads it.
    // The weights output reads W_k k outside the state tasks: then one root
    // buffer serves both.
    // So does a sink prefix computed beside a root-level state.
    const bool perTask = p.stateTask && !f.weights.defined() && !f.hasSinkPrefix();
    if (perTask)
      scheduleProjectionAt(f.kHoist, *p.stateTask, vec);
    else
      scheduleProjection(f.kHoist, vec);
    const ProductBlock block = productBlock(vec);
    notes.push_back("q_hoist, k_hoist: register-blocked matrix products (" +
                    std::to_string(block.rows) + " rows x " + std::to_string(block.colVectors) +
                    " vectors), W transposed once; k_hoist " +
                    (perTask ? "per softmax_state task" : "compute_root"));
  }
}

/// K and V rows copied once per call into head-major float32 buffers when the
/// query tiles would otherwise read them in place from token-major storage
/// (layout = bshd, packed tokens) or widen them on every use (16-bit
/// storage). Token-major rows of one head lie H*D floats apart: a key block's
/// rows then share a few of L1's sets and evict each other (a bshd prefill
/// ran 25% slower than bhsd). Each tile reads every key row, so one copy
/// (a pass over K and V, as many bytes as the inputs) pays for itself;
/// decode reads each row once and keeps reading in place.
void scheduleKeyValueRows(AlgorithmFuncs &f, const AttentionConfig &config, const TunedPlan &p) {
  const KernelDesc &k = config.kernel;
  bool tokenMajor = k.layout == Layout::BSHD || k.packed;
  if (f.bf16Values) {
    // V as key pairs per value, once per call (as many bytes as v); K is
    // read in place (a pair of channels is one 32-bit broadcast).
    Var jo("jo"), ji("ji"), task("task");
    f.vPairs.compute_root()
        .split(f.jp, jo, ji, 32, TailStrategy::GuardWithIf)
        .vectorize(f.e)
        .vectorize(f.d, p.vec, TailStrategy::GuardWithIf)
        .reorder(f.e, f.d, ji, jo, f.g, f.b)
        .fuse(jo, f.g, task)
        .fuse(task, f.b, task)
        .parallel(task);
    f.scheduleNotes.push_back("v_pairs: compute_root, bf16 key pairs per value (read by every "
                              "query tile), 64-key tasks parallel");
    return;
  }
  if (!p.rowVectors || k.cache.any() || k.project != ProjectKind::None)
    return;
  // Head-major float32 rows in place: V is still copied for a fixed
  // self-attention prefill (seq_k <= seq_q, 512 rows or more), where many
  // query tiles read each row. P.V loads whole vectors of it, and a caller's
  // array is often 16 bytes past a 64-byte boundary (malloc'd, NumPy's),
  // where every load spans two cache lines: dense N=2048 ran 8% slower so.
  // At N=128 the pass cost more than it saved, a dynamic seq_q may be a
  // decode step (which would read V twice), a long seq_k would be copied
  // whole (a buffer of its size), and under a window narrower than 16 query
  // tiles each row is read too few times (window(256) at N=8192 ran 2-4%
  // slower with the copy). K is only broadcast, 4 bytes at a time.
  const bool inPlace = !(tokenMajor || k.kvDtype != ElemType::F32);
  const KernelSizes sizes = k.sizes();
  bool narrowBand = false;
  for (const MaskTermDesc &term : k.masks)
    narrowBand |= term.kind == MaskKind::Window && term.width < 16 * p.TQ;
  if (inPlace && (narrowBand || !(sizes.Lq >= 512 && sizes.Lk > 0 && sizes.Lk <= sizes.Lq)))
    return;
  // One query tile reads each row once: a copy would only add its pass (8
  // queries of a GQA layer, H=32, G=8, D=128, 32768 keys, as a speculative
  // decoder verifies them: bf16 K/V 45.8 -> 27.0 ms, f16 45.6 -> 38.1, bshd
  // f32 56.8 -> 41.0).
  if (sizes.Lq > 0 && sizes.Lq * f.groupP <= p.TQ)
    return;
  bool kTurned = k.positional == PositionalKind::Rotary; // k_in is already a root copy
  std::vector<Func> copies{f.vIn};
  if (!kTurned && !inPlace)
    copies.push_back(f.kIn);
  for (Func rows : copies)
    scheduleHeadMajorRows(f, rows, p.vec, TailStrategy::GuardWithIf);
  f.scheduleNotes.push_back(std::string(copies.size() == 1 ? "v_in" : "k_in, v_in") +
                            ": compute_root, head-major float32 rows (read by every query "
                            "tile), 64-row tasks parallel");
}

/// P.V per query tile and key block.
void scheduleTunedWeightedSum(AlgorithmFuncs &f, const TunedPlan &p) {
  const int vec = p.vec, Dv = p.Dv, dVectors = p.dVectors, pvRows = p.pvRows;
  std::vector<std::string> &notes = f.scheduleNotes;
  Var d = f.d, ii = f.ii, io = p.io;
  // P.V: pvRows rows x Dv values in registers, one broadcast p per row and key.
  Var dO2("dO2"), dI2("dI2");
  if (p.pvSharedV) {
    // Per key: each V vector times the tile's rows (unrolled) into their
    // sums in block_pv, which a loop over d keeps in memory (L1).
    f.blockPV.compute_at(f.state, f.rk).vectorize(d, vec, TailStrategy::GuardWithIf);
    f.blockPV.update()
        .split(d, dO2, dI2, vec, TailStrategy::GuardWithIf)
        .vectorize(dI2)
        .reorder(dI2, ii, dO2, f.rj)
        .unroll(ii);
    notes.push_back("block_pv: compute_at softmax_state.rk; per key, each V vector once for the " +
                    std::to_string(p.TQ) + " rows (unrolled), their sums in L1");
    return;
  }
  f.blockPV.compute_at(f.state, io).vectorize(d, vec, TailStrategy::GuardWithIf);
  Stage pvUpdate = f.blockPV.update();
  std::optional<Var> dC2 = splitValueRegisters(pvUpdate, d, dO2, dI2, vec, dVectors, p.pvChunk);
  if (f.bf16Values) {
    // Each lane sums a pair of keys (vdpbf16ps): V is stored as key pairs
    // per value, P as bf16 pairs per row (one 32-bit broadcast).
    pvUpdate.reorder(withChunk({f.rjPairs.x, dI2, dO2, ii, f.rjPairs.y}, dC2, 5))
        .unroll(ii)
        .atomic()
        .vectorize(f.rjPairs.x);
    f.pPairs.compute_at(f.state, f.rk).vectorize(f.e).vectorize(ii, vec);
  } else {
    pvUpdate.reorder(withChunk({dI2, dO2, ii, f.rj}, dC2, 4)).unroll(ii);
  }
  notes.push_back("block_pv: compute_at softmax_state.io; micro-kernel " +
                  std::to_string(pvRows) + " rows x " + std::to_string(Dv) +
                  " values, d vectorized, rows unrolled" +
                  (f.bf16Values ? ", bf16 pairs of keys per lane (vdpbf16ps)" : ""));
}

/// Decode's K and V rows as their prefetches name them: the buffers (the
/// caches, or k and v), a row's bytes and cache lines at a width (64 values
/// where it is not a constant), and whether V is laid out as K (the same
/// constant width).
struct DecodeRowBuffers {
  std::string k, v;
  int elementBytes;
  bool sameLayout;
  int rowBytes(const Expr &width) const { return constantOf(width, 64) * elementBytes; }
  int lines(const Expr &width) const { return (rowBytes(width) + 63) / 64; }
};

DecodeRowBuffers decodeRowBuffers(const AlgorithmFuncs &f, const KernelDesc &k) {
  const int dk = constantOf(f.Dk, 0);
  return {k.cache.any() ? f.kCache.name() : "k", k.cache.any() ? f.vCache.name() : "v",
          k.kvDtype == ElemType::F32 ? 4 : 2, dk > 0 && dk == constantOf(f.Dv, 0)};
}

/// Decode's K rows prefetched about 4 KiB ahead of the Q.K^T loop that reads
/// them, and V's rows by the same loop where V is laid out as K (then P.V's
/// loop has no call in it and keeps its sums in registers, which a paged
/// cache's run-time block range otherwise spills), else by P.V's loop
/// (Prefetches.h). Inputs or caches, paged or not.
void prefetchDecodeRows(AlgorithmFuncs &f, const AttentionConfig &config,
                        const std::string &keyLoop, std::vector<std::string> &notes) {
  const KernelDesc &k = config.kernel;
  const DecodeRowBuffers rows = decodeRowBuffers(f, k);
  // A paged cache's rows 8 KiB ahead: its pages are scattered over the pool,
  // and the next page's first lines are then asked for before its keys are
  // reached (paged(16), f32, D=128: 3-5% faster than 4 KiB; contiguous rows
  // measured the same from 2 to 32 KiB).
  const int bytesAhead = k.cache.paged() ? 8192 : 4096;
  auto keysAhead = [&](const Expr &width) {
    return std::max(4, bytesAhead / rows.rowBytes(width));
  };
  RowPrefetch keys{f.qk.name(), keyLoop, 1, {rows.k}, keysAhead(f.Dk), rows.lines(f.Dk), {}};
  if (rows.sameLayout)
    keys.twins.push_back(rows.v);
  else
    f.rowPrefetches.push_back(
        {f.blockPV.name(), f.rj.x.name(), 1, {rows.v}, keysAhead(f.Dv), rows.lines(f.Dv), {}});
  f.rowPrefetches.push_back(keys);
  notes.push_back("k: rows prefetched " + std::to_string(keysAhead(f.Dk)) +
                  " keys ahead (into L2); v: " +
                  (rows.sameLayout ? "each key's row by the same loop" : "likewise by P.V's loop"));
}

/// Decode whose K rows the core's prefetchers fetch: each key's V row is
/// asked for by the Q.K^T loop that reads its K row, so the core streams K
/// and V at once, as a read probe of two arrays does, instead of one stream
/// at a time (Q.K^T's K, then P.V's V: one thread read 18 GB/s that way
/// against 30 for the probe on Zen 5). P.V then finds the block's V in L2.
/// Where V is laid out as K only (the same row width).
void prefetchValueRowsWithKeys(AlgorithmFuncs &f, const AttentionConfig &config,
                               const std::string &keyLoop, std::vector<std::string> &notes) {
  const DecodeRowBuffers rows = decodeRowBuffers(f, config.kernel);
  std::string detail = "no prefetch instructions";
  if (rows.sameLayout) {
    RowPrefetch values{f.qk.name(), keyLoop, 1, {rows.k}, 0, rows.lines(f.Dk), {rows.v}};
    values.rowsAhead = false;
    f.rowPrefetches.push_back(values);
    detail = "v's row of each key prefetched by the Q.K^T loop";
  }
  notes.push_back("k, v: rows read by the core's own prefetchers (" + detail + "), key blocks of " +
                  std::to_string(f.blockK));
}

/// Scores and exponentials computed by chunks (AlgorithmFuncs::scoresByChunk)
/// over one whole block of one tile: the trimmed chunks and keys would make
/// bounds inference size their buffers at run time (a malloc per block).
/// (Not for Halide's autoscheduler, which cannot take partial bounds.)
void boundChunkedBlocks(AlgorithmFuncs &f) {
  if (f.scoresByChunk)
    for (Func fn : {f.blockScore, f.blockExp})
      fn.bound(f.jj, 0, f.blockK).bound_extent(f.kb, 1);
}

/// Scores, max, exponentials and sums of one key block: register-blocked
/// Q.K^T over query vectors, or over key vectors for few query rows.
void scheduleTunedBlocks(AlgorithmFuncs &f, const AttentionConfig &config, const TunedPlan &p) {
  const int vec = p.vec, TQ = p.TQ, BK = p.BK;
  std::vector<std::string> &notes = f.scheduleNotes;
  Var d = f.d, ii = f.ii, qt = f.qt, h = f.h, b = f.b, jj = f.jj, i = f.i, j = f.j;
  // The block's scores, max, exponentials and sum, per key block.
  for (Func fn : {f.blockScore, f.blockMax, f.blockExp, f.blockSum})
    fn.compute_at(f.state, f.rk);
  // One query tile per key block: with run-time sizes bounds inference
  // could only say "at most one", and the block's scores and exponentials
  // (8 KiB each) were a malloc and a free per key block (38,000 per call of
  // a dynamic causal N=2922 prefill); fixed extents put all four on the stack.
  for (Func fn : {f.blockScore, f.blockMax, f.blockExp, f.blockSum})
    fn.bound_extent(qt, 1);
  // Nor more than one key block: a key chunk's block test (a cache's
  // sequence length) made bounds inference say "a range of blocks", and each
  // block's buffers were a malloc and a free (split decode over a cache).
  if (f.splits > 1)
    for (Func fn : {f.blockScore, f.blockMax, f.blockExp, f.blockSum, f.blockPV})
      fn.bound_extent(f.kb, 1);
  boundChunkedBlocks(f);
  if (p.rowVectors) {
    // Q.K^T: (2 x vec) queries x 8 keys in registers, vectorized over queries.
    int ir = (TQ % (2 * vec) == 0) ? 2 * vec : vec;
    int jr = f.qkKeys;
    // On the stack at the block's size: bounds inference trims a causal
    // diagonal block's scores to the tile's keys (fixed sizes), and a buffer
    // of that run-time size was a malloc and a free per key block and tile
    // (causal N=2048: 11.7 or 13.8 ms from one run to the next).
    for (Func fn : {f.blockScore, f.blockExp})
      fn.store_in(MemoryType::Stack);
    Var jo("jo"), ji("ji"), iq("iq"), iv("iv"), ivo("ivo"), ivi("ivi");
    f.blockScore.reorder_storage(ii, jj, qt, f.kb, h, b);
    if (f.scoresByChunk) {
      // The chunks that hold visible keys (rjc.y), jr keys each (rjc.x).
      f.blockScore.update()
          .split(ii, iq, iv, ir)
          .split(iv, ivo, ivi, vec)
          .reorder(ivi, ivo, f.rjc.x, iq, f.rjc.y)
          .vectorize(ivi)
          .unroll(ivo)
          .unroll(f.rjc.x);
    } else {
      f.blockScore.split(jj, jo, ji, jr)
          .split(ii, iq, iv, ir)
          .split(iv, ivo, ivi, vec)
          .reorder(ivi, ivo, ji, iq, jo)
          .vectorize(ivi)
          .unroll(ivo)
          .unroll(ji);
    }
    Var qo("qo"), qi("qi");
    f.qk.compute_at(f.blockScore, iq).reorder_storage(i, j, h, b);
    // A custom score, bias or mask may read i (e.g. select(j < i, ...)):
    // bounds inference then trims qk's region through the condition to a
    // variable extent (at most ir x jr), which cannot be unrolled as is.
    // Guarded register-sized chunks of it can; built-ins keep the exact tile.
    const bool customExprs = config.customScore.defined() || config.customBias.defined() ||
                             config.kernel.hasMask(MaskKind::Custom);
    // bf16Products: each lane sums a pair of channels (vdpbf16ps), the
    // pair innermost and vectorized with the queries (a VectorReduce).
    const bool pairs = f.bf16Products;
    if (customExprs) {
      Var jc("jc"), jq("jq"), ic("ic"), iw("iw");
      for (Stage st : {Stage(f.qk), f.qk.update()})
        st.split(j, jc, jq, jr, TailStrategy::GuardWithIf)
            .split(i, ic, iw, ir, TailStrategy::GuardWithIf)
            .split(iw, qo, qi, vec)
            .vectorize(qi)
            .unroll(qo)
            .unroll(jq);
      f.qk.reorder(qi, qo, jq, ic, jc);
      if (pairs)
        f.qk.update().reorder(f.rdPairs.x, qi, qo, jq, f.rdPairs.y, ic, jc);
      else
        f.qk.update().reorder(qi, qo, jq, f.rd, ic, jc);
    } else {
      f.qk.split(i, qo, qi, vec).reorder(qi, qo, j).vectorize(qi).unroll(qo).unroll(j);
      // Whole micro-kernels of keys, also past Lk (they read clamped rows and
      // block_score masks them): trimmed to Lk through block_score's select,
      // a run-time key count made Halide test each key of the chunk and lower
      // the key loop twice, once for the last block. A cache's rows past a
      // sequence's length may be unwritten, or behind unassigned pages.
      if (!f.cacheLen.defined())
        f.qk.bound_extent(j, jr);
      Stage update = f.qk.update();
      update.split(i, qo, qi, vec).vectorize(qi).unroll(qo).unroll(j);
      if (pairs)
        update.reorder(f.rdPairs.x, qi, qo, j, f.rdPairs.y);
      else
        update.reorder(qi, qo, j, f.rd);
    }
    if (pairs)
      f.qk.update().atomic().vectorize(f.rdPairs.x);
    notes.push_back("qk: compute_at block_score.iq; micro-kernel " + std::to_string(ir) +
                    " queries (vectorized) x " + std::to_string(jr) + " keys (unrolled)" +
                    (pairs ? ", bf16 pairs of channels per lane (vdpbf16ps)" : ""));
    f.blockMax.vectorize(ii, vec);
    f.blockMax.update().reorder(ii, f.rj).vectorize(ii, vec);
    f.blockExp.reorder_storage(ii, jj, qt, f.kb, h, b);
    if (f.scoresByChunk)
      f.blockExp.update().reorder(ii, f.rj).vectorize(ii, vec);
    else
      f.blockExp.reorder(ii, jj).vectorize(ii, vec);
    f.blockSum.vectorize(ii, vec);
    f.blockSum.update().reorder(ii, f.rj).vectorize(ii, vec);
  } else {
    // Few query rows (decode): vectorize over keys; the dot product runs
    // along d in vector lanes (rfactor) with one horizontal sum per key, so
    // K rows are read as whole vectors, never gathered.
    // (The additive score's sum over hidden units is a reduction of the same
    // shape, over W_q q + W_k k, stored with the hidden unit innermost.)
    const int reduced = constantOf(f.rd.x.extent(), 0);
    f.blockScore.vectorize(jj, vec, pureTail(BK, vec));
    f.blockExp.vectorize(jj, vec, pureTail(BK, vec));
    if (reduced <= 0 || reduced % vec != 0) {
      notes.push_back("qk: per key vector (few query rows), keys vectorized");
    } else {
      RVar rdo("rdo"), rdi("rdi");
      Var u("u");
      // Per key, the lanes of every row's dot product at once: each K vector
      // loaded serves all rows of the tile (GQA's query heads).
      f.qk.compute_at(f.state, f.rk).vectorize(j, vec, TailStrategy::GuardWithIf);
      Func lanes = f.qk.update().split(f.rd.x, rdo, rdi, vec).rfactor(rdi, u);
      f.qk.update().reorder(rdi, i, j).atomic().vectorize(rdi);
      f.qkSummedOnce = true;
      // A GQA group's rows reduced together: one vector_reduce of rows x vec
      // lanes into rows lanes (LLVM's shuffle tree shares its steps across
      // the rows), not a horizontal sum per row (9 instructions each).
      // Decode H=32 G=8 D=128 B=4: 2-3% faster (contiguous and paged cache).
      const bool rowsTogether = f.tileQ >= 2 && f.tileQ <= 16 && (f.tileQ & (f.tileQ - 1)) == 0;
      if (rowsTogether)
        f.qk.update().vectorize(i);
      // Every KV head in the block (paged decode): page by page, each page's
      // heads in turn, so Q.K^T reads a page's K rows (and asks for its V
      // rows) as one run of the pool.
      Var keyLoop = j;
      std::string keyLoopName = j.name();
      const int page = (int)config.kernel.cache.block;
      if (f.headsInsideBlocks && page > 0 && BK % page == 0) {
        Var pageOf("jp"), keyInPage("jk");
        f.qk.update().split(j, pageOf, keyInPage, page).reorder(rdi, i, keyInPage, h, pageOf);
        keyLoop = keyInPage;
        keyLoopName = j.name() + "." + keyInPage.name();
        notes.push_back("qk: page by page, every KV head of a page in turn (tasks of a "
                        "sequence's key chunk)");
      }
      lanes.compute_at(f.qk, keyLoop).reorder_storage(lanesInnermost(lanes, u)).vectorize(u);
      lanes.update().reorder(u, i, rdo).vectorize(u).unroll(i);
      // The vectors along d unrolled: LLVM unrolls f32 and bf16 rows itself,
      // but kept f16's conversions in a loop (decode H=32 G=8 D=128, f16
      // K/V: 9% faster on one thread).
      if (reduced / vec <= 16)
        lanes.update().unroll(rdo);
      if (f.evenOddLanes)
        notes.push_back("k, v: bf16 rows read as 32-bit words, each chunk of " +
                        std::to_string(2 * f.evenOddLanes) +
                        " channels as its even then its odd ones (a shift or a mask per "
                        "vector)");
      if (f.decodeRowsByHardware)
        prefetchValueRowsWithKeys(f, config, keyLoopName, notes);
      else
        prefetchDecodeRows(f, config, keyLoopName, notes);
      notes.push_back("qk: compute_at softmax_state.rk; per key and row a " +
                      std::to_string(vec) + "-lane dot product along d (rfactor, every row's "
                      "lanes at once) and one horizontal sum");
    }
  }
  notes.push_back("block_score, block_max, block_exp, block_sum: compute_at softmax_state.rk "
                  "(tile " + std::to_string(TQ) + " queries x " + std::to_string(BK) + " keys)");
}

/// The sink prefix of a mask union (AlgorithmFuncs::sinkScore): once per
/// query tile, where the state starts; Q.K^T over row vectors with S' keys
/// of it in registers, P.V with a chunk of the value row in registers.
void scheduleSinkPrefix(AlgorithmFuncs &f, const TunedPlan &p) {
  if (!f.hasSinkPrefix())
    return;
  const int vec = p.vec, sinkKeys = constantOf(f.rsk.x.extent(), 1);
  Var d = f.d, ii = f.ii, qt = f.qt, h = f.h, b = f.b, i = f.i, j = f.j, sk = f.sk;
  // Beside the state (its pure stage reads them): per out task, or at the
  // root with the query tiles in parallel.
  for (Func fn : f.sinkFuncs())
    fn.compute_at(p.stateLevel);
  if (!p.stateInOutTile) {
    f.sinkQk.parallel(b);
    f.sinkQk.update().parallel(b);
    for (Func fn : {f.sinkScore, f.sinkExp})
      fn.parallel(qt);
    for (Func fn : {f.sinkMax, f.sinkSum, f.sinkPV}) {
      fn.parallel(qt);
      fn.update().parallel(qt);
    }
  }
  Var io("io"), iv("iv"), jo("jo"), ji("ji");
  // A tile of 16k + 1 rows (a fixed seq_q of 17) would lose its last row in
  // a guarded pure stage (pureTail); the updates keep their guards.
  const TailStrategy rowTail = pureTail(p.TQ, vec);
  f.sinkQk.reorder_storage(i, j, h, b).vectorize(i, vec, rowTail);
  f.sinkQk.update()
      .split(j, jo, ji, divisorAtMost(sinkKeys, 8), TailStrategy::GuardWithIf)
      .split(i, io, iv, vec, TailStrategy::GuardWithIf)
      .reorder(iv, ji, f.rd, io, jo)
      .vectorize(iv)
      .unroll(ji);
  for (Func fn : {f.sinkScore, f.sinkExp})
    fn.reorder_storage(ii, sk, qt, h, b).vectorize(ii, vec, rowTail);
  for (Func fn : {f.sinkMax, f.sinkSum}) {
    fn.vectorize(ii, vec, rowTail);
    fn.update().reorder(ii, f.rsk).vectorize(ii, vec, TailStrategy::GuardWithIf);
  }
  Var dO("dO"), dI("dI");
  f.sinkPV.vectorize(d, vec, TailStrategy::GuardWithIf);
  Stage pv = f.sinkPV.update();
  std::optional<Var> dC = splitValueRegisters(pv, d, dO, dI, vec, p.dVectors, p.pvChunk);
  pv.reorder(withChunk({dI, dO, f.rsk, ii}, dC, 3));
  f.scheduleNotes.push_back("sink prefix (" + std::to_string(sinkKeys) +
                            " keys): computed beside softmax_state (its starting value), rows "
                            "vectorized; the key blocks skip the sinks");
}

/// `weights` in bands of 32 rows, their scores (qk_weights) per band as a
/// register-blocked micro-kernel (4 rows x 4 vectors of keys; AVX2 2) over
/// the channels that reads the keys from a per-head copy turned key-major,
/// so a vector of keys is one load. Computed per vector of the weights
/// instead, reading K rows with a stride of D, the scores ran at 25 GFLOP/s
/// (N=512, H=8, D=64: 10.5 of the kernel's 14 ms). Bounds inference trims a
/// band's region by the score's and masks' conditions on i and j (`select(j
/// > i, ...)`, causal), which a tile of fixed bounds failed: the blocks round
/// that region up instead, from clamped rows as Q.K^T's chunks (guarded
/// tails compiled 0.3 s slower for run-time sizes, and ran no faster).
/// A fixed seq_q under 4 takes blocks of that many rows. Caches and packed
/// batches keep scheduleOutput, and so does the additive score: its tanh,
/// not the loads, bounds its scores (blocks of one row over a key-major copy
/// of W_k k measured no faster on the d2l shape: 64 against 59 ms).
bool weightsInBands(const AlgorithmFuncs &f) {
  return !f.cacheLen.defined() && f.sequenceTables.empty() && !f.kHoist.defined();
}

void scheduleWeights(AlgorithmFuncs &f, int vec) {
  const int keys = vec * (vec >= 16 ? 4 : 2), bandRows = 32;
  const int64_t *fixedRows = as_const_int(f.Lq);
  const int rows = fixedRows ? (int)std::min<int64_t>(4, *fixedRows) : 4;
  Func w = f.weights, s = f.qkWeights;
  std::vector<Var> wArgs = w.args(); // (j, i, h, b)
  Var band("w_band"), row("w_row"), task("w_task");
  w.split(wArgs[1], band, row, bandRows, TailStrategy::GuardWithIf)
      .reorder(wArgs[0], row, band)
      .vectorize(wArgs[0], vec, TailStrategy::GuardWithIf)
      .fuse(wArgs[2], wArgs[3], task)
      .parallel(task);
  std::vector<Var> sArgs = s.args(); // (j, i, h, b)
  s.compute_at(w, band).vectorize(sArgs[0], vec, TailStrategy::GuardWithIf);
  Var block("w_keys"), key("w_key"), kv("w_key_vectors"), lane("w_key_lanes");
  Var rowBlock("w_rows"), blockRow("w_rows_row");
  s.update()
      .split(sArgs[0], block, key, keys, TailStrategy::RoundUp)
      .split(key, kv, lane, vec)
      .split(sArgs[1], rowBlock, blockRow, rows, TailStrategy::RoundUp)
      .reorder(lane, kv, blockRow, f.rd, block, rowBlock)
      .vectorize(lane)
      .unroll(kv)
      .unroll(blockRow);
  Func turned = (f.kUnit.defined() ? f.kUnit : f.kIn).in(s);
  std::vector<Var> tArgs = turned.args(); // (channel, j, g, b)
  turned.compute_at(w, task)
      .reorder_storage(tArgs[1], tArgs[0], tArgs[2], tArgs[3])
      .reorder(tArgs[1], tArgs[0])
      .vectorize(tArgs[1], vec, TailStrategy::GuardWithIf);
  f.scheduleNotes.push_back("weights: bands of " + std::to_string(bandRows) +
                            " rows, their scores a micro-kernel of " + std::to_string(rows) +
                            " rows x " + std::to_string(keys) +
                            " keys over a per-head key-major copy of the keys");
}

/// The outputs not computed inside the state's tiles.
void scheduleTunedOutputs(AlgorithmFuncs &f, const TunedPlan &p) {
  const int vec = p.vec;
  std::vector<std::string> &notes = f.scheduleNotes;
  for (Func out : f.outputs) {
    bool cache = out.name() == f.kCache.name() || out.name() == f.vCache.name();
    bool tiled = (p.stateInOutTile || f.outIsProductTiles) && out.name() == f.out.name();
    if (cache || tiled)
      continue;
    if (out.name() == f.weights.name() && weightsInBands(f))
      scheduleWeights(f, vec);
    else
      scheduleOutput(out, vec, f.perVectorOf(out));
  }
  if (!p.stateInOutTile)
    notes.push_back("outputs: innermost dimension vectorized, outer dimensions parallel");
}

void scheduleTuned(AlgorithmFuncs &f, const AttentionConfig &config, const Target &target) {
  TunedPlan p;
  p.vec = target.natural_vector_size<float>();
  p.TQ = f.tileQ;
  p.rowVectors = p.TQ % p.vec == 0;
  p.BK = f.blockK;
  p.Dv = constantOf(f.Dv, 64);
  p.dVectors = (p.Dv + p.vec - 1) / p.vec;
  const int accumulators = p.vec >= 16 ? 16 : 8; // of 32 zmm / 16 ymm registers
  // P.V in chunks of 4 vectors of the value row, for as many rows as
  // registers hold (4 on AVX-512): per key 4 V loads and 4 broadcasts feed 16
  // FMAs, and a chunk's V block stays in L1. Whole rows of up to 16 vectors
  // for fewer rows (2 rows of 8 at head_dim 128, 1 row of 16 at 256, which
  // re-read the 64 KiB V block from L2 for every row) ran 1.2x (128, dense)
  // and 1.6x (256) slower on Zen 5; causal and bf16 kernels the same.
  p.pvChunk = std::min(p.dVectors, 4);
  // Decode tiles (fewer rows than a vector) stream each V row once per row:
  // the whole row of values in registers beats re-reading the block per
  // chunk of it, even where 16 accumulators spill one register on AVX2.
  if (p.TQ < p.vec)
    p.pvChunk = std::min(p.dVectors, 16);
  p.pvRows = divisorAtMost(p.TQ, std::max(1, accumulators / std::min(p.dVectors, p.pvChunk)));
  // Measured on AVX2 (decode H=32 G=8 D=128: f32 5%, bf16 6%, f16 1.6-2.2x
  // faster); AVX-512 keeps more rows in its 32 registers.
  p.pvSharedV = p.vec == 8 && p.TQ > 1 && p.TQ < p.vec && p.pvRows < p.TQ;
  // With an output projection, the heads' results in query tiles with the
  // state inside (one parallel loop, not the root state's nested ones):
  // MHA with projections at N=512 1-7% faster.
  f.attnTiledByState = config.kernel.outputProjected() && !config.kernel.packed &&
                       f.splits == 1 && f.groupP == 1 && f.outputs.size() == 1;
  schedulePrecomputed(f, p.vec);
  scheduleScoreRows(f, p.vec, f.scheduleNotes);
  scheduleTunedState(f, config, p);
  scheduleTunedQueries(f, config, p);
  scheduleKeyValueRows(f, config, p);
  scheduleTunedWeightedSum(f, p);
  scheduleTunedBlocks(f, config, p);
  scheduleSinkPrefix(f, p);
  scheduleTunedOutputs(f, p);
}

void scheduleSimple(AlgorithmFuncs &f, const AttentionConfig &config, const Target &target) {
  scheduleSequenceTables(f);
  scheduleBiasTable(f, target.natural_vector_size<float>());
  scheduleCacheWrites(f, target.natural_vector_size<float>());
  for (Func p : f.precomputed)
    p.compute_root();
  scheduleScoreRows(f, target.natural_vector_size<float>(), f.scheduleNotes);
  scheduleRotary(f, config, target.natural_vector_size<float>(), std::nullopt);
  if (f.kHoist.defined()) {
    f.qHoist.compute_root();
    f.kHoist.compute_root();
  }
  f.state.compute_root();
  f.state.update().reorder(f.rc, f.ii, f.rk, f.qt, f.s, f.h, f.b).parallel(f.b);
  if (f.splits > 1)
    f.merged.compute_root();
  for (Func fn : {f.blockScore, f.blockMax, f.blockExp, f.blockSum, f.blockPV})
    fn.compute_at(f.state, f.rk);
  boundChunkedBlocks(f);
  // The sink prefix (and then the queries, which it reads too) at the root.
  const bool sinks = f.hasSinkPrefix();
  if (sinks)
    for (Func fn : f.sinkFuncs())
      fn.compute_root();
  if (f.qs.defined() && (f.weights.defined() || sinks))
    f.qs.compute_root();
  else if (f.qs.defined())
    f.qs.compute_at(f.state, f.qt);
  if (f.groupP > 1) {
    if (sinks)
      f.qRow.compute_root();
    else
      f.qRow.compute_at(f.state, f.qt);
  }
  f.scheduleNotes.push_back("softmax_state: compute_root, loops b (parallel) > h > qt > rk > ii > d");
  f.scheduleNotes.push_back("block funcs: compute_at softmax_state.rk; nothing vectorized");
}

/// The autoscheduler tiles outputs with ShiftInwards splits sized for the
/// estimates; a run with fewer rows than a tile (Lq < 16) would then write
/// before the buffer's start. Guard every split of every output stage.
void guardOutputSplits(AlgorithmFuncs &f) {
  for (Func out : f.outputs) {
    Internal::Function fn = out.function();
    std::vector<Internal::Definition> defs{fn.definition()};
    for (int k = 0; k < (int)fn.updates().size(); ++k)
      defs.push_back(fn.update(k));
    for (Internal::Definition &def : defs)
      for (Internal::Split &split : def.schedule().splits())
        if (split.is_split())
          split.tail = TailStrategy::GuardWithIf;
  }
}

void scheduleAuto(AlgorithmFuncs &f, const AttentionConfig &, const Target &target) {
  static std::once_flag loaded;
  static std::string loadError;
  std::call_once(loaded, [] {
    try {
      load_plugin("/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_mullapudi2016.so");
    } catch (const std::exception &e) {
      loadError = e.what();
    }
  });
  if (!loadError.empty())
    throw BackendError("cannot load the Mullapudi2016 autoscheduler: " + loadError);
  // 2 cores, a 32 MiB last-level cache, load cost 40x an arithmetic op.
  Pipeline p = f.pipeline();
  std::vector<std::string> warnings;
  AutoSchedulerResults results;
  {
    // The autoscheduler's warnings ("Outer dim vectorization ...") would go
    // to the user's stderr; they belong with the schedule notes.
    HalideWarningScope collect(warnings);
    results = p.auto_schedule("Mullapudi2016", target, MachineParams(2, 32 * 1024 * 1024, 40));
  }
  guardOutputSplits(f);
  f.scheduleNotes.push_back("Mullapudi2016 autoscheduler, MachineParams(2, 32 MiB, 40):");
  f.scheduleNotes.push_back(results.schedule_source);
  for (const std::string &w : warnings)
    f.scheduleNotes.push_back("autoscheduler warning: " + w);
  f.scheduleNotes.push_back("outputs: every split guarded (GuardWithIf), so rows fewer than "
                            "a tile are never written out of bounds");
}

using ScheduleFn = void (*)(AlgorithmFuncs &, const AttentionConfig &, const Target &);
struct PolicyRow {
  SchedulePolicy policy;
  ScheduleFn apply;
};
const PolicyRow kPolicies[] = {
    {SchedulePolicy::Tuned, scheduleTuned},
    {SchedulePolicy::Simple, scheduleSimple},
    {SchedulePolicy::Auto, scheduleAuto},
};

} // namespace

void scheduleMatrixProduct(Func p, int vec) { scheduleProjection(p, vec); }

void scheduleRootStages(AlgorithmFuncs &f, int vec) { schedulePrecomputed(f, vec); }

void applySchedule(AlgorithmFuncs &funcs, const AttentionConfig &config,
                   SchedulePolicy policy, const Target &target) {
  funcs.policyName = toString(policy);
  funcs.scheduleNotes.clear();
  try {
    if (funcs.isBackward()) // one schedule for the gradients, whatever the policy
      return scheduleGradients(funcs, config, target);
    for (const PolicyRow &row : kPolicies)
      if (row.policy == policy)
        row.apply(funcs, config, target);
  } catch (const BackendError &) {
    throw;
  } catch (const Halide::Error &e) {
    // The autoscheduler's limits are its own: the update definitions of
    // packed batches' tables and of paged caches' writes are beyond it (an
    // internal assertion, RVars it cannot reorder).
    if (policy == SchedulePolicy::Auto && !funcs.isBackward())
      refuseAutoSchedule(funcs.name,
                         "cannot schedule it; it does not handle packed batches or paged KV "
                         "caches",
                         e.what());
    throw BackendError("kernel '" + funcs.name + "': cannot apply the " +
                       std::string(toString(policy)) + " schedule: " + e.what());
  }
}

void refuseAutoSchedule(const std::string &kernel, const std::string &problem,
                        const std::string &halideError) {
  std::string why = halideError.substr(0, halideError.find('\n'));
  while (!why.empty() && (why.back() == ' ' || why.back() == ':'))
    why.pop_back();
  if (why.rfind("Error: ", 0) == 0)
    why = why.substr(7);
  throw CommandLineError("kernel '" + kernel + "': Halide's autoscheduler (Mullapudi2016) " +
                         problem + ". Use --schedule=tuned (the default) or --schedule=simple. " +
                         "Halide: " + why);
}

} // namespace attnc::halide_backend
