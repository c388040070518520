//===- ExprGen.cpp - Expressions to attn expression regions ---------------===//
//
// The language's types map to index (int), f32 (float) and i1 (bool).
// Promotion int -> float is index_cast + sitofp; `/` is true division in
// f32; `%` is Euclidean (Halide's and the language's), built from remsi.
// Every op carries the location of its source node.
//
//===----------------------------------------------------------------------===//
#include "compiler/MLIRGen/ExprGen.h"

#include "compiler/Frontend/Signature.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/StandardOps/IR/Ops.h"

#include <algorithm>

using namespace mlir;

namespace attnc {
namespace {

const char *const kIndexVars[] = {"b", "h", "i", "j", "g", "ip"};

class ExprEmitter {
public:
  ExprEmitter(OpBuilder &builder, Block &block, const ExprRegionContext &context)
      : b(builder), block(block), ctx(context) {}

  Value emit(const Expr &e) {
    Location l = ctx.loc(e.loc);
    switch (e.kind) {
    case ExprKind::IntLit:
      return b.create<arith::ConstantIndexOp>(l, e.intValue);
    case ExprKind::FloatLit:
      return b.create<arith::ConstantFloatOp>(l, APFloat((float)e.floatValue), b.getF32Type());
    case ExprKind::BoolLit:
      return b.create<arith::ConstantIntOp>(l, e.boolValue, 1);
    case ExprKind::Name:
      return emitName(e, l);
    case ExprKind::Index: {
      SmallVector<Value> indices;
      for (const ExprPtr &index : e.operands)
        indices.push_back(emit(*index));
      return read(e.name, indices, l);
    }
    case ExprKind::Call:
      return emitCall(e, l);
    case ExprKind::Unary: {
      Value x = emit(*e.operands[0]);
      if (e.unaryOp == UnaryOp::Not)
        return b.create<arith::XOrIOp>(l, x, b.create<arith::ConstantIntOp>(l, 1, 1));
      if (x.getType().isF32())
        return b.create<arith::NegFOp>(l, x);
      return b.create<arith::SubIOp>(l, b.create<arith::ConstantIndexOp>(l, 0), x);
    }
    case ExprKind::Binary:
      return emitBinary(e, l);
    }
    return {};
  }

  /// int -> float promotion; floats and bools pass through.
  Value toFloat(Value v, Location l) {
    if (!v.getType().isIndex())
      return v;
    Value i32 = b.create<arith::IndexCastOp>(l, b.getI32Type(), v);
    return b.create<arith::SIToFPOp>(l, b.getF32Type(), i32);
  }

private:
  OpBuilder &b;
  Block &block;
  const ExprRegionContext &ctx;

  Value read(const std::string &name, ValueRange indices, Location l) {
    Value tensor = ctx.inputs.at(name);
    Type element = tensor.getType().cast<RankedTensorType>().getElementType();
    Type result = element.isF32() ? Type(b.getF32Type()) : Type(b.getIndexType());
    return b.create<mlir::attn::ReadOp>(l, result, tensor, indices);
  }

  /// A fixed size becomes a constant, a dynamic one `attn.size`.
  Value size(const std::string &name, Location l) {
    ArgDim dim;
    if (sizesOf(ctx.spec).lookup(name, dim) && !dim.isDynamic())
      return b.create<arith::ConstantIndexOp>(l, dim.value);
    return b.create<mlir::attn::SizeOp>(l, b.getIndexType(), b.getStringAttr(name));
  }

  Value emitName(const Expr &e, Location l) {
    for (unsigned a = 0; a < mlir::attn::kNumIndexArgs; ++a)
      if (e.name == kIndexVars[a])
        return block.getArgument(a);
    if (ctx.inputs.count(e.name))
      return read(e.name, {}, l); // a scalar input
    return size(e.name, l);
  }

  Value emitCall(const Expr &e, Location l) {
    const std::string &fn = e.name;
    if (fn == "dot")
      return block.getArgument(mlir::attn::ArgDot);
    SmallVector<Value> args;
    for (const ExprPtr &arg : e.operands)
      args.push_back(emit(*arg));
    if (fn == "exp") return b.create<math::ExpOp>(l, toFloat(args[0], l));
    if (fn == "log") return b.create<math::LogOp>(l, toFloat(args[0], l));
    if (fn == "sqrt") return b.create<math::SqrtOp>(l, toFloat(args[0], l));
    if (fn == "rsqrt") return b.create<math::RsqrtOp>(l, toFloat(args[0], l));
    if (fn == "tanh") return b.create<math::TanhOp>(l, toFloat(args[0], l));
    if (fn == "floor") return b.create<math::FloorOp>(l, toFloat(args[0], l));
    if (fn == "ceil") return b.create<math::CeilOp>(l, toFloat(args[0], l));
    if (fn == "log2") return b.create<math::Log2Op>(l, toFloat(args[0], l));
    if (fn == "float") return toFloat(args[0], l);
    if (fn == "int") {
      if (!args[0].getType().isF32())
        return args[0];
      // fptosi truncates toward zero, as int(x) does; ints are index here.
      Value i32 = b.create<arith::FPToSIOp>(l, b.getI32Type(), args[0]);
      return b.create<arith::IndexCastOp>(l, b.getIndexType(), i32);
    }
    if (fn == "abs") {
      if (args[0].getType().isF32())
        return b.create<math::AbsOp>(l, args[0]);
      return intAbs(args[0], l);
    }
    bool isFloat = e.type == ExprType::Float;
    if (fn == "min" || fn == "max" || fn == "clamp") {
      for (Value &a : args)
        a = isFloat ? toFloat(a, l) : a;
      auto minOf = [&](Value x, Value y) -> Value {
        return isFloat ? Value(b.create<arith::MinFOp>(l, x, y))
                       : Value(b.create<arith::MinSIOp>(l, x, y));
      };
      auto maxOf = [&](Value x, Value y) -> Value {
        return isFloat ? Value(b.create<arith::MaxFOp>(l, x, y))
                       : Value(b.create<arith::MaxSIOp>(l, x, y));
      };
      if (fn == "min") return minOf(args[0], args[1]);
      if (fn == "max") return maxOf(args[0], args[1]);
      return minOf(maxOf(args[0], args[1]), args[2]);
    }
    // select(c, a, b)
    Value x = args[1], y = args[2];
    if (isFloat) {
      x = toFloat(x, l);
      y = toFloat(y, l);
    }
    return b.create<SelectOp>(l, args[0], x, y);
  }

