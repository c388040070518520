//===- GradientSchedule.cpp - The schedule of NAME_backward ---------------===//
//
// The single pass: one parallel task per (row chunk, row group, batch row);
// per key block, per query tile of the chunk, the tile as below, then its
// three sums, each a micro-kernel of 4 keys or rows x 2 vectors of d (8 keys
// or rows with AVX-512's 32 registers, as its Q.K^T and dO.V^T below).
// The key pass: one parallel task per (key block, KV head, batch row); per
// query tile of the block it computes the tile's transposed rows, Q.K^T and
// dO.V^T (2 vectors of rows x 4 keys in registers), P and dS (vectorized
// over rows), then adds dS^T Q and P^T dO into the block's (dK, dV) with a
// micro-kernel of 2 keys x 2 vectors of d for both sums. The query pass:
// one task per (query tile, KV head, batch row); per key block the same
// tile, then dQ += dS K with 4 rows x 2 vectors of d. Tiles no row sees are
// skipped by the RDoms' predicates (the forward's key-block skipping).
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/Schedules.h"

using namespace Halide;

namespace attnc::halide_backend {

namespace {

/// Keys or rows unrolled beside a micro-kernel's 2 vectors: 16 sums in
/// AVX-512's 32 registers, 8 in AVX2's 16 (dense backward N=2048 ~8% faster
/// with 8 on AVX-512).
int unrolledBesideTwoVectors(int vec) { return vec >= 16 ? 8 : 4; }

/// The reduction variables of a Func's first update.
std::vector<RVar> rvarsOf(const Func &fn) {
  std::vector<RVar> rvars;
  for (const Internal::ReductionVariable &rv : fn.function().update(0).schedule().rvars())
    rvars.push_back(RVar(rv.var));
  return rvars;
}

/// One tile's Funcs computed at `level` (a pass's loop over tiles).
void scheduleTile(AlgorithmFuncs &f, const AlgorithmFuncs::Gradients::Tile &t,
                  LoopLevel level, int vec, bool rowsAtRoot = false) {
  // Pure definitions of tile Funcs may compute a few rows or keys past the
  // tile (their reads are clamped): no tail code; updates must guard.
  const TailStrategy round = TailStrategy::RoundUp, guard = TailStrategy::GuardWithIf;
  Var j = f.j, ii = f.ii, jj = f.jj;
  // (The output pass's tile has no dP and dS.) The single pass visits a
  // query tile once per key block: its rows are transposed once per call.
  for (Func rowsT : {t.qT, t.doT}) {
    if (!rowsT.defined())
      continue;
    if (rowsAtRoot)
      rowsT.compute_root().vectorize(ii, vec, round).parallel(f.h);
    else
      rowsT.compute_at(level).vectorize(ii, vec, round);
  }
  // Q.K^T and dO.V^T over (key, row): 2 vectors of rows x 4 keys held in
  // registers across the sum along d (8 keys with AVX-512).
  for (Func product : {t.qk, t.dp}) {
    if (!product.defined())
      continue;
    Var jO("jO"), jI("jI"), iO("iO"), iW("iW"), iM("iM"), iV("iV");
    product.compute_at(level).reorder_storage(ii, j).vectorize(ii, vec, round);
    Stage update = product.update();
    // Vectors first, then pairs of them: the other order (pairs, then
    // vectors, both guarded) miscompiles in Halide 14 and added a row's
    // last vector twice (Schedules.cpp, splitValueRegisters).
    update.split(j, jO, jI, unrolledBesideTwoVectors(vec), guard)
        .split(ii, iW, iV, vec, guard)
        .split(iW, iO, iM, 2, guard)
        .reorder({iV, iM, jI, rvarsOf(product)[0], iO, jO})
        .vectorize(iV)
        .unroll(iM)
        .unroll(jI);
  }
  for (Func tile : {t.p, t.ds})
    if (tile.defined())
      tile.compute_at(level).reorder_storage(ii, jj).reorder(ii, jj).vectorize(ii, vec, round);
}

/// The passes' sums: `d` in 2 vectors, `row` (a key or a query row) in
/// `rows` unrolled, the tile's reduction `x` inside, then the tile loop `y`,
/// then the task's three pure variables fused into one parallel loop.
/// The zeros are stored by the same parallel tasks: a serial loop nest of
/// constant extents was unrolled whole by LLVM, and with a width of 16k + 1
/// (a masked store per row) LLVM 14's instruction selection never finished
/// on that block (value_dim = 17, 512 rows: BUG-12, lit codegen-deadline).
/// Rows are padded to whole vectors: with rows of 17 values, Halide 14 gave
/// one row's even/odd lane loads (rotary's pairs) another row's alignment
/// and claimed 64 bytes for an address 8 bytes past it, a vmovaps fault
/// (BUG-13); with each row aligned every such claim holds.
void scheduleSum(Func sum, Var row, RVar x, RVar y, std::vector<Var> task, int rows, int vec) {
  const TailStrategy guard = TailStrategy::GuardWithIf;
  Var d = sum.args()[0];
  Var dO("dO"), dW("dW"), dM("dM"), dV("dV"), rO("rO"), rI("rI");
  sum.compute_root().align_storage(d, vec).vectorize(d, vec, guard);
  fuseIntoParallel(sum, {task[0], task[1], task[2]}, "t");
  sum.update() // (vectors first, then pairs of them: see scheduleTiles)
      .split(d, dW, dV, vec, guard)
      .split(dW, dO, dM, 2, guard)
      .split(row, rO, rI, rows, guard)
      .reorder({dV, dM, rI, x, dO, rO, y, task[0], task[1], task[2]})
      .vectorize(dV)
      .unroll(dM)
      .unroll(rI);
  fuseIntoParallel(sum.update(), {task[0], task[1], task[2]}, "t");
}

/// The single pass's sums: the tile's three sums unrolled under the tile
/// loop, each with `d` in 2 vectors and 4 keys or rows of v (8 with AVX-512)
/// unrolled around the reduction u; the task's (chunk, row group, batch row)
/// in parallel.
/// Then the chunks' (dK, dV) partials added, key blocks in parallel.
void scheduleSinglePass(AlgorithmFuncs &f, int vec) {
  AlgorithmFuncs::Gradients &g = f.grad;
  const TailStrategy guard = TailStrategy::GuardWithIf;
  Var d = f.d, h = f.h, b = f.b;
  Var dO("dO"), dW("dW"), dM("dM"), dV("dV");
  RVar u = g.pairs[0], v = g.pairs[1], which = g.pairs[2], y = g.pairs[3], kb = g.pairs[4];
  RVar vO("vO"), vI("vI");
  g.sums.compute_root().vectorize(d, vec, guard).parallel(h);
  g.sums.update() // (vectors first, then pairs of them: see scheduleTiles)
      .split(d, dW, dV, vec, guard)
      .split(dW, dO, dM, 2, guard)
      .split(v, vO, vI, unrolledBesideTwoVectors(vec), guard)
      .reorder({dV, dM, vI, u, dO, vO, which, y, kb, g.chunk, h, b})
      .vectorize(dV)
      .unroll(dM)
      .unroll(vI)
      .unroll(which);
  fuseIntoParallel(g.sums.update(), {g.chunk, h, b}, "t");
  g.dKV.compute_root().vectorize(d, vec, guard).parallel(f.kb);
  g.dKV.update().vectorize(d, vec, guard).parallel(f.kb);
}

/// 16-bit K and V widened once per call into head-major float32 rows, as the
/// forward's prefill does: the tiles read every key once per query tile, and
/// f16 widened at each read made the backward 1.7x slower than f32. (Rotary
/// keys are such rows already; projected ones are float32 products.)
void widenKeysAndValuesOnce(AlgorithmFuncs &f, const AttentionConfig &config, int vec) {
  const KernelDesc &k = config.kernel;
  if (k.kvDtype == ElemType::F32 || k.project != ProjectKind::None)
    return;
  std::vector<std::pair<Func, Expr>> rows{{f.vIn, f.Dv}};
  if (k.positional != PositionalKind::Rotary)
    rows.push_back({f.kIn, f.Dk});
  for (auto &[fn, width] : rows)
    scheduleHeadMajorRows(f, fn, vec, pureTail(constantOf(width, 0), vec));
  f.scheduleNotes.push_back(std::string(rows.size() == 1 ? "v_in" : "k_in, v_in") +
                            ": 16-bit rows widened once, compute_root, 64-row tasks parallel");
}

} // namespace

void scheduleGradients(AlgorithmFuncs &f, const AttentionConfig &config, const Target &target) {
  const int vec = target.natural_vector_size<float>();
  AlgorithmFuncs::Gradients &g = f.grad;
  std::vector<std::string> &notes = f.scheduleNotes;
  scheduleRootStages(f, vec); // the forward's projections, positions, transposed weights
  widenKeysAndValuesOnce(f, config, vec);
  for (Func table : {f.ropeInvFreq, f.ropeTable}) // rotary: one table per call
    if (table.defined())
      table.compute_root();
  // Per-row values of a fixed seq_q whose last vector holds one value keep
  // it unguarded (pureTail, scheduleRowSums): a cosine score's d_q of
  // seq_q = 17 was NaN in its last row (seed 52570164235637).
  auto fixed = [](const Expr &e) { return constantOf(Internal::simplify(e), 0); };
  const int queryRows = fixed(f.Lq), keyRows = fixed(f.Lk);
  g.rowLse.compute_root().vectorize(f.i, vec, pureTail(queryRows, vec)).parallel(f.b);
  scheduleRowSums(g.rowDot, f.i, queryRows, f.b, vec);
  if (f.qNormSq.defined()) {
    scheduleRowSums(f.qNormSq, f.i, queryRows, f.b, vec);
    scheduleRowSums(f.kNormSq, f.j, keyRows, f.b, vec);
  }
  // Scores' per-row inputs computed once (general's q W, cosine's norms).
  // (The scaled queries too: dK's sums read them per key.)
  for (Func rows : {f.qs, f.qHoist, f.kHoist, f.kUnit}) {
    if (!rows.defined())
      continue;
    Var inner = rows.args()[0], outer = rows.args().back();
    rows.compute_root().vectorize(inner, vec, TailStrategy::GuardWithIf).parallel(outer);
    if (rows.has_update_definition())
      rows.update().vectorize(inner, vec, TailStrategy::GuardWithIf).parallel(outer);
  }

  if (g.singlePass) {
    scheduleSinglePass(f, vec);
    scheduleTile(f, g.keyTile, LoopLevel(g.sums, g.pairs[3]), vec, /*rowsAtRoot=*/true);
  } else {
    // Key pass: (dK, dV) of a key block, 2 keys x 2 vectors of d x 2 sums.
    scheduleSum(g.dKV, f.jj, g.rowTiles.x, g.rowTiles.y, {f.kb, f.h, f.b}, 2, vec);
    scheduleTile(f, g.keyTile, LoopLevel(g.dKV, g.rowTiles.y), vec);
    // Query pass: dQ of a query tile, 4 rows x 2 vectors of d.
    scheduleSum(g.dQ, f.ii, g.keyBlocks.x, g.keyBlocks.y, {f.qt, f.h, f.b}, 4, vec);
    scheduleTile(f, g.queryTile, LoopLevel(g.dQ, g.keyBlocks.y), vec);
  }

  // With an output projection: O recomputed per query tile, like dQ.
  if (g.oRows.defined()) {
    scheduleSum(g.oRows, f.ii, g.outputBlocks.x, g.outputBlocks.y, {f.qt, f.h, f.b}, 4, vec);
    scheduleTile(f, g.outputTile, LoopLevel(g.oRows, g.outputBlocks.y), vec);
  }
  // Declared inputs' scatters: serial over every pair, tiles per key block.
  for (AlgorithmFuncs::Gradients::Scatter &s : g.scatters) {
    s.sum.compute_root();
    scheduleTile(f, s.tile, LoopLevel(s.sum, s.pairs[2]), vec);
  }
  for (Func product : g.products)
    scheduleMatrixProduct(product, vec);
  for (Func stage : g.chain) {
    // A pure stage whose last vector would hold one value shifts it inwards
    // (pureTail): guarded, d_k_flat of head_dim 17 and one KV head lost its
    // guard and wrote d_x_kv wrong (seed 112742411570197).
    // A sum's update keeps such a vector in a plain loop (scheduleRowSums).
    int values = 0;
    auto extent = g.chainExtents.find(stage.name());
    if (extent != g.chainExtents.end())
      values = fixed(extent->second);
    if (stage.has_update_definition() && stage.dimensions() > 1 && values > 0) {
      scheduleRowSums(stage, stage.args()[0], values, stage.args().back(), vec);
      continue;
    }
    TailStrategy tail = stage.has_update_definition() ? TailStrategy::GuardWithIf
                                                      : pureTail(values, vec);
    stage.compute_root().vectorize(stage.args()[0], vec, tail);
    if (stage.dimensions() > 1)
      stage.parallel(stage.args().back());
    if (stage.has_update_definition()) {
      stage.update().vectorize(stage.args()[0], vec, TailStrategy::GuardWithIf);
      if (stage.dimensions() > 1)
        stage.update().parallel(stage.args().back());
    }
  }
  for (Func out : f.outputs)
    if (!(f.outIsProductTiles && out.name() == f.out.name()))
      scheduleOutput(out, vec, f.perVectorOf(out));
  if (g.singlePass) {
    const int64_t *chunks = Internal::as_const_int(g.chunks);
    notes.push_back("backward: one pass (" +
                    (chunks ? std::to_string(*chunks) : std::string("1-8")) +
                    " row chunks, KV head, batch) parallel > key blocks > query tiles > Q.K^T, "
                    "dO.V^T, P, dS per tile > dK, dV, dQ += (4 keys or rows x 2 vectors)");
    notes.push_back("backward: the chunks' (dK, dV) partials added per key block, parallel");
    return;
  }
  notes.push_back("backward: key pass (key block, KV head, batch) parallel > query tiles > "
                  "Q.K^T, dO.V^T, P, dS per tile > dK, dV += (2 keys x 2 vectors)");
  notes.push_back("backward: query pass (query tile, KV head, batch) parallel > key blocks > "
                  "the same tile > dQ += (4 rows x 2 vectors)");
}

} // namespace attnc::halide_backend
