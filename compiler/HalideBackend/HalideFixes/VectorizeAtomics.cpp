//===- VectorizeAtomics.cpp - Atomic sums vectorized through let-bound indices ===//
//
// Halide 14 vectorizes an atomic `f[x] = f[x] + y` only when it can prove
// the store's and the load's index equal; otherwise it runs the reduction
// one lane at a time. With a run-time seq_q under a causal mask, block_pv's
// index holds the tile's first visible key block as a let, once in the store
// and once in the load under different (uniquified) names, so the proof
// failed: bf16 P.V fell back to float products, after a second whole
// lowering (EmitKernel.cpp's scalarBf16Fallback; 2x the lowering time of
// every dynamic causal bf16 kernel).
//
// libHalide14 calls vectorize_loops through its PLT, so this definition
// takes its place (see HalideFixes.h): it substitutes the lets of such an
// atomic store's index and of its own loads' indices, which makes the two
// equal, then calls the library's own. Code generation's CSE shares the
// repeated terms again.
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"
#include "compiler/HalideBackend/HalideFixes/LibHalideOriginal.h"

#include <Halide.h>

namespace attnc::halide_backend::fixes {
void anchorVectorizeAtomics() {}
} // namespace attnc::halide_backend::fixes

// Halide::Internal::vectorize_loops(const Stmt &, const std::map<std::string,
// Function> &), mangled.
#define VECTORIZE_LOOPS                                                                            \
  "_ZN6Halide8Internal15vectorize_loopsERKNS0_4StmtERKSt3mapINSt7__cxx1112basic_stringIcSt11char_" \
  "traitsIcESaIcEEENS0_8FunctionESt4lessISA_ESaISt4pairIKSA_SB_EEE"

namespace {

using namespace Halide;
using namespace Halide::Internal;

using Environment = std::map<std::string, Function>;
using VectorizeLoops = Stmt (*)(const Stmt &, const Environment &);

bool hasLet(const Expr &e) {
  struct FindLet : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const Let *) override { found = true; }
  } finder;
  e.accept(&finder);
  return finder.found;
}

Expr withoutLets(const Expr &index) { return hasLet(index) ? substitute_in_all_lets(index) : index; }

/// In the value of an atomic store: the loads of the stored buffer, their
/// index without lets.
class LoadsOfBufferWithoutLets : public IRMutator {
public:
  explicit LoadsOfBufferWithoutLets(const std::string &buffer) : buffer(buffer) {}

private:
  using IRMutator::visit;
  const std::string &buffer;
  Expr visit(const Load *op) override {
    if (op->name != buffer)
      return IRMutator::visit(op);
    return Load::make(op->type, op->name, withoutLets(mutate(op->index)), op->image, op->param,
                      mutate(op->predicate), op->alignment);
  }
};

/// Atomic stores without a mutex (the ones Halide may vectorize), with the
/// lets of their own indices substituted.
class AtomicIndicesWithoutLets : public IRMutator {
  using IRMutator::visit;
  Stmt visit(const Atomic *op) override {
    const Store *store = op->body.as<Store>();
    if (!op->mutex_name.empty() || !store || !hasLet(store->index))
      return IRMutator::visit(op);
    Expr value = LoadsOfBufferWithoutLets(store->name).mutate(store->value);
    Stmt body = Store::make(store->name, value, withoutLets(store->index), store->param,
                            store->predicate, store->alignment);
    return Atomic::make(op->producer_name, op->mutex_name, body);
  }
};

} // namespace

Stmt vectorizeLoops(const Stmt &s, const Environment &env) __asm__(VECTORIZE_LOOPS);

Stmt vectorizeLoops(const Stmt &s, const Environment &env) {
  static const auto original = attnc::halide_backend::fixes::libHalideOriginal<VectorizeLoops>(
      VECTORIZE_LOOPS, "vectorize_loops(Stmt, env)");
  return original(AtomicIndicesWithoutLets().mutate(s), env);
}
