//===- ExprText.cpp - Expressions back to .attn source text ---------------===//
#include "compiler/Frontend/ExprText.h"
#include "compiler/Frontend/ASTDump.h"

namespace attnc {

namespace {

/// Binding strength of a binary operator, loosest first, as the parser
/// groups them (or < and < comparisons < + - < * / %).
int precedence(BinaryOp op) {
  switch (op) {
  case BinaryOp::MaskOr: return -1;
  case BinaryOp::MaskAnd: return 0;
  case BinaryOp::Or: return 1;
  case BinaryOp::And: return 2;
  case BinaryOp::Add:
  case BinaryOp::Sub: return 4;
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Mod: return 5;
  default: return 3; // comparisons
  }
}

/// A custom expression as .attn source text, parenthesized only where the
/// grouping needs it, so the header states what the kernel computes.
std::string exprText(const Expr &e, int outer);

/// One operand; a keyword argument (`hidden = 128`) keeps its keyword.
std::string operandText(const Expr &e) {
  return e.argName.empty() ? exprText(e, 0) : e.argName + " = " + exprText(e, 0);
}

std::string exprText(const Expr &e, int outer) {
  std::string text;
  auto list = [&](const char *open, const char *close) {
    text += open;
    for (size_t i = 0; i < e.operands.size(); ++i)
      text += (i ? ", " : "") + operandText(*e.operands[i]);
    text += close;
  };
  switch (e.kind) {
  case ExprKind::IntLit: return std::to_string(e.intValue);
  case ExprKind::FloatLit: return formatDouble(e.floatValue);
  case ExprKind::BoolLit: return e.boolValue ? "true" : "false";
  case ExprKind::Name: return e.name;
  case ExprKind::Index:
    text = e.name;
    list("[", "]");
    return text;
  case ExprKind::Call:
    text = e.name;
    list("(", ")");
    return text;
  case ExprKind::Unary:
    text = std::string(toString(e.unaryOp)) + (e.unaryOp == UnaryOp::Not ? " " : "") +
           exprText(*e.operands[0], 6);
    return outer > 6 ? "(" + text + ")" : text;
  case ExprKind::Binary: {
    int p = precedence(e.binaryOp);
    // Left-associative: the right operand binds one level tighter.
    text = exprText(*e.operands[0], p) + " " + toString(e.binaryOp) + " " +
           exprText(*e.operands[1], p + 1);
    return p < outer ? "(" + text + ")" : text;
  }
  }
  return "?";
}

} // namespace

std::string exprText(const Expr &e) { return exprText(e, 0); }

std::string maskTermText(const Expr &e, bool inConjunction) {
  std::string text = exprText(e, 0);
  if (inConjunction && e.kind == ExprKind::Binary && precedence(e.binaryOp) < 3)
    return "(" + text + ")";
  return text;
}

} // namespace attnc
