//===- RegionToHalide.cpp - attn expression regions to Halide Exprs -------===//
//
// One case per op MLIRGen emits into expression regions (arith, math,
// select, attn.size, attn.read). Integer semantics follow the IR: remsi
// truncates, so it is rebuilt from Halide's Euclidean `%`, and MLIRGen's
// Euclidean expansion of the language's `%` becomes one Halide `%`; int is
// 32-bit as in the language. Values are translated on demand and memoized, so shared
// subexpressions become one Halide Expr.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/AttnToHalide/RegionToHalide.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/StandardOps/IR/Ops.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using HExpr = Halide::Expr;

namespace attnc {
namespace {

bool isTranslatable(Operation &op) {
  return isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::RemSIOp,
             arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp, arith::NegFOp,
             arith::MinSIOp, arith::MaxSIOp, arith::MinFOp, arith::MaxFOp, arith::CmpIOp,
             arith::CmpFOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::IndexCastOp,
             arith::SIToFPOp, math::ExpOp, math::LogOp, math::SqrtOp, math::RsqrtOp,
             math::TanhOp, math::AbsOp, SelectOp, attn::SizeOp, attn::ReadOp, attn::YieldOp>(op);
}

/// True when `v` is |y|: the constant |c| for a constant y = c, or MLIRGen's
/// select(y < 0, 0 - y, y).
bool isAbsOf(Value v, Value y) {
  APInt a, c;
  if (matchPattern(v, m_ConstantInt(&a)) && matchPattern(y, m_ConstantInt(&c)))
    return a == c.abs();
  auto sel = v.getDefiningOp<SelectOp>();
  if (!sel || sel.getFalseValue() != y)
    return false;
  auto cmp = sel.getCondition().getDefiningOp<arith::CmpIOp>();
  auto neg = sel.getTrueValue().getDefiningOp<arith::SubIOp>();
  return cmp && neg && cmp.getPredicate() == arith::CmpIPredicate::slt && cmp.getLhs() == y &&
         matchPattern(cmp.getRhs(), m_Zero()) && neg.getRhs() == y &&
         matchPattern(neg.getLhs(), m_Zero());
}

/// MLIRGen's Euclidean `x % y`: select(r < 0, r + |y|, r) with r = remsi(x, y).
arith::RemSIOp euclideanRemainder(SelectOp sel) {
  auto rem = sel.getFalseValue().getDefiningOp<arith::RemSIOp>();
  auto cmp = sel.getCondition().getDefiningOp<arith::CmpIOp>();
  auto add = sel.getTrueValue().getDefiningOp<arith::AddIOp>();
  if (!rem || !cmp || !add || cmp.getPredicate() != arith::CmpIPredicate::slt ||
      cmp.getLhs() != rem.getResult() || !matchPattern(cmp.getRhs(), m_Zero()) ||
      add.getLhs() != rem.getResult() || !isAbsOf(add.getRhs(), rem.getRhs()))
    return {};
  return rem;
}

class Translator {
public:
  Translator(Block &block, const std::map<void *, std::string> &inputNames,
             const halide_backend::ExprEnv &env)
      : block(block), inputNames(inputNames), env(env) {}

  HExpr get(Value v) {
    auto it = memo.find(v.getAsOpaquePointer());
    if (it != memo.end())
      return it->second;
    HExpr e = compute(v);
    memo[v.getAsOpaquePointer()] = e;
    return e;
  }

private:
  Block &block;
  const std::map<void *, std::string> &inputNames;
  const halide_backend::ExprEnv &env;
  std::map<const void *, HExpr> memo;

  HExpr arg(unsigned n) {
    switch (n) {
    case attn::ArgB: return env.b;
    case attn::ArgH: return env.h;
    case attn::ArgI: return env.i;
    case attn::ArgJ: return env.j;
    case attn::ArgG: return env.g;
    case attn::ArgIp: return env.ip;
    default: return env.dot;
    }
  }

  HExpr size(StringRef name) {
    if (name == "B") return env.B;
    if (name == "H") return env.H;
    if (name == "G") return env.G;
    if (name == "Lq") return env.Lq;
    if (name == "Lk") return env.Lk;
    if (name == "D") return env.D;
    return env.Dv;
  }

