//===- AST.cpp - Names and copies of frontend data ------------------------===//
//
// Spellings of the expression operators and the deep copy of expression
// trees (the kinds' spellings are in compiler/Kinds/AttentionKinds.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/AST.h"

namespace attnc {

ExprPtr Expr::clone() const {
  auto copy = std::make_unique<Expr>(kind, loc);
  copy->type = type;
  copy->intValue = intValue;
  copy->floatValue = floatValue;
  copy->boolValue = boolValue;
  copy->name = name;
  copy->unaryOp = unaryOp;
  copy->binaryOp = binaryOp;
  copy->argName = argName;
  for (const ExprPtr &operand : operands)
    copy->operands.push_back(operand->clone());
  return copy;
}

const char *toString(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "not"; }

const char *toString(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::Mod: return "%";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::And: return "and";
  case BinaryOp::Or: return "or";
  case BinaryOp::MaskAnd: return "&";
  case BinaryOp::MaskOr: return "|";
  }
  return "?";
}

} // namespace attnc
