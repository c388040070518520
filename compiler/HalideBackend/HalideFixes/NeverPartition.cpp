//===- NeverPartition.cpp - Halide 16's never_partition, for Halide 14 -----===//
//
// Halide's loop partitioning copies a loop's whole body once per `likely`
// boundary it finds in it (prologue, steady state, epilogue). Bounds
// inference tags the bounds a reduction domain's predicate implies as
// likely, so decode's loop over key blocks, whose predicate stops at the
// last block of each key chunk and of each sequence's cache, became two
// copies of every key block's code: twice the lowering and LLVM time of a
// loop whose last iteration costs no more than the others. Halide 16 has
// `Func::never_partition` for this; 14 does not.
//
// libHalide14 calls partition_loops through its PLT, so this definition
// takes its place (see HalideFixes.h). The bodies of the loops named by a
// NeverPartition are partitioned first, alone (their inner loops as before),
// which leaves no likely tag in them; the library's pass over the whole
// statement then finds no boundary to split those loops at. (A let renaming
// the loop's variable does not hide it: the partitioner follows lets.)
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"

#include <Halide.h>

#include <dlfcn.h>

#include <algorithm>

namespace attnc::halide_backend {

namespace {
thread_local std::vector<std::string> unpartitioned;
} // namespace

NeverPartition::NeverPartition(std::vector<std::string> loops) : previous(unpartitioned) {
  unpartitioned = std::move(loops);
}

NeverPartition::~NeverPartition() { unpartitioned = previous; }

namespace fixes {
void anchorNeverPartition() {}
} // namespace fixes

} // namespace attnc::halide_backend

// Halide::Internal::partition_loops(Stmt), mangled.
#define PARTITION_LOOPS "_ZN6Halide8Internal15partition_loopsENS0_4StmtE"

namespace {

using namespace Halide;
using namespace Halide::Internal;

using PartitionLoops = Stmt (*)(Stmt);

/// The named loops' bodies partitioned on their own: their inner loops as
/// usual, after which no likely tag is left in them, so the whole
/// statement's partitioning that follows finds nothing to split the named
/// loops themselves on.
class PartitionInsideOnly : public IRMutator {
public:
  explicit PartitionInsideOnly(PartitionLoops partition) : partition(partition) {}

private:
  using IRMutator::visit;
  PartitionLoops partition;
  Stmt visit(const For *op) override {
    const auto &names = attnc::halide_backend::unpartitioned;
    if (std::find(names.begin(), names.end(), op->name) == names.end())
      return IRMutator::visit(op);
    return For::make(op->name, op->min, op->extent, op->for_type, op->device_api,
                     partition(op->body));
  }
};

} // namespace

Stmt partitionLoops(Stmt s) __asm__(PARTITION_LOOPS);

Stmt partitionLoops(Stmt s) {
  static const auto original = reinterpret_cast<PartitionLoops>(dlsym(RTLD_NEXT, PARTITION_LOOPS));
  if (!original)
    throw Halide::InternalError("attnc: libHalide14 has no partition_loops(Stmt)");
  if (!attnc::halide_backend::unpartitioned.empty())
    s = PartitionInsideOnly(original).mutate(s);
  return original(s);
}
