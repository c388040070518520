//===- AST.cpp - Names and copies of frontend data ------------------------===//
//
// Spellings of the frontend's enums, shared by every stage's printer, and the
// deep copy of expression trees.
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

const char *toString(ScoreKind kind) {
  switch (kind) {
  case ScoreKind::Dot: return "dot";
  case ScoreKind::ScaledDot: return "scaled_dot";
  case ScoreKind::General: return "general";
  case ScoreKind::Additive: return "additive";
  case ScoreKind::Custom: return "custom";
  }
  return "?";
}

const char *toString(BiasKind kind) {
  switch (kind) {
  case BiasKind::None: return "none";
  case BiasKind::Alibi: return "alibi";
  case BiasKind::Custom: return "custom";
  }
  return "?";
}

const char *toString(MaskKind kind) {
  switch (kind) {
  case MaskKind::Causal: return "causal";
  case MaskKind::ValidLen: return "valid_len";
  case MaskKind::Window: return "window";
  case MaskKind::Input: return "input";
  case MaskKind::Custom: return "custom";
  }
  return "?";
}

const char *toString(ProjectKind kind) {
  switch (kind) {
  case ProjectKind::None: return "none";
  case ProjectKind::SelfQKV: return "self_qkv";
  case ProjectKind::QKV: return "qkv";
  case ProjectKind::QKVOut: return "qkv_out";
  case ProjectKind::SelfQKVOut: return "self_qkv_out";
  }
  return "?";
}

const char *toString(Layout layout) {
  return layout == Layout::BHSD ? "bhsd" : "bshd";
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
  }
  return "?";
}

} // namespace attnc
