//===- Parser.cpp - Recursive-descent parser for .attn --------------------===//
//
// One method per grammar rule, one error helper (errorAt), one recovery point
// (skipToEndOfItem). Field values are parsed as expressions whatever the
// field; Sema decides which forms each field accepts, so that syntax and
// meaning are reported separately and precisely.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Parser.h"

#include "compiler/Frontend/Limits.h"
#include "compiler/Frontend/Sema.h"
#include "compiler/Frontend/Suggest.h"

#include <algorithm>
#include <vector>

namespace attnc {

std::string describeToken(const Token &tok) {
  switch (tok.kind) {
  case TokenKind::Eof: return "end of file";
  case TokenKind::Newline: return "end of line";
  default: return quote(tok.text);
  }
}

Parser::Parser(DiagnosticEngine &diag, uint32_t bufferId)
    : diag_(diag), lexer_(diag, bufferId), text_(diag.bufferText(bufferId)) {
  tok_ = lexer_.next();
}

//===----------------------------------------------------------------------===//
// Tokens and recovery
//===----------------------------------------------------------------------===//

void Parser::advance() {
  if (!tok_.is(TokenKind::Eof))
    lastEnd_ = tok_.offset + tok_.text.size();
  do {
    if (ahead_) {
      tok_ = *ahead_;
      ahead_.reset();
    } else {
      tok_ = lexer_.next();
    }
  } while (tok_.is(TokenKind::Newline) && nesting_ > 0);
}

const Token &Parser::lookahead() {
  if (!ahead_) {
    Token next = lexer_.next();
    while (next.is(TokenKind::Newline) && nesting_ > 0)
      next = lexer_.next();
    ahead_ = next;
  }
  return *ahead_;
}

bool Parser::consumeIf(TokenKind kind) {
  if (!tok_.is(kind))
    return false;
  advance();
  return true;
}

void Parser::errorAt(const Token &tok, const std::string &message) {
  if (!tok.is(TokenKind::Error))
    diag_.error(tok.loc, message);
}

void Parser::skipToEndOfItem() {
  nesting_ = 0;
  while (!tok_.is(TokenKind::Newline) && !tok_.is(TokenKind::Semicolon) &&
         !tok_.is(TokenKind::RBrace) && !tok_.is(TokenKind::Eof) && !stopped())
    advance();
}

std::string Parser::valueText(size_t start) const {
  // Whitespace runs (newlines inside parentheses included) become one space.
  constexpr size_t kMaxText = 256;
  std::string text;
  size_t end = lastEnd_ > start ? lastEnd_ : start;
  bool space = false;
  for (size_t pos = start; pos < end && pos < text_.size(); ++pos) {
    char c = text_[pos];
    if (c == '#' || (c == '/' && pos + 1 < end && text_[pos + 1] == '/')) {
      while (pos < end && text_[pos] != '\n')
        ++pos;
      space = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !text.empty())
      text += ' ';
    space = false;
    if (text.size() >= kMaxText) {
      text += "...";
      break;
    }
    text += c;
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

/// module := (newline | ';' | kernel)* eof
ModuleAST Parser::parseModule() {
  ModuleAST module;
  module.fileName = diag_.fileName();
  while (!tok_.is(TokenKind::Eof) && !stopped()) {
    if (consumeIf(TokenKind::Newline) || consumeIf(TokenKind::Semicolon))
      continue;
    if (tok_.is(TokenKind::KwKernel)) {
      if (module.kernels.size() >= limits::kMaxKernels) {
        errorAt(tok_, "too many kernels in one file (the maximum is " +
                          std::to_string(limits::kMaxKernels) + ")");
        break;
      }
      if (!parseKernel(module))
        break;
      continue;
    }
    // Anything else at the top level: say what belongs there, then skip to
    // the next `kernel`.
    std::string message = "expected 'kernel', found " + describeToken(tok_);
    if (tok_.is(TokenKind::Identifier)) {
      std::string word(tok_.text);
      const std::vector<std::string> &fields = knownFieldNames();
      if (std::find(fields.begin(), fields.end(), word) != fields.end())
        message = "field " + quote(word) +
                  " is outside of a kernel; fields go inside 'kernel NAME { ... }'";
      else
        message += didYouMean(word, {"kernel"});
    }
    errorAt(tok_, message);
    while (!tok_.is(TokenKind::KwKernel) && !tok_.is(TokenKind::Eof) && !stopped())
      advance();
  }
  return module;
}

/// kernel := 'kernel' identifier '{' item* '}'
/// Returns false when parsing cannot continue (end of file or error limit).
bool Parser::parseKernel(ModuleAST &module) {
  unsigned errorsBefore = diag_.errorCount();
  Token kernelTok = tok_;
  advance();
  KernelAST kernel;
  kernel.loc = tok_.loc;
  if (tok_.is(TokenKind::Identifier)) {
    kernel.name = std::string(tok_.text);
    advance();
  } else {
    errorAt(tok_, "expected a kernel name after 'kernel', found " + describeToken(tok_));
    kernel.loc = kernelTok.loc;
    if (!tok_.is(TokenKind::LBrace) && !tok_.is(TokenKind::Newline) &&
        !tok_.is(TokenKind::Eof))
      advance(); // skip a bad name such as `3d`
  }
  while (tok_.is(TokenKind::Newline))
    advance();
  if (!tok_.is(TokenKind::LBrace)) {
    errorAt(tok_, "expected '{' after the kernel name, found " + describeToken(tok_));
    while (!tok_.is(TokenKind::KwKernel) && !tok_.is(TokenKind::Eof) && !stopped())
      advance();
    return !tok_.is(TokenKind::Eof);
  }
  Token open = tok_;
  advance();
  while (!tok_.is(TokenKind::RBrace) && !stopped()) {
    if (tok_.is(TokenKind::Eof) || tok_.is(TokenKind::KwKernel)) {
      errorAt(tok_, "expected '}' to close kernel " + quote(kernel.name) + ", found " +
                        describeToken(tok_));
      diag_.note(open.loc, "kernel " + quote(kernel.name) + " opened here");
      kernel.syntaxErrors = true;
      module.kernels.push_back(std::move(kernel));
      return tok_.is(TokenKind::KwKernel);
    }
    parseItem(kernel);
  }
  advance(); // '}'
  kernel.syntaxErrors = diag_.errorCount() != errorsBefore;
  module.kernels.push_back(std::move(kernel));
  return true;
}

/// item := newline | ';' | input | field
bool Parser::parseItem(KernelAST &kernel) {
  if (consumeIf(TokenKind::Newline) || consumeIf(TokenKind::Semicolon))
    return true;
  if (tok_.is(TokenKind::Identifier)) {
    // Bound what one kernel may hold, so a huge file cannot fill memory.
    if (kernel.fields.size() + kernel.inputs.size() >=
        limits::kMaxFields + limits::kMaxInputs) {
      errorAt(tok_, "too many fields and inputs in kernel " + quote(kernel.name) +
                        " (the maximum is " + std::to_string(limits::kMaxFields) +
                        " fields and " + std::to_string(limits::kMaxInputs) + " inputs)");
      while (!tok_.is(TokenKind::RBrace) && !tok_.is(TokenKind::Eof) &&
             !tok_.is(TokenKind::KwKernel) && !stopped())
        advance();
      return false;
    }
    if (tok_.text == "input" && !lookahead().is(TokenKind::Equal))
      return parseInput(kernel);
    return parseField(kernel);
  }
  errorAt(tok_, "expected a field ('name = value') or an input declaration, found " +
                    describeToken(tok_));
  advance();
  skipToEndOfItem();
  return false;
}

/// field := identifier '=' value (newline | ';' | '}')
bool Parser::parseField(KernelAST &kernel) {
  FieldAST field;
  field.name = std::string(tok_.text);
  field.nameLoc = tok_.loc;
  advance();
  if (!tok_.is(TokenKind::Equal)) {
    errorAt(tok_, "expected '=' after field name " + quote(field.name) + ", found " +
                      describeToken(tok_));
    skipToEndOfItem();
    return false;
  }
  advance();
  if (!parseFieldValue(field)) {
    skipToEndOfItem();
    return false;
  }
  kernel.fields.push_back(std::move(field));
  return expectEndOfItem("the value of the field");
}

/// value := expr ((',' | '&') expr)*
bool Parser::parseFieldValue(FieldAST &field) {
  nodes_ = 0;
  limitReported_ = false;
  field.valueLoc = tok_.loc;
  size_t start = tok_.offset;
  if (tok_.is(TokenKind::Newline) || tok_.is(TokenKind::Eof) ||
      tok_.is(TokenKind::Semicolon) || tok_.is(TokenKind::RBrace)) {
    errorAt(tok_, "expected a value for field " + quote(field.name) + ", found " +
                      describeToken(tok_));
    return false;
  }
  // In `mask`, '&' and '|' are operators of the value (with parentheses
  // grouping them); elsewhere '&' separates values, for a better message.
  maskValue_ = field.name == "mask";
  field.value = parseExpr();
  maskValue_ = false;
  if (!field.value)
    return false;
  if (tok_.is(TokenKind::Pipe)) {
    errorAt(tok_, "'|' joins masks and is only allowed in 'mask'");
    return false;
  }
  while (tok_.is(TokenKind::Comma) || tok_.is(TokenKind::Amp)) {
    char separator = tok_.is(TokenKind::Comma) ? ',' : '&';
    if (field.separator && field.separator != separator) {
      errorAt(tok_, "cannot mix ',' and '&' in one value: ',' separates a list "
                    "(outputs), '&' joins masks");
      return false;
    }
    field.separator = separator;
    advance();
    field.moreValueLocs.push_back(tok_.loc);
    ExprPtr item = parseExpr();
    if (!item)
      return false;
    field.moreValues.push_back(std::move(item));
  }
  field.text = valueText(start);
  return true;
}

/// Ends an item: newline or ';' (consumed), '}' or eof (left for the caller).
bool Parser::expectEndOfItem(const char *what) {
  if (consumeIf(TokenKind::Newline) || consumeIf(TokenKind::Semicolon) ||
      tok_.is(TokenKind::RBrace) || tok_.is(TokenKind::Eof))
    return true;
  std::string message = std::string("expected end of line or ';' after ") + what +
                        ", found " + describeToken(tok_);
  if (tok_.is(TokenKind::Equal))
    message += " (use '==' to compare)";
  errorAt(tok_, message);
  skipToEndOfItem();
  return false;
}

/// input := 'input' identifier ':' identifier ['[' [dim (',' dim)*] ']']
/// dim   := integer | identifier
bool Parser::parseInput(KernelAST &kernel) {
  advance(); // 'input'
  InputAST input;
  input.loc = tok_.loc;
  if (!tok_.is(TokenKind::Identifier)) {
    errorAt(tok_, "expected an input name after 'input', found " + describeToken(tok_));
    skipToEndOfItem();
    return false;
  }
  input.name = std::string(tok_.text);
  advance();
  if (!tok_.is(TokenKind::Colon)) {
    errorAt(tok_, "expected ':' and an element type after input " + quote(input.name) +
                      " (e.g. 'input " + input.name + " : f32[H]'), found " +
                      describeToken(tok_));
    skipToEndOfItem();
    return false;
  }
  advance();
  static const std::vector<std::string> kTypes = {"f32", "i32", "u8"};
  const ElemType kTypeValues[] = {ElemType::F32, ElemType::I32, ElemType::U8};
  auto found = tok_.is(TokenKind::Identifier)
                   ? std::find(kTypes.begin(), kTypes.end(), tok_.text)
                   : kTypes.end();
  if (found == kTypes.end()) {
    std::string message = "expected an element type (f32, i32 or u8) for input " +
                          quote(input.name) + ", found " + describeToken(tok_);
    if (tok_.is(TokenKind::Identifier))
      message += didYouMean(tok_.text, kTypes);
    errorAt(tok_, message);
    skipToEndOfItem();
    return false;
  }
  input.type = kTypeValues[found - kTypes.begin()];
  advance();
  if (tok_.is(TokenKind::LBracket)) {
    Token open = tok_;
    openNesting();
    advance();
    while (!tok_.is(TokenKind::RBracket)) {
      DimAST dim;
      dim.loc = tok_.loc;
      if (tok_.is(TokenKind::Integer)) {
        dim.value = tok_.intValue;
      } else if (tok_.is(TokenKind::Identifier)) {
        dim.sizeName = std::string(tok_.text);
      } else {
        errorAt(tok_, "expected a dimension (an integer or a size name such as 'B' or "
                      "'Lq') in the shape of input " + quote(input.name) + ", found " +
                          describeToken(tok_));
        skipToEndOfItem();
        return false;
      }
      if (input.dims.size() >= limits::kMaxInputRank) {
        errorAt(tok_, "input " + quote(input.name) + " has more than " +
                          std::to_string(limits::kMaxInputRank) + " dimensions");
        skipToEndOfItem();
        return false;
      }
      input.dims.push_back(dim);
      advance();
      if (consumeIf(TokenKind::Comma))
        continue;
      if (!tok_.is(TokenKind::RBracket)) {
        errorAt(tok_, "expected ',' or ']' in the shape of input " + quote(input.name) +
                          ", found " + describeToken(tok_));
        diag_.note(open.loc, "to match this '['");
        skipToEndOfItem();
        return false;
      }
    }
    closeNesting();
    advance();
  }
  kernel.inputs.push_back(std::move(input));
  return expectEndOfItem("the input declaration");
}

/// override := identifier '=' value eof
std::optional<FieldAST> Parser::parseOverride() {
  FieldAST field;
  if (!tok_.is(TokenKind::Identifier)) {
    errorAt(tok_, "expected FIELD=VALUE, found " + describeToken(tok_));
    return std::nullopt;
  }
  field.name = std::string(tok_.text);
  field.nameLoc = tok_.loc;
  advance();
  if (!tok_.is(TokenKind::Equal)) {
    errorAt(tok_, "expected '=' after " + quote(field.name) + " (-D FIELD=VALUE), found " +
                      describeToken(tok_));
    return std::nullopt;
  }
  advance();
  if (!parseFieldValue(field))
    return std::nullopt;
  if (!tok_.is(TokenKind::Eof)) {
    errorAt(tok_, "unexpected " + describeToken(tok_) + " after the value of " +
                      quote(field.name));
    return std::nullopt;
  }
  return field;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

ExprPtr Parser::newNode(ExprKind kind, SourceLoc loc) {
  if (++nodes_ > limits::kMaxExprNodes) {
    if (!limitReported_)
      diag_.error(loc, "expression is too large (more than " +
                           std::to_string(limits::kMaxExprNodes) + " operands and operators)");
    limitReported_ = true;
    return nullptr;
  }
  return std::make_unique<Expr>(kind, loc);
}

/// Counts one level of recursion; false (with one error) beyond the limit.
bool Parser::enterNesting(const Token &at) {
  if (depth_ >= limits::kMaxNesting) {
    if (!limitReported_)
      errorAt(at, "expression is nested too deeply (the maximum depth is " +
                      std::to_string(limits::kMaxNesting) + ")");
    limitReported_ = true;
    return false;
  }
  ++depth_;
  return true;
}

struct BinaryInfo {
  TokenKind token;
  BinaryOp op;
};

/// One precedence level of binary operators: its operators, and whether
/// `a op b op c` groups to the left or is an error (comparisons).
struct BinaryLevel {
  std::vector<BinaryInfo> ops;
  bool chains;
};

namespace {
/// Leaves one level of expression recursion on scope exit.
struct DepthScope {
  unsigned &depth;
  ~DepthScope() { --depth; }
};

std::optional<BinaryOp> binaryOpFor(TokenKind kind, const BinaryLevel &level) {
  for (const BinaryInfo &row : level.ops)
    if (row.token == kind)
      return row.op;
  return std::nullopt;
}

const BinaryLevel kMaskOrLevel = {{{TokenKind::Pipe, BinaryOp::MaskOr}}, true};
const BinaryLevel kMaskAndLevel = {{{TokenKind::Amp, BinaryOp::MaskAnd}}, true};
const BinaryLevel kOrLevel = {{{TokenKind::KwOr, BinaryOp::Or}}, true};
const BinaryLevel kAndLevel = {{{TokenKind::KwAnd, BinaryOp::And}}, true};
const BinaryLevel kComparisonLevel = {
    {{TokenKind::Less, BinaryOp::Lt},       {TokenKind::LessEqual, BinaryOp::Le},
     {TokenKind::Greater, BinaryOp::Gt},    {TokenKind::GreaterEqual, BinaryOp::Ge},
     {TokenKind::EqualEqual, BinaryOp::Eq}, {TokenKind::BangEqual, BinaryOp::Ne}},
    false};
const BinaryLevel kAdditiveLevel = {
    {{TokenKind::Plus, BinaryOp::Add}, {TokenKind::Minus, BinaryOp::Sub}}, true};
const BinaryLevel kMultiplicativeLevel = {{{TokenKind::Star, BinaryOp::Mul},
                                           {TokenKind::Slash, BinaryOp::Div},
                                           {TokenKind::Percent, BinaryOp::Mod}},
                                          true};
} // namespace

/// level := operand (OP operand)*     (non-chaining levels: at most one OP)
ExprPtr Parser::parseBinary(const BinaryLevel &level, ExprPtr (Parser::*operand)()) {
  ExprPtr lhs = (this->*operand)();
  while (lhs) {
    std::optional<BinaryOp> op = binaryOpFor(tok_.kind, level);
    if (!op)
      break;
    ExprPtr node = newNode(ExprKind::Binary, tok_.loc);
    advance();
    ExprPtr rhs = (this->*operand)();
    if (!node || !rhs)
      return nullptr;
    if (!level.chains && binaryOpFor(tok_.kind, level)) {
      errorAt(tok_, "comparisons cannot be chained; join them with 'and' "
                    "(e.g. 'a < b and b < c')");
      return nullptr;
    }
    node->binaryOp = *op;
    node->operands.push_back(std::move(lhs));
    node->operands.push_back(std::move(rhs));
    lhs = std::move(node);
  }
  return lhs;
}

/// expr := orExpr, or in the value of `mask`: maskUnion
ExprPtr Parser::parseExpr() { return maskValue_ ? parseMaskUnion() : parseOr(); }

/// maskUnion := maskIntersection ('|' maskIntersection)*
ExprPtr Parser::parseMaskUnion() {
  return parseBinary(kMaskOrLevel, &Parser::parseMaskIntersection);
}

/// maskIntersection := orExpr ('&' orExpr)*    ('&' binds tighter than '|')
ExprPtr Parser::parseMaskIntersection() { return parseBinary(kMaskAndLevel, &Parser::parseOr); }

/// orExpr := andExpr ('or' andExpr)*
ExprPtr Parser::parseOr() { return parseBinary(kOrLevel, &Parser::parseAnd); }

/// andExpr := notExpr ('and' notExpr)*
ExprPtr Parser::parseAnd() { return parseBinary(kAndLevel, &Parser::parseNot); }

/// notExpr := 'not' notExpr | cmpExpr
ExprPtr Parser::parseNot() {
  if (!tok_.is(TokenKind::KwNot))
    return parseComparison();
  Token notTok = tok_;
  if (!enterNesting(notTok))
    return nullptr;
  DepthScope scope{depth_};
  ExprPtr node = newNode(ExprKind::Unary, notTok.loc);
  advance();
  ExprPtr operand = parseNot();
  if (!node || !operand)
    return nullptr;
  node->unaryOp = UnaryOp::Not;
  node->operands.push_back(std::move(operand));
  return node;
}

/// cmpExpr := addExpr [('<' | '<=' | '>' | '>=' | '==' | '!=') addExpr]
ExprPtr Parser::parseComparison() {
  return parseBinary(kComparisonLevel, &Parser::parseAdditive);
}

/// addExpr := mulExpr (('+' | '-') mulExpr)*
ExprPtr Parser::parseAdditive() { return parseBinary(kAdditiveLevel, &Parser::parseMultiplicative); }

/// mulExpr := unaryExpr (('*' | '/' | '%') unaryExpr)*
ExprPtr Parser::parseMultiplicative() {
  return parseBinary(kMultiplicativeLevel, &Parser::parseUnary);
}

/// unaryExpr := '-' unaryExpr | primary
ExprPtr Parser::parseUnary() {
  if (!tok_.is(TokenKind::Minus))
    return parsePrimary();
  Token minus = tok_;
  if (!enterNesting(minus))
    return nullptr;
  DepthScope scope{depth_};
  ExprPtr node = newNode(ExprKind::Unary, minus.loc);
  advance();
  ExprPtr operand = parseUnary();
  if (!node || !operand)
    return nullptr;
  node->unaryOp = UnaryOp::Neg;
  node->operands.push_back(std::move(operand));
  return node;
}

/// primary := integer | float | 'true' | 'false' | '(' expr ')'
///          | identifier | identifier '(' args ')' | identifier '[' expr (',' expr)* ']'
ExprPtr Parser::parsePrimary() {
  Token tok = tok_;
  switch (tok.kind) {
  case TokenKind::Integer: {
    ExprPtr node = newNode(ExprKind::IntLit, tok.loc);
    if (node)
      node->intValue = tok.intValue;
    advance();
    return node;
  }
  case TokenKind::Float: {
    ExprPtr node = newNode(ExprKind::FloatLit, tok.loc);
    if (node)
      node->floatValue = tok.floatValue;
    advance();
    return node;
  }
  case TokenKind::KwTrue:
  case TokenKind::KwFalse: {
    ExprPtr node = newNode(ExprKind::BoolLit, tok.loc);
    if (node)
      node->boolValue = tok.is(TokenKind::KwTrue);
    advance();
    return node;
  }
  case TokenKind::LParen: {
    if (!enterNesting(tok))
      return nullptr;
    DepthScope scope{depth_};
    openNesting();
    advance();
    ExprPtr inner = parseExpr();
    if (!inner)
      return nullptr;
    if (!tok_.is(TokenKind::RParen)) {
      errorAt(tok_, "expected ')', found " + describeToken(tok_));
      diag_.note(tok.loc, "to match this '('");
      return nullptr;
    }
    closeNesting();
    advance();
    return inner;
  }
  case TokenKind::Identifier:
    advance();
    if (tok_.is(TokenKind::LParen) || tok_.is(TokenKind::LBracket))
      return parseCallOrIndex(tok);
    {
      ExprPtr node = newNode(ExprKind::Name, tok.loc);
      if (node)
        node->name = std::string(tok.text);
      return node;
    }
  default:
    errorAt(tok, "expected an expression, found " + describeToken(tok));
    return nullptr;
  }
}

/// call  := identifier '(' [arg (',' arg)*] ')'     arg := [identifier '='] expr
/// index := identifier '[' expr (',' expr)* ']'
ExprPtr Parser::parseCallOrIndex(const Token &name) {
  bool isCall = tok_.is(TokenKind::LParen);
  Token open = tok_;
  if (!enterNesting(open))
    return nullptr;
  DepthScope scope{depth_};
  ExprPtr node = newNode(isCall ? ExprKind::Call : ExprKind::Index, name.loc);
  if (!node)
    return nullptr;
  node->name = std::string(name.text);
  TokenKind close = isCall ? TokenKind::RParen : TokenKind::RBracket;
  openNesting();
  advance();
  if (!tok_.is(close) || !isCall) {
    while (true) {
      std::string argName;
      if (isCall && tok_.is(TokenKind::Identifier) && lookahead().is(TokenKind::Equal)) {
        argName = std::string(tok_.text);
        advance();
        advance();
      }
      ExprPtr operand = parseExpr();
      if (!operand)
        return nullptr;
      operand->argName = std::move(argName);
      node->operands.push_back(std::move(operand));
      if (!consumeIf(TokenKind::Comma))
        break;
    }
  }
  if (!tok_.is(close)) {
    errorAt(tok_, std::string("expected ',' or ") + tokenKindSpelling(close) + " after " +
                      (isCall ? "an argument of " : "an index of ") + quote(node->name) +
                      ", found " + describeToken(tok_));
    diag_.note(open.loc, std::string("to match this ") + tokenKindSpelling(open.kind));
    return nullptr;
  }
  closeNesting();
  advance();
  return node;
}

} // namespace attnc
