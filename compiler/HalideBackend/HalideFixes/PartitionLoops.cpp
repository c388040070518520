//===- PartitionLoops.cpp - A query tile's key loop lowered once -----------===//
//
// Halide's loop partitioning copies a loop's whole body once per `likely`
// boundary found anywhere inside it (prologue, steady state, epilogue). With
// run-time sizes, two kinds of boundary inside a query tile split the loop
// over tiles, and with it the tile's whole key loop, into three copies that
// run the same key loop (2.2x the lowered code of `score = scaled_dot` with
// dynamic sizes, and so of the lowering and LLVM time):
//  * the clamped rows of the tile's queries (`q_scaled`, `q_rows`, ...): the
//    partitioner marks a clamped vector index as likely in range, to turn
//    a gather into a dense load in the steady state; these loads are strided
//    gathers there too;
//  * the bounds of per-tile stages along the tile dimension, where bounds
//    inference marks a reduction domain's predicate likely
//    (`max(likely(qt), kb * 4)`): the copies differ only in how they write
//    the same region.
// Halide 16's `never_partition` cannot say "not for these"; wrapping the
// whole tile loop instead left its conditions to the key loop inside, which
// then split further (the union masks' code grew 2.3x).
//
// libHalide14 calls partition_loops through its PLT, so this definition takes
// its place (see HalideFixes.h). While a QueryTileStages is in scope, it hides
// those two kinds of boundary from the library's pass, which it then calls.
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"

#include <Halide.h>

#include <dlfcn.h>

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

/// A vector index clamped by min or max keeps its ramp behind a let, where
/// the library's MarkClampedRampsAsLikely does not look (the simplification
/// after partitioning substitutes it back).
class HideClampedRamps : public IRMutator {
  using IRMutator::visit;
  Expr hidden(const Expr &e) {
    if (!e.as<Ramp>())
      return mutate(e);
    std::string name = unique_name('r');
    return Let::make(name, e, Variable::make(e.type(), name));
  }
  Expr visit(const Min *op) override { return Min::make(hidden(op->a), hidden(op->b)); }
  Expr visit(const Max *op) override { return Max::make(hidden(op->a), hidden(op->b)); }
};

/// The named producers partitioned first, alone (their own loops as Halide
/// would), then their remaining clamps hidden: the whole statement's pass
/// finds no boundary in them to split the loops around them at. Lets that
/// bound a stage along the tile dimension (`block_sum.s1.qt.min_2`) lose
/// their likely tags.
class HideTileBoundaries : public IRMutator {
public:
  HideTileBoundaries(const attnc::halide_backend::QueryTileStages::Names &names,
                     PartitionLoops partition)
      : names(names), partition(partition) {}

private:
  using IRMutator::visit;
  const attnc::halide_backend::QueryTileStages::Names &names;
  PartitionLoops partition;

  bool boundsTileDim(const std::string &let) const {
    const std::string dim = "." + names.tileDim + ".";
    size_t at = let.find(dim);
    if (at == std::string::npos)
      return false;
    std::string rest = let.substr(at + dim.size());
    return rest.rfind("min", 0) == 0 || rest.rfind("max", 0) == 0;
  }

  Stmt visit(const ProducerConsumer *op) override {
    const auto &tile = names.tileProducers;
    if (!op->is_producer || std::find(tile.begin(), tile.end(), op->name) == tile.end())
      return IRMutator::visit(op);
    Stmt body = HideClampedRamps().mutate(partition(op->body));
    return ProducerConsumer::make(op->name, true, body);
  }
  Stmt visit(const LetStmt *op) override {
    if (!boundsTileDim(op->name))
      return IRMutator::visit(op);
    return LetStmt::make(op->name, WithoutLikely().mutate(op->value), mutate(op->body));
  }
  Expr visit(const Let *op) override {
    if (!boundsTileDim(op->name))
      return IRMutator::visit(op);
    return Let::make(op->name, WithoutLikely().mutate(op->value), mutate(op->body));
  }
};

} // namespace

Stmt partitionLoops(Stmt s) __asm__(PARTITION_LOOPS);

Stmt partitionLoops(Stmt s) {
  static const auto original = reinterpret_cast<PartitionLoops>(dlsym(RTLD_NEXT, PARTITION_LOOPS));
  if (!original)
    throw Halide::InternalError("attnc: libHalide14 has no partition_loops(Stmt)");
  if (!attnc::halide_backend::current.tileDim.empty())
    s = HideTileBoundaries(attnc::halide_backend::current, original).mutate(s);
  return original(s);
}
