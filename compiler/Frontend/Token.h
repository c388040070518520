//===- Token.h - Tokens of the .attn language ---------------------*- C++ -*-===//
//
// The lexer's output. Newlines are tokens because they end fields; the parser
// ignores them inside parentheses and brackets. A token's text is a view into
// a buffer owned by the DiagnosticEngine.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"

#include <cstdint>
#include <string_view>

namespace attnc {

enum class TokenKind {
  Eof,
  Newline,
  Error, // already diagnosed by the lexer
  Identifier,
  Integer,
  Float,
  // Keywords.
  KwKernel,
  KwAnd,
  KwOr,
  KwNot,
  KwTrue,
  KwFalse,
  // Punctuation.
  LBrace,
  RBrace,
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Semicolon,
  Colon,
  Equal,
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  Amp,
  Pipe,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  EqualEqual,
  BangEqual,
};

struct Token {
  TokenKind kind = TokenKind::Eof;
  SourceLoc loc;
  size_t offset = 0;     // byte offset of the first character in its buffer
  std::string_view text; // the spelling
  int64_t intValue = 0;  // Integer
  double floatValue = 0; // Float

  bool is(TokenKind k) const { return kind == k; }
};

/// A stable name for dumps: `identifier`, `integer`, `kw_kernel`, `l_paren`, ...
const char *tokenKindName(TokenKind kind);
/// How a message names a token kind: `identifier`, `'('`, `end of line`, ...
const char *tokenKindSpelling(TokenKind kind);

} // namespace attnc
