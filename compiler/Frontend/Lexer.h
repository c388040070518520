//===- Lexer.h - Tokens from .attn text ---------------------------*- C++ -*-===//
//
// Turns a buffer into tokens on demand (the parser pulls them one at a time,
// so even a 100 MB input needs no token array). Comments run from `#` or `//`
// to the end of the line. Malformed input (stray bytes, invalid UTF-8, integer
// literals beyond 64 bits) is diagnosed here once and returned as an `Error`
// token that the parser skips without a second message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/Diagnostics.h"
#include "compiler/Frontend/Token.h"

#include <string_view>

namespace attnc {

class Lexer {
public:
  /// Lexes buffer `bufferId` of `diag` (0 is the input file).
  Lexer(DiagnosticEngine &diag, uint32_t bufferId = 0);

  /// The next token; `Eof` forever at the end.
  Token next();

private:
  Token make(TokenKind kind, size_t start, SourceLoc loc);
  Token lexNumber(size_t start, SourceLoc loc);
  Token lexIdentifier(size_t start, SourceLoc loc);
  Token lexInvalid(size_t start, SourceLoc loc);
  void skipSpaceAndComments();
  void advanceBytes(size_t n); // advances pos_ on one line
  SourceLoc here() const { return {line_, col_, bufferId_}; }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool atEnd() const { return pos_ >= text_.size(); }

  DiagnosticEngine &diag_;
  uint32_t bufferId_;
  std::string_view text_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  uint32_t col_ = 1;
};

} // namespace attnc