  Value intAbs(Value x, Location l) {
    Value zero = b.create<arith::ConstantIndexOp>(l, 0);
    Value negative = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, x, zero);
    return b.create<SelectOp>(l, negative, b.create<arith::SubIOp>(l, zero, x), x);
  }

  Value emitBinary(const Expr &e, Location l) {
    Value x = emit(*e.operands[0]), y = emit(*e.operands[1]);
    BinaryOp op = e.binaryOp;
    if (op == BinaryOp::And) return b.create<arith::AndIOp>(l, x, y);
    if (op == BinaryOp::Or) return b.create<arith::OrIOp>(l, x, y);
    if (op == BinaryOp::Mod) {
      // Euclidean: remsi's sign follows x; add |y| to a negative remainder.
      Value r = b.create<arith::RemSIOp>(l, x, y);
      Value zero = b.create<arith::ConstantIndexOp>(l, 0);
      Value negative = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, r, zero);
      return b.create<SelectOp>(l, negative, b.create<arith::AddIOp>(l, r, intAbs(y, l)), r);
    }
    bool boolOperands = x.getType().isInteger(1);
    bool isFloat = !boolOperands && (x.getType().isF32() || y.getType().isF32() ||
                                     op == BinaryOp::Div);
    if (isFloat) {
      x = toFloat(x, l);
      y = toFloat(y, l);
    }
    switch (op) {
    case BinaryOp::Add:
      return isFloat ? Value(b.create<arith::AddFOp>(l, x, y)) : b.create<arith::AddIOp>(l, x, y);
    case BinaryOp::Sub:
      return isFloat ? Value(b.create<arith::SubFOp>(l, x, y)) : b.create<arith::SubIOp>(l, x, y);
    case BinaryOp::Mul:
      return isFloat ? Value(b.create<arith::MulFOp>(l, x, y)) : b.create<arith::MulIOp>(l, x, y);
    case BinaryOp::Div:
      return b.create<arith::DivFOp>(l, x, y);
    default:
      break;
    }
    using IP = arith::CmpIPredicate;
    using FP = arith::CmpFPredicate;
    std::pair<IP, FP> pred;
    switch (op) {
    case BinaryOp::Lt: pred = {IP::slt, FP::OLT}; break;
    case BinaryOp::Le: pred = {IP::sle, FP::OLE}; break;
    case BinaryOp::Gt: pred = {IP::sgt, FP::OGT}; break;
    case BinaryOp::Ge: pred = {IP::sge, FP::OGE}; break;
    case BinaryOp::Eq: pred = {IP::eq, FP::OEQ}; break;
    default: pred = {IP::ne, FP::UNE}; break;
    }
    if (isFloat)
      return b.create<arith::CmpFOp>(l, pred.second, x, y);
    return b.create<arith::CmpIOp>(l, pred.first, x, y);
  }
};

void collectInputs(const Expr &e, const KernelSpec &spec, std::vector<std::string> &names) {
  if (e.kind == ExprKind::Index || e.kind == ExprKind::Name)
    for (const InputAST &input : spec.inputs)
      if (input.name == e.name &&
          std::find(names.begin(), names.end(), e.name) == names.end())
        names.push_back(e.name);
  for (const ExprPtr &operand : e.operands)
    collectInputs(*operand, spec, names);
}

} // namespace

void buildExprRegion(OpBuilder &builder, Region &region, const Expr &expr, bool withDot,
                     bool boolean, const ExprRegionContext &context) {
  OpBuilder::InsertionGuard guard(builder);
  Location l = context.loc(expr.loc);
  Block *block = new Block();
  region.push_back(block);
  for (unsigned a = 0; a < mlir::attn::kNumIndexArgs; ++a)
    block->addArgument(builder.getIndexType(), l);
  if (withDot)
    block->addArgument(builder.getF32Type(), l);
  builder.setInsertionPointToStart(block);
  ExprEmitter emitter(builder, *block, context);
  Value value = emitter.emit(expr);
  if (!boolean)
    value = emitter.toFloat(value, l);
  builder.create<mlir::attn::YieldOp>(l, value);
}

std::vector<std::string> inputsReadBy(const Expr &expr, const KernelSpec &spec) {
  std::vector<std::string> names;
  collectInputs(expr, spec, names);
  return names;
}

} // namespace attnc
