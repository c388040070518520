//===- AlignedStackScalars.cpp - one-element stack buffers read as vectors ===//
#include "compiler/HalideBackend/AlignedStackScalars.h"

namespace attnc::halide_backend {
namespace {

using namespace Halide;
using namespace Halide::Internal;

/// Whether a statement loads or stores `buffer` as a vector.
class VectorAccess : public IRVisitor {
public:
  explicit VectorAccess(const std::string &buffer) : buffer(buffer) {}
  bool found = false;

private:
  const std::string &buffer;
  using IRVisitor::visit;
  void visit(const Load *op) override {
    found |= op->name == buffer && op->type.is_vector();
    IRVisitor::visit(op);
  }
  void visit(const Store *op) override {
    found |= op->name == buffer && op->value.type().is_vector();
    IRVisitor::visit(op);
  }
};

class AlignedStackScalarsPass : public IRMutator {
  using IRMutator::visit;

  Stmt visit(const Allocate *op) override {
    Stmt body = mutate(op->body);
    const bool onStack = op->memory_type == MemoryType::Stack ||
                         op->memory_type == MemoryType::Auto;
    bool widen = false;
    if (onStack && !op->new_expr.defined() && op->constant_allocation_size() == 1) {
      VectorAccess access(op->name);
      body.accept(&access);
      widen = access.found;
    }
    if (!widen && body.same_as(op->body))
      return op;
    return Allocate::make(op->name, op->type, op->memory_type,
                          widen ? std::vector<Expr>{2} : op->extents, op->condition, body,
                          op->new_expr, op->free_function);
  }
};

} // namespace

IRMutator *newAlignedStackScalarsPass() { return new AlignedStackScalarsPass(); }

} // namespace attnc::halide_backend
