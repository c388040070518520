//===- HeaviestTasksFirst.cpp - causal query tiles, last tile first -------===//
#include "compiler/HalideBackend/HeaviestTasksFirst.h"

namespace attnc::halide_backend {
namespace {

using namespace Halide;
using namespace Halide::Internal;

class HeaviestTasksFirstPass : public IRMutator {
public:
  HeaviestTasksFirstPass(const std::string &func, const std::string &task)
      : prefix(func + ".s0."), suffix("." + task) {}

private:
  const std::string prefix, suffix;
  using IRMutator::visit;

  bool isTaskLoop(const std::string &name) const {
    return name.size() > prefix.size() + suffix.size() && starts_with(name, prefix) &&
           ends_with(name, suffix);
  }

  Stmt visit(const For *op) override {
    if (op->for_type != ForType::Parallel || !isTaskLoop(op->name))
      return IRMutator::visit(op);
    // The t-th task claimed of [min, min + extent) is task min + extent - 1 - (t - min).
    Expr task = simplify(op->min * 2 + op->extent - 1) - Variable::make(Int(32), op->name);
    Stmt body = substitute(op->name, task, op->body);
    return For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
  }
};

} // namespace

IRMutator *newHeaviestTasksFirstPass(const std::string &func, const std::string &task) {
  return new HeaviestTasksFirstPass(func, task);
}

} // namespace attnc::halide_backend
