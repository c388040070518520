//===- RegionToHalide.cpp - attn expression regions to Halide Exprs -------===//
//
// One case per op MLIRGen emits into expression regions (arith, math,
// select, attn.size, attn.read), each to one ExprGraph node. remsi becomes a
// truncated remainder node, and MLIRGen's Euclidean expansion of the
// language's `%` one Euclidean `%` node; int is 32-bit as in the language.
// Values are translated on demand and memoized, so shared subexpressions
// become one node.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/AttnToHalide/RegionToHalide.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/StandardOps/IR/Ops.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace attnc {
namespace {

bool isTranslatable(Operation &op) {
  return isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::RemSIOp,
             arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp, arith::NegFOp,
             arith::MinSIOp, arith::MaxSIOp, arith::MinFOp, arith::MaxFOp, arith::CmpIOp,
             arith::CmpFOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::IndexCastOp,
             arith::SIToFPOp, arith::FPToSIOp, math::ExpOp, math::LogOp, math::SqrtOp,
             math::RsqrtOp, math::TanhOp, math::AbsOp, math::FloorOp, math::CeilOp,
             math::Log2Op, SelectOp, attn::SizeOp, attn::ReadOp, attn::YieldOp>(op);
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

/// Builds the graph on demand from the yielded value; each Value becomes
/// one node, so shared subexpressions stay shared.
class Translator {
public:
  Translator(const std::map<void *, std::string> &inputNames) : inputNames(inputNames) {}

  int get(Value v) {
    auto it = memo.find(v.getAsOpaquePointer());
    if (it != memo.end())
      return it->second;
    int n = compute(v);
    memo[v.getAsOpaquePointer()] = n;
    return n;
  }

  halide_backend::ExprGraph graph;

private:
  using Node = halide_backend::ExprNode;
  const std::map<void *, std::string> &inputNames;
  std::map<const void *, int> memo;

  int add(Node node) {
    graph.nodes.push_back(std::move(node));
    return (int)graph.nodes.size() - 1;
  }
  int add(Node::Op op, std::vector<int> operands) {
    Node node;
    node.op = op;
    node.operands = std::move(operands);
    return add(std::move(node));
  }
  int named(Node::Op op, std::string name) {
    Node node;
    node.op = op;
    node.name = std::move(name);
    return add(std::move(node));
  }

  static const char *argName(unsigned n) {
    switch (n) {
    case attn::ArgB: return "b";
    case attn::ArgH: return "h";
    case attn::ArgI: return "i";
    case attn::ArgJ: return "j";
    case attn::ArgG: return "g";
    case attn::ArgIp: return "ip";
    default: return "dot";
    }
  }

  int compute(Value v) {
    if (auto blockArg = v.dyn_cast<BlockArgument>())
      return named(Node::Var, argName(blockArg.getArgNumber()));
    Operation *op = v.getDefiningOp();
    auto x = [&](unsigned n) { return get(op->getOperand(n)); };
    auto binary = [&](Node::Op kind) { return add(kind, {x(0), x(1)}); };
    auto unary = [&](Node::Op kind) { return add(kind, {x(0)}); };
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      Node node;
      Attribute value = c.getValue();
      if (auto f = value.dyn_cast<FloatAttr>()) {
        node.op = Node::FloatConst;
        node.floatValue = (float)f.getValueAsDouble();
        return add(std::move(node));
      }
      auto i = value.cast<IntegerAttr>();
      if (i.getType().isInteger(1)) {
        node.op = Node::BoolConst;
        node.boolValue = i.getValue().getBoolValue();
      } else {
        node.op = Node::IntConst;
        node.intValue = (int32_t)i.getValue().getSExtValue();
      }
      return add(std::move(node));
    }
    if (isa<arith::AddIOp, arith::AddFOp>(op)) return binary(Node::Add);
    if (isa<arith::SubIOp, arith::SubFOp>(op)) return binary(Node::Sub);
    if (isa<arith::MulIOp, arith::MulFOp>(op)) return binary(Node::Mul);
    if (isa<arith::DivFOp>(op)) return binary(Node::Div);
    if (isa<arith::NegFOp>(op)) return unary(Node::Neg);
    if (isa<arith::RemSIOp>(op)) return binary(Node::Rem);
    if (isa<arith::MinSIOp, arith::MinFOp>(op)) return binary(Node::Min);
    if (isa<arith::MaxSIOp, arith::MaxFOp>(op)) return binary(Node::Max);
    if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      using P = arith::CmpIPredicate;
      switch (cmp.getPredicate()) {
      case P::eq: return binary(Node::Eq);
      case P::ne: return binary(Node::Ne);
      case P::slt: case P::ult: return binary(Node::Lt);
      case P::sle: case P::ule: return binary(Node::Le);
      case P::sgt: case P::ugt: return binary(Node::Gt);
      default: return binary(Node::Ge);
      }
    }
    if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
      using P = arith::CmpFPredicate;
      switch (cmp.getPredicate()) {
      case P::OEQ: case P::UEQ: return binary(Node::Eq);
      case P::OLT: case P::ULT: return binary(Node::Lt);
      case P::OLE: case P::ULE: return binary(Node::Le);
      case P::OGT: case P::UGT: return binary(Node::Gt);
      case P::OGE: case P::UGE: return binary(Node::Ge);
      default: return binary(Node::Ne);
      }
    }
    if (isa<arith::AndIOp>(op)) return binary(Node::And);
    if (isa<arith::OrIOp>(op)) return binary(Node::Or);
    if (isa<arith::XOrIOp>(op)) return binary(Node::Xor); // on i1 only
    if (isa<arith::IndexCastOp>(op)) return x(0);            // int is 32-bit
    if (isa<arith::SIToFPOp>(op)) return unary(Node::ToFloat);
    if (isa<arith::FPToSIOp>(op)) return unary(Node::ToInt);
    if (isa<math::FloorOp>(op)) return unary(Node::Floor);
    if (isa<math::CeilOp>(op)) return unary(Node::Ceil);
    if (isa<math::Log2Op>(op)) return unary(Node::Log2);
    if (isa<math::ExpOp>(op)) return unary(Node::Exp);
    if (isa<math::LogOp>(op)) return unary(Node::Log);
    if (isa<math::SqrtOp>(op)) return unary(Node::Sqrt);
    if (isa<math::RsqrtOp>(op)) return unary(Node::Rsqrt);
    if (isa<math::TanhOp>(op)) return unary(Node::Tanh);
    if (isa<math::AbsOp>(op)) return unary(Node::Abs);
    if (auto sel = dyn_cast<SelectOp>(op)) {
      // Halide's `%` is Euclidean already: one node instead of the expansion.
      if (auto rem = euclideanRemainder(sel))
        return add(Node::Mod, {get(rem.getLhs()), get(rem.getRhs())});
      return add(Node::Select, {x(0), x(1), x(2)});
    }
    if (auto s = dyn_cast<attn::SizeOp>(op))
      return named(Node::Size, s.getName().str());
    if (auto read = dyn_cast<attn::ReadOp>(op)) {
      Node node;
      node.op = Node::Read;
      node.name = inputNames.at(read.getInput().getAsOpaquePointer());
      node.readsFloat = read.getType().isF32();
      for (Value index : read.getIndices())
        node.operands.push_back(get(index));
      return add(std::move(node));
    }
    return -1; // unreachable: checked by translateExprRegion
  }
};

} // namespace

FailureOr<halide_backend::ExprGraph>
translateExprRegion(Region &region, const std::map<void *, std::string> &inputNames) {
  if (region.empty())
    return (region.getParentOp()->emitOpError("has an empty expression region"), failure());
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
  auto yield = cast<attn::YieldOp>(block.getTerminator());
  Translator translator(inputNames);
  translator.graph.root = translator.get(yield.getValue());
  if (auto source = yield->getAttrOfType<StringAttr>("source"))
    translator.graph.source = source.getValue().str();
  return std::move(translator.graph);
}

} // namespace attnc