  HExpr compute(Value v) {
    if (auto blockArg = v.dyn_cast<BlockArgument>())
      return arg(blockArg.getArgNumber());
    Operation *op = v.getDefiningOp();
    auto x = [&](unsigned n) { return get(op->getOperand(n)); };
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      Attribute value = c.getValue();
      if (auto f = value.dyn_cast<FloatAttr>())
        return HExpr((float)f.getValueAsDouble());
      auto i = value.cast<IntegerAttr>();
      if (i.getType().isInteger(1))
        return i.getValue().getBoolValue() ? Halide::Internal::const_true()
                                           : Halide::Internal::const_false();
      return HExpr((int32_t)i.getValue().getSExtValue());
    }
    if (isa<arith::AddIOp, arith::AddFOp>(op)) return x(0) + x(1);
    if (isa<arith::SubIOp, arith::SubFOp>(op)) return x(0) - x(1);
    if (isa<arith::MulIOp, arith::MulFOp>(op)) return x(0) * x(1);
    if (isa<arith::DivFOp>(op)) return x(0) / x(1);
    if (isa<arith::NegFOp>(op)) return -x(0);
    if (isa<arith::RemSIOp>(op)) {
      // Truncated remainder from Halide's Euclidean one.
      HExpr a = x(0), b = x(1), r = a % b;
      return Halide::select(r != 0 && a < 0, r - Halide::abs(b), r);
    }
    if (isa<arith::MinSIOp, arith::MinFOp>(op)) return Halide::min(x(0), x(1));
    if (isa<arith::MaxSIOp, arith::MaxFOp>(op)) return Halide::max(x(0), x(1));
    if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      using P = arith::CmpIPredicate;
      HExpr a = x(0), b = x(1);
      switch (cmp.getPredicate()) {
      case P::eq: return a == b;
      case P::ne: return a != b;
      case P::slt: case P::ult: return a < b;
      case P::sle: case P::ule: return a <= b;
      case P::sgt: case P::ugt: return a > b;
      default: return a >= b;
      }
    }
    if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
      using P = arith::CmpFPredicate;
      HExpr a = x(0), b = x(1);
      switch (cmp.getPredicate()) {
      case P::OEQ: case P::UEQ: return a == b;
      case P::OLT: case P::ULT: return a < b;
      case P::OLE: case P::ULE: return a <= b;
      case P::OGT: case P::UGT: return a > b;
      case P::OGE: case P::UGE: return a >= b;
      default: return a != b;
      }
    }
    if (isa<arith::AndIOp>(op)) return x(0) && x(1);
    if (isa<arith::OrIOp>(op)) return x(0) || x(1);
    if (isa<arith::XOrIOp>(op)) return x(0) != x(1); // on i1 only
    if (isa<arith::IndexCastOp>(op)) return x(0);     // int is 32-bit
    if (isa<arith::SIToFPOp>(op)) return Halide::cast<float>(x(0));
    if (isa<math::ExpOp>(op)) return Halide::exp(x(0));
    if (isa<math::LogOp>(op)) return Halide::log(x(0));
    if (isa<math::SqrtOp>(op)) return Halide::sqrt(x(0));
    if (isa<math::RsqrtOp>(op)) return 1.0f / Halide::sqrt(x(0));
    if (isa<math::TanhOp>(op)) return Halide::tanh(x(0));
    if (isa<math::AbsOp>(op)) return Halide::abs(x(0));
    if (auto sel = dyn_cast<SelectOp>(op)) {
      // Halide's `%` is Euclidean already: one op instead of the expansion.
      if (auto rem = euclideanRemainder(sel))
        return get(rem.getLhs()) % get(rem.getRhs());
      return Halide::select(x(0), x(1), x(2));
    }
    if (auto s = dyn_cast<attn::SizeOp>(op)) return size(s.getName());
    if (auto read = dyn_cast<attn::ReadOp>(op)) {
      const std::string &name = inputNames.at(read.getInput().getAsOpaquePointer());
      std::vector<HExpr> indices;
      for (Value index : read.getIndices())
        indices.push_back(get(index));
      HExpr e = env.inputs.at(name)(indices);
      return read.getType().isF32() ? Halide::cast<float>(e) : Halide::cast<int32_t>(e);
    }
    return HExpr(); // unreachable: checked by translateExprRegion
  }
};

} // namespace

FailureOr<halide_backend::ExprBuilder>
translateExprRegion(Region &region, const std::map<void *, std::string> &inputNames) {
  Block &block = region.front();
  for (Operation &op : block) {
    if (!isTranslatable(op))
      return (op.emitOpError("has no Halide translation in an expression region"), failure());
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      // Constants hoisted above the region are translated where defined.
      if (def && !region.isAncestor(def->getParentRegion()) && !isa<arith::ConstantOp>(def) &&
          !isa<attn::ReadOp>(op))
        return (op.emitOpError("uses a value from outside its region that is not a constant"),
                failure());
    }
    if (auto read = dyn_cast<attn::ReadOp>(op))
      if (!inputNames.count(read.getInput().getAsOpaquePointer()))
        return (read.emitOpError("reads a tensor that is not a declared input of the kernel"),
                failure());
  }
  Block *body = &block;
  return halide_backend::ExprBuilder([body, inputNames](const halide_backend::ExprEnv &env) {
    Translator translator(*body, inputNames, env);
    return translator.get(cast<attn::YieldOp>(body->getTerminator()).getValue());
  });
}

} // namespace attnc
