//===- UnreadStores.cpp - stores no load reads, dropped --------------------===//
#include "compiler/HalideBackend/UnreadStores.h"

#include <map>
#include <numeric>
#include <optional>
#include <vector>

namespace attnc::halide_backend {
namespace {

using namespace Halide;
using namespace Halide::Internal;

/// The flat indices of an access's lanes: lane k's index is congruent to
/// remainder + offsets[k] modulo `modulus` (modulus 0: equal to it).
struct Residues {
  int64_t modulus = 1, remainder = 0;
  std::vector<int64_t> offsets{0};
};

int64_t reduce(int64_t value, int64_t modulus) {
  if (modulus == 0)
    return value;
  int64_t r = value % modulus;
  return r < 0 ? r + modulus : r;
}

/// A scalar index, a broadcast one, or a ramp of a constant stride; nullopt
/// for any other vector index (a gather).
std::optional<Residues> residuesOf(const Expr &index, const Scope<ModulusRemainder> &lets) {
  Residues r;
  Expr base = index;
  if (const Ramp *ramp = index.as<Ramp>()) {
    const int64_t *stride = as_const_int(ramp->stride);
    if (!stride || ramp->base.type().lanes() != 1)
      return std::nullopt;
    base = ramp->base;
    r.offsets.clear();
    for (int k = 0; k < ramp->lanes; ++k)
      r.offsets.push_back(k * *stride);
  } else if (const Broadcast *broadcast = index.as<Broadcast>()) {
    if (broadcast->value.type().lanes() != 1)
      return std::nullopt;
    base = broadcast->value;
  } else if (index.type().lanes() != 1) {
    return std::nullopt;
  }
  ModulusRemainder mr = modulus_remainder(base, lets);
  r.modulus = mr.modulus;
  r.remainder = mr.remainder;
  return r;
}

/// Pushes a let's value as a ModulusRemainder (nothing known for other types).
void pushLet(Scope<ModulusRemainder> &lets, const std::string &name, const Expr &value) {
  lets.push(name, value.type().is_int() && value.type().is_scalar()
                      ? modulus_remainder(value, lets)
                      : ModulusRemainder());
}

/// The elements the loads of each buffer may read. Every occurrence is
/// visited (not once per shared node): an unrolled copy binds the same let
/// names to other values.
class LoadResidues : public IRVisitor {
public:
  explicit LoadResidues(const std::set<std::string> &buffers) : buffers(buffers) {}
  std::map<std::string, std::vector<Residues>> loads;
  std::set<std::string> unknown; // a load not analysable, or a handle in use

private:
  const std::set<std::string> &buffers;
  Scope<ModulusRemainder> lets;
  using IRVisitor::visit;

  template <typename LetT> void visitLet(const LetT *op) {
    op->value.accept(this);
    pushLet(lets, op->name, op->value);
    op->body.accept(this);
    lets.pop(op->name);
  }
  void visit(const Let *op) override { visitLet(op); }
  void visit(const LetStmt *op) override { visitLet(op); }
  void visit(const For *op) override {
    op->min.accept(this);
    op->extent.accept(this);
    lets.push(op->name, ModulusRemainder()); // a loop variable: nothing known
    op->body.accept(this);
    lets.pop(op->name);
  }

  void visit(const Load *op) override {
    IRVisitor::visit(op);
    if (!buffers.count(op->name))
      return;
    std::optional<Residues> r = residuesOf(op->index, lets);
    if (!r || r->modulus == 1)
      unknown.insert(op->name);
    else
      loads[op->name].push_back(*r);
  }
  void visit(const Variable *op) override {
    // The buffer's host pointer or halide_buffer_t (`name`, `name.buffer`):
    // something other than a load may read it.
    const std::string &n = op->name;
    const std::string stem = n.size() > 7 && n.compare(n.size() - 7, 7, ".buffer") == 0
                                 ? n.substr(0, n.size() - 7)
                                 : n;
    if (op->type.is_handle() && buffers.count(stem))
      unknown.insert(stem);
  }
};

class UnreadStoresPass : public IRMutator {
public:
  explicit UnreadStoresPass(std::set<std::string> buffers) : buffers(std::move(buffers)) {}

  /// The whole statement is analysed first (each time the pass is run on
  /// one), then its stores are visited.
  Stmt mutate(const Stmt &s) override {
    if (inside)
      return IRMutator::mutate(s);
    LoadResidues loads(buffers);
    s.accept(&loads);
    reads.clear();
    for (auto &[name, list] : loads.loads)
      if (!loads.unknown.count(name))
        reads[name] = std::move(list);
    if (reads.empty())
      return s;
    inside = true;
    Stmt result = IRMutator::mutate(s);
    inside = false;
    return result;
  }
  // Stores are statements: expressions stay as they are.
  Expr mutate(const Expr &e) override { return e; }

private:
  std::set<std::string> buffers;
  bool inside = false; // below the statement the pass was run on
  /// The analysable loads of each buffer (a buffer no load reads is not
  /// here: its stores stay, as Halide left them).
  std::map<std::string, std::vector<Residues>> reads;
  Scope<ModulusRemainder> lets;
  using IRMutator::visit;

  /// Whether some load in `loads` may read an element stored at `r`.
  static bool mayBeRead(const std::vector<Residues> &loads, const Residues &r) {
    for (const Residues &load : loads) {
      int64_t g = std::gcd(load.modulus, r.modulus); // gcd(0, x) = x
      if (g == 1)
        return true;
      for (int64_t storeOffset : r.offsets)
        for (int64_t loadOffset : load.offsets)
          if (reduce(r.remainder + storeOffset, g) == reduce(load.remainder + loadOffset, g))
            return true;
    }
    return false;
  }

  Stmt visit(const LetStmt *op) override {
    pushLet(lets, op->name, op->value);
    Stmt body = mutate(op->body);
    lets.pop(op->name);
    if (body.same_as(op->body))
      return op;
    // A value only the dropped stores used (m, l or u of a vector that no
    // longer stores them) goes with them.
    return stmt_uses_var(body, op->name) ? LetStmt::make(op->name, op->value, body) : body;
  }

  Stmt visit(const For *op) override {
    lets.push(op->name, ModulusRemainder()); // shadows any let of that name
    Stmt body = mutate(op->body);
    lets.pop(op->name);
    return body.same_as(op->body) ? Stmt(op)
                                  : For::make(op->name, op->min, op->extent, op->for_type,
                                              op->device_api, body);
  }

  Stmt visit(const Store *op) override {
    auto it = reads.find(op->name);
    if (it == reads.end())
      return op;
    std::optional<Residues> r = residuesOf(op->index, lets);
    if (!r || mayBeRead(it->second, *r))
      return op;
    return Evaluate::make(0);
  }
};

} // namespace

Halide::Internal::IRMutator *newUnreadStoresPass(std::set<std::string> buffers) {
  return new UnreadStoresPass(std::move(buffers));
}

} // namespace attnc::halide_backend
