//===- Parser.h - Recursive-descent parser for .attn --------------*- C++ -*-===//
//
// Builds a ModuleAST from tokens pulled from a Lexer. Each method's doc
// comment gives its grammar rule. The parser recovers at the end of the
// current field (newline, ';' or '}') so one run reports every independent
// syntax error; nesting and expression size are capped (Limits.h) so no input
// can exhaust the stack.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"
#include "compiler/Frontend/Diagnostics.h"
#include "compiler/Frontend/Lexer.h"

#include <optional>

namespace attnc {

struct BinaryLevel;

class Parser {
public:
  Parser(DiagnosticEngine &diag, uint32_t bufferId = 0);

  /// module := (newline | ';' | kernel)* eof
  ModuleAST parseModule();

  /// override := identifier '=' value eof      (the text `FIELD=VALUE` of -D)
  std::optional<FieldAST> parseOverride();

private:
  // Token handling.
  void advance();
  const Token &lookahead();
  bool consumeIf(TokenKind kind);
  void openNesting() { ++nesting_; }
  void closeNesting() { if (nesting_) --nesting_; }
  /// Reports `message` at `tok` unless the lexer already reported it.
  void errorAt(const Token &tok, const std::string &message);
  /// Skips to the end of the current item: newline, ';', '}' or eof.
  void skipToEndOfItem();
  bool stopped() const { return diag_.tooManyErrors(); }
  std::string valueText(size_t start) const;

  // Structure.
  bool parseKernel(ModuleAST &module);
  bool parseItem(KernelAST &kernel);
  bool parseField(KernelAST &kernel);
  bool parseInput(KernelAST &kernel);
  bool parseFieldValue(FieldAST &field);
  bool expectEndOfItem(const char *what);

  // Expressions.
  ExprPtr parseExpr();
  ExprPtr parseMaskUnion();
  ExprPtr parseMaskIntersection();
  ExprPtr parseOr();
  ExprPtr parseAnd();
  ExprPtr parseNot();
  ExprPtr parseComparison();
  ExprPtr parseAdditive();
  ExprPtr parseMultiplicative();
  ExprPtr parseUnary();
  ExprPtr parsePrimary();
  ExprPtr parseCallOrIndex(const Token &name);
  /// The one loop of every binary level (a row of Parser.cpp's level table).
  ExprPtr parseBinary(const BinaryLevel &level, ExprPtr (Parser::*operand)());
  ExprPtr newNode(ExprKind kind, SourceLoc loc);
  bool enterNesting(const Token &at);

  DiagnosticEngine &diag_;
  Lexer lexer_;
  std::string_view text_;
  Token tok_;
  std::optional<Token> ahead_;
  size_t lastEnd_ = 0;   // end offset of the last consumed token
  unsigned nesting_ = 0; // open '(' / '[': newlines are insignificant inside
  unsigned depth_ = 0;   // recursion depth of the expression parser
  unsigned nodes_ = 0;   // nodes in the current field value
  bool limitReported_ = false; // depth / size limit reported for this value
  bool maskValue_ = false; // parsing `mask`: '&' and '|' join terms, '(' groups them
};

/// How a message names what was found: `'foo'`, `end of line`, ...
std::string describeToken(const Token &tok);

} // namespace attnc
