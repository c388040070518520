//===- Prefetches.cpp - decode's K and V rows prefetched ahead ------------===//
#include "compiler/HalideBackend/Prefetches.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <map>

namespace attnc::halide_backend {

namespace {

using namespace Halide;
using namespace Halide::Internal;

/// The values of the names a statement binds (Let and LetStmt), and each
/// loop variable in it as its loop's first value. `ambiguous` when one name
/// is bound to two values (then nothing is substituted).
class LetValues : public IRVisitor {
public:
  std::map<std::string, Expr> values;
  bool ambiguous = false;

private:
  using IRVisitor::visit;
  void visit(const For *op) override {
    record(op->name, op->min);
    IRVisitor::visit(op);
  }
  void record(const std::string &name, const Expr &value) {
    auto [it, fresh] = values.emplace(name, value);
    ambiguous = ambiguous || (!fresh && !equal(it->second, value));
  }
  void visit(const Let *op) override {
    record(op->name, op->value);
    IRVisitor::visit(op);
  }
  void visit(const LetStmt *op) override {
    record(op->name, op->value);
    IRVisitor::visit(op);
  }
};

/// The loads of some buffers in a statement.
class LoadsOf : public IRVisitor {
public:
  explicit LoadsOf(const std::vector<std::string> &buffers) : buffers(buffers) {}
  std::vector<const Load *> loads;

private:
  using IRVisitor::visit;
  const std::vector<std::string> &buffers;
  void visit(const Load *op) override {
    if (std::find(buffers.begin(), buffers.end(), op->name) != buffers.end())
      loads.push_back(op);
    IRVisitor::visit(op);
  }
};

/// Whether `e` reads a min or stride of buffer `name` (extents are left out:
/// twins have the same shape).
bool usesFieldOf(const Expr &e, const std::string &name) {
  class Finder : public IRVisitor {
  public:
    explicit Finder(const std::string &prefix) : prefix(prefix) {}
    bool found = false;

  private:
    using IRVisitor::visit;
    std::string prefix;
    void visit(const Variable *op) override {
      found = found || (op->name.rfind(prefix, 0) == 0 &&
                        op->name.compare(prefix.size(), 7, "extent.") != 0);
    }
  } finder(name + ".");
  e.accept(&finder);
  return finder.found;
}

class InsertRowPrefetches : public IRMutator {
public:
  explicit InsertRowPrefetches(std::vector<RowPrefetch> prefetches)
      : prefetches(std::move(prefetches)) {}

private:
  using IRMutator::visit;
  std::vector<RowPrefetch> prefetches;
  const RowPrefetch *active = nullptr; // of the key loop being rewritten
  std::string keyVar;
  std::map<std::string, Expr> lets; // bound inside it (loops: their first value)

  const RowPrefetch *keyLoop(const std::string &loop) const {
    for (const RowPrefetch &p : prefetches) {
      std::string prefix = p.func + ".s" + std::to_string(p.stage) + "." + p.var;
      if (loop == prefix || loop.rfind(prefix + ".", 0) == 0)
        return &p;
    }
    return nullptr;
  }

  /// `e` with the names bound inside the key loop replaced by their values
  /// (its inner loops' variables by their first values); false if some are
  /// left after a bounded number of rounds.
  bool expandLets(Expr &e) const {
    for (int round = 0; round < 64; ++round) {
      Expr next = substitute(lets, e);
      if (equal(next, e))
        return true;
      e = next;
    }
    return false;
  }

  /// The key loop's `body` preceded by the prefetches of the rows its loads
  /// read: each row from the element its inner loops start at, `lines` cache
  /// lines, `ahead` keys later (and each twin's row of the current key).
  Stmt withPrefetches(const Stmt &body) {
    LoadsOf finder(active->buffers);
    body.accept(&finder);
    std::vector<std::pair<std::string, Expr>> rows; // (buffer, first element)
    Stmt prefetches;
    auto add = [&](const std::string &buffer, Type type, const Expr &start) {
      const int lineElements = std::max(1, 64 / type.bytes());
      for (const auto &[other, first] : rows) { // a row already prefetched?
        if (other != buffer)
          continue;
        Expr difference = simplify(start - first); // (as_const_int points into it)
        const int64_t *offset = as_const_int(difference);
        if (offset && *offset >= 0 && *offset < int64_t(active->lines) * lineElements)
          return;
      }
      rows.emplace_back(buffer, start);
      for (int line = 0; line < active->lines; ++line) {
        // (address, offset, extent, stride): one element, typed as the load.
        Expr at = simplify(start + line * lineElements);
        Stmt prefetch = Evaluate::make(Call::make(
            type, Call::prefetch, {Variable::make(Handle(), buffer), at, 1, 1}, Call::Intrinsic));
        prefetches = prefetches.defined() ? Block::make(prefetches, prefetch) : prefetch;
      }
    };
    for (const Load *load : finder.loads) {
      const Ramp *ramp = load->index.as<Ramp>();
      Expr index = ramp ? ramp->base : load->index;
      if (!index.type().is_scalar())
        continue; // (a gather)
      if (!expandLets(index) || !expr_uses_var(index, keyVar))
        continue;
      Type type = load->type.element_of();
      if (active->rowsAhead)
        add(load->name, type,
            simplify(substitute(keyVar, Variable::make(Int(32), keyVar) + active->ahead, index)));
      for (const std::string &twin : active->twins) {
        Expr same = substitute(load->name + ".min.0", Variable::make(Int(32), twin + ".min.0"), index);
        if (!usesFieldOf(same, load->name)) // (its other mins and strides may differ)
          add(twin, type, simplify(same));
      }
    }
    return prefetches.defined() ? Block::make(prefetches, body) : body;
  }

  Stmt visit(const For *op) override {
    const RowPrefetch *spec = keyLoop(op->name);
    if (!spec)
      return IRMutator::visit(op);
    LetValues bound;
    op->body.accept(&bound);
    if (bound.ambiguous)
      return op;
    active = spec;
    keyVar = op->name;
    lets = std::move(bound.values);
    Stmt body = withPrefetches(op->body);
    return For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
  }
};

} // namespace

void addRowPrefetches(Halide::Pipeline &pipeline, const std::vector<RowPrefetch> &prefetches) {
  if (prefetches.empty())
    return;
  auto *pass = new InsertRowPrefetches(prefetches);
  pipeline.add_custom_lowering_pass(pass, [pass] { delete pass; });
}

void keepPrefetchesInL2(llvm::Module &module) {
  for (llvm::Function &fn : module)
    for (llvm::Instruction &inst : llvm::instructions(fn))
      if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst))
        if (call->getIntrinsicID() == llvm::Intrinsic::prefetch) // (address, rw, locality, cache)
          call->setArgOperand(2, llvm::ConstantInt::get(call->getArgOperand(2)->getType(), 2));
}

} // namespace attnc::halide_backend
