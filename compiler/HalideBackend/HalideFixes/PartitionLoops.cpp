//===- PartitionLoops.cpp - A query tile's key loop lowered once -----------===//
//
// Halide's loop partitioning copies a loop's whole body once per `likely`
// boundary found anywhere inside it (prologue, steady state, epilogue),
// outermost loop first. With run-time sizes, boundaries inside a query tile
// split the loop over tiles, and with it the tile's whole key loop, into
// copies that run the same key loop (2.2x the lowered code of
// `score = scaled_dot`, and so of the lowering and LLVM time):
//  * clamped rows of the tile's queries (`q_scaled`, `q_rows`, ...) and of
//    mask or bias tensors: the partitioner marks a clamped vector index as
//    likely in range, to turn a gather into a dense load in the steady state;
//    rows vectorized across a tile are strided gathers there too;
//  * the bounds of per-tile stages along the tile dimension, where bounds
//    inference marks a reduction domain's predicate likely
//    (`max(likely(qt), kb * 4)`): the copies differ only in how they write
//    the same region;
//  * boundaries of inner loops that also move with the tile (a key block's
//    first key under a window written as an expression).
// So the tile loop's body is partitioned alone (its inner loops as before),
// after the first two kinds are hidden: left in, they split the key loop
// inside instead (the builtin-masks spec example's code grew 2.3x). Halide 16's
// `never_partition` does the last part; 14 has none of it.
//
// A KV cache's key loop (`keyLoop`) is likewise partitioned body alone: the
// cache's length split a paged decode's key loop into two whole copies whose
// blocks test that length anyway (compile 3.3 -> 2.0 s, the same speed).
//
// libHalide14 calls partition_loops through its PLT, so this definition takes
// its place (see HalideFixes.h) while a QueryTileStages is in scope, and
// calls the library's own.
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"
#include "compiler/HalideBackend/HalideFixes/LibHalideOriginal.h"

#include <Halide.h>

#include <algorithm>

namespace attnc::halide_backend {

namespace {
thread_local QueryTileStages::Names current;
} // namespace

QueryTileStages::QueryTileStages(Names names) : previous(current) { current = std::move(names); }

QueryTileStages::~QueryTileStages() { current = previous; }

namespace fixes {
void anchorPartitionLoops() {}
} // namespace fixes

} // namespace attnc::halide_backend

// Halide::Internal::partition_loops(Stmt), mangled.
#define PARTITION_LOOPS "_ZN6Halide8Internal15partition_loopsENS0_4StmtE"

namespace {

using namespace Halide;
using namespace Halide::Internal;

using PartitionLoops = Stmt (*)(Stmt);

/// e without its likely tags.
class WithoutLikely : public IRMutator {
  using IRMutator::visit;
  Expr visit(const Call *op) override {
    if (op->is_intrinsic(Call::likely) || op->is_intrinsic(Call::likely_if_innermost))
      return mutate(op->args[0]);
    return IRMutator::visit(op);
  }
};

/// e with its ramp behind a let, where the library's MarkClampedRampsAsLikely
/// does not look (the simplification after partitioning substitutes it back).
Expr hiddenRamp(const Expr &e) {
  std::string name = unique_name('r');
  return Let::make(name, e, Variable::make(e.type(), name));
}

/// Partitions the tile loops' bodies alone, with these boundaries hidden:
///  * the named producers are partitioned first, alone (their own loops as
///    Halide would), and their remaining clamps hidden;
///  * elsewhere, a load's index clamped by min or max whose ramp moves with
///    the tile is hidden;
///  * lets that bound a stage along the tile dimension
///    (`block_sum.s1.qt.min_2`) lose their likely tags.
class HideTileBoundaries : public IRMutator {
public:
  HideTileBoundaries(const attnc::halide_backend::QueryTileStages::Names &names,
                     PartitionLoops partition)
      : names(names), partition(partition) {}

private:
  using IRMutator::visit;
  const attnc::halide_backend::QueryTileStages::Names &names;
  PartitionLoops partition;
  /// The tile loop's variable and the lets that depend on it.
  Scope<> movesWithTile;
  bool inIndex = false;
  /// Inside a named producer, already partitioned: every clamp is hidden.
  bool inPartitionedProducer = false;

  bool boundsTileDim(const std::string &let) const {
    const std::string dim = "." + names.tileDim + ".";
    size_t at = let.find(dim);
    if (at == std::string::npos)
      return false;
    std::string rest = let.substr(at + dim.size());
    return rest.rfind("min", 0) == 0 || rest.rfind("max", 0) == 0;
  }
  bool isTileLoop(const std::string &loop) const {
    const std::string suffix = "." + names.tileDim;
    return loop.size() > suffix.size() &&
           loop.compare(loop.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  /// A clamped ramp hidden when it moves with the tile, or in a named
  /// producer.
  Expr clampedOperand(const Expr &e) {
    const Ramp *ramp = e.as<Ramp>();
    if (ramp && (inPartitionedProducer || (inIndex && expr_uses_vars(ramp->base, movesWithTile))))
      return hiddenRamp(e);
    return mutate(e);
  }

  Stmt visit(const ProducerConsumer *op) override {
    const auto &tile = names.tileProducers;
    if (!op->is_producer || std::find(tile.begin(), tile.end(), op->name) == tile.end())
      return IRMutator::visit(op);
    Stmt partitioned = partition(op->body);
    ScopedValue<bool> hideAll(inPartitionedProducer, true);
    return ProducerConsumer::make(op->name, true, mutate(partitioned));
  }
  /// The loop with its body partitioned alone: the loop itself is not split.
  Stmt bodyPartitionedAlone(const For *op) {
    Stmt body = partition(mutate(op->body));
    return For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
  }
  Stmt visit(const For *op) override {
    if (!names.keyLoop.empty() && op->name == names.keyLoop)
      return bodyPartitionedAlone(op);
    if (!isTileLoop(op->name))
      return IRMutator::visit(op);
    ScopedBinding<> tile(movesWithTile, op->name);
    return bodyPartitionedAlone(op);
  }
  Expr visit(const Load *op) override {
    Expr predicate = mutate(op->predicate);
    bool outer = inIndex;
    inIndex = true;
    Expr index = mutate(op->index);
    inIndex = outer;
    return Load::make(op->type, op->name, index, op->image, op->param, predicate,
                      op->alignment);
  }
  Expr visit(const Min *op) override {
    return Min::make(clampedOperand(op->a), clampedOperand(op->b));
  }
  Expr visit(const Max *op) override {
    return Max::make(clampedOperand(op->a), clampedOperand(op->b));
  }
  template <typename LetOrLetStmt, typename Body>
  auto visitLet(const LetOrLetStmt *op, const Body &body) {
    Expr value = boundsTileDim(op->name) ? WithoutLikely().mutate(op->value) : mutate(op->value);
    ScopedBinding<> moves(expr_uses_vars(value, movesWithTile), movesWithTile, op->name);
    return LetOrLetStmt::make(op->name, value, mutate(body));
  }
  Stmt visit(const LetStmt *op) override { return visitLet(op, op->body); }
  Expr visit(const Let *op) override { return visitLet(op, op->body); }
};

} // namespace

Stmt partitionLoops(Stmt s) __asm__(PARTITION_LOOPS);

Stmt partitionLoops(Stmt s) {
  static const auto original = attnc::halide_backend::fixes::libHalideOriginal<PartitionLoops>(
      PARTITION_LOOPS, "partition_loops(Stmt)");
  if (!attnc::halide_backend::current.tileDim.empty())
    s = HideTileBoundaries(attnc::halide_backend::current, original).mutate(s);
  return original(s);
}
