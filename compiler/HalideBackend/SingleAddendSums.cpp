//===- SingleAddendSums.cpp - sums of one addend stored directly ----------===//
#include "compiler/HalideBackend/SingleAddendSums.h"

namespace attnc::halide_backend {
namespace {

using namespace Halide;
using namespace Halide::Internal;

class SingleAddendSumsPass : public IRMutator {
public:
  explicit SingleAddendSumsPass(std::string buffer) : buffer(std::move(buffer)) {}

private:
  std::string buffer;
  using IRMutator::visit;

  /// Whether `e` loads this store's own element (the same buffer, index and
  /// predicate).
  bool isOwnElement(const Expr &e, const Store *store) const {
    const Load *load = e.as<Load>();
    return load && load->name == store->name && equal(load->index, store->index) &&
           equal(load->predicate, store->predicate);
  }

  Stmt visit(const Store *op) override {
    const Add *add = op->value.as<Add>();
    if (op->name != buffer || !add)
      return IRMutator::visit(op);
    Expr addend;
    if (add->a.as<VectorReduce>() && isOwnElement(add->b, op))
      addend = add->a;
    else if (add->b.as<VectorReduce>() && isOwnElement(add->a, op))
      addend = add->b;
    if (!addend.defined())
      return IRMutator::visit(op);
    return Store::make(op->name, addend, op->index, op->param, op->predicate, op->alignment);
  }
};

} // namespace

Halide::Internal::IRMutator *newSingleAddendSumsPass(std::string buffer) {
  return new SingleAddendSumsPass(std::move(buffer));
}

} // namespace attnc::halide_backend
