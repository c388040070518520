//===- Lexer.cpp - Tokens from .attn text ---------------------------------===//
//
// A hand-written lexer over a byte buffer. Columns count bytes (as clang's
// do). Every malformed byte sequence is reported once per run of bad bytes
// and turned into an Error token, so binary files give a handful of located
// errors instead of one per byte.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Lexer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace attnc {

static bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

Lexer::Lexer(DiagnosticEngine &diag, uint32_t bufferId)
    : diag_(diag), bufferId_(bufferId), text_(diag.bufferText(bufferId)) {}

void Lexer::advanceBytes(size_t n) {
  pos_ += n;
  uint64_t col = uint64_t(col_) + n;
  col_ = col > UINT32_MAX ? UINT32_MAX : uint32_t(col);
}

Token Lexer::make(TokenKind kind, size_t start, SourceLoc loc) {
  Token tok;
  tok.kind = kind;
  tok.loc = loc;
  tok.offset = start;
  tok.text = text_.substr(start, pos_ - start);
  return tok;
}

void Lexer::skipSpaceAndComments() {
  while (!atEnd()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      advanceBytes(1);
    } else if (c == '#' || (c == '/' && peek(1) == '/')) {
      // A comment may hold any bytes; it ends at the newline (not eaten).
      size_t end = text_.find('\n', pos_);
      advanceBytes((end == std::string_view::npos ? text_.size() : end) - pos_);
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  skipSpaceAndComments();
  SourceLoc loc = here();
  size_t start = pos_;
  if (atEnd())
    return make(TokenKind::Eof, start, loc);

  char c = peek();
  if (c == '\n') {
    // One token for a run of line ends (blank and comment lines included):
    // fields only need to know that a line ended.
    advanceBytes(1);
    Token tok = make(TokenKind::Newline, start, loc);
    while (true) {
      if (line_ < UINT32_MAX)
        ++line_;
      col_ = 1;
      skipSpaceAndComments();
      if (peek() != '\n' || atEnd())
        break;
      pos_ += 1;
    }
    return tok;
  }
  if (isIdentStart(c))
    return lexIdentifier(start, loc);
  if (isDigit(c) || (c == '.' && isDigit(peek(1))))
    return lexNumber(start, loc);

  auto single = [&](TokenKind kind) {
    advanceBytes(1);
    return make(kind, start, loc);
  };
  auto twoChar = [&](TokenKind kind) {
    advanceBytes(2);
    return make(kind, start, loc);
  };
  auto misspelt = [&](size_t length, const std::string &message) {
    advanceBytes(length);
    diag_.error(loc, message);
    return make(TokenKind::Error, start, loc);
  };

  switch (c) {
  case '{': return single(TokenKind::LBrace);
  case '}': return single(TokenKind::RBrace);
  case '(': return single(TokenKind::LParen);
  case ')': return single(TokenKind::RParen);
  case '[': return single(TokenKind::LBracket);
  case ']': return single(TokenKind::RBracket);
  case ',': return single(TokenKind::Comma);
  case ';': return single(TokenKind::Semicolon);
  case ':': return single(TokenKind::Colon);
  case '+': return single(TokenKind::Plus);
  case '-': return single(TokenKind::Minus);
  case '/': return single(TokenKind::Slash);
  case '%': return single(TokenKind::Percent);
  case '*':
    if (peek(1) == '*')
      return misspelt(2, "'**' is not an operator: the language has no power "
                         "operator (use exp, sqrt or a literal)");
    return single(TokenKind::Star);
  case '^':
    return misspelt(1, "'^' is not an operator: the language has no power "
                       "operator (write the value out, e.g. 1048576)");
  case '&':
    if (peek(1) == '&')
      return misspelt(2, "'&&' is not an operator: use 'and' in expressions, "
                         "or a single '&' to join masks");
    return single(TokenKind::Amp);
  case '|':
    if (peek(1) == '|')
      return misspelt(2, "'||' is not an operator: use 'or' in expressions, "
                         "or a single '|' to join masks");
    return single(TokenKind::Pipe);
  case '=':
    return peek(1) == '=' ? twoChar(TokenKind::EqualEqual) : single(TokenKind::Equal);
  case '<':
    return peek(1) == '=' ? twoChar(TokenKind::LessEqual) : single(TokenKind::Less);
  case '>':
    return peek(1) == '=' ? twoChar(TokenKind::GreaterEqual) : single(TokenKind::Greater);
  case '!':
    if (peek(1) == '=')
      return twoChar(TokenKind::BangEqual);
    return misspelt(1, "'!' is not an operator: use 'not'");
  default:
    return lexInvalid(start, loc);
  }
}

Token Lexer::lexIdentifier(size_t start, SourceLoc loc) {
  size_t end = pos_;
  while (end < text_.size() && isIdentChar(text_[end]))
    ++end;
  advanceBytes(end - pos_);
  Token tok = make(TokenKind::Identifier, start, loc);
  static const struct {
    const char *spelling;
    TokenKind kind;
  } keywords[] = {{"kernel", TokenKind::KwKernel}, {"and", TokenKind::KwAnd},
                  {"or", TokenKind::KwOr},         {"not", TokenKind::KwNot},
                  {"true", TokenKind::KwTrue},     {"false", TokenKind::KwFalse}};
  for (const auto &kw : keywords)
    if (tok.text == kw.spelling)
      tok.kind = kw.kind;
  return tok;
}

/// integer := digit+ ; float := (digit+ '.' digit* | '.' digit+) exponent? | digit+ exponent
Token Lexer::lexNumber(size_t start, SourceLoc loc) {
  size_t end = pos_;
  bool isFloat = false;
  while (end < text_.size() && isDigit(text_[end]))
    ++end;
  if (end < text_.size() && text_[end] == '.') {
    isFloat = true;
    ++end;
    while (end < text_.size() && isDigit(text_[end]))
      ++end;
  }
  bool badExponent = false;
  if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
    size_t e = end + 1;
    if (e < text_.size() && (text_[e] == '+' || text_[e] == '-'))
      ++e;
    if (e < text_.size() && isDigit(text_[e])) {
      isFloat = true;
      while (e < text_.size() && isDigit(text_[e]))
        ++e;
      end = e;
    } else {
      badExponent = true;
      end = e;
    }
  }
  // A number glued to letters (`12ab`, `0x10`) is one bad token.
  size_t suffixStart = end;
  while (end < text_.size() && (isIdentChar(text_[end]) || text_[end] == '.'))
    ++end;
  advanceBytes(end - pos_);
  Token tok = make(isFloat ? TokenKind::Float : TokenKind::Integer, start, loc);

  if (badExponent) {
    diag_.error(loc, "exponent of " + quote(tok.text) + " has no digits");
    tok.kind = TokenKind::Error;
    return tok;
  }
  if (suffixStart != end) {
    diag_.error(loc, "invalid suffix " +
                         quote(text_.substr(suffixStart, end - suffixStart)) +
                         " on number " + quote(text_.substr(start, suffixStart - start)));
    tok.kind = TokenKind::Error;
    return tok;
  }
  if (!isFloat) {
    uint64_t value = 0;
    for (char d : tok.text) {
      uint64_t digit = uint64_t(d - '0');
      if (value > (uint64_t(INT64_MAX) - digit) / 10) {
        diag_.error(loc, "integer literal " + quote(tok.text) +
                             " is too large (the maximum is 9223372036854775807)");
        tok.kind = TokenKind::Error;
        return tok;
      }
      value = value * 10 + digit;
    }
    tok.intValue = int64_t(value);
    return tok;
  }
  // strtod needs a terminated string; very long spellings are still bounded
  // by the buffer, and the C locale is the default for the process.
  std::string spelling(tok.text);
  errno = 0;
  double value = std::strtod(spelling.c_str(), nullptr);
  if (errno == ERANGE && std::isinf(value)) {
    diag_.error(loc, "floating-point literal " + quote(tok.text) +
                         " is too large for a double");
    tok.kind = TokenKind::Error;
    return tok;
  }
  tok.floatValue = value;
  return tok;
}

/// Length of the valid UTF-8 sequence at `s` and its code point, 0 if invalid.
static size_t decodeUtf8(std::string_view s, size_t pos, uint32_t &cp) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[pos + k]); };
  unsigned char c = byte(0);
  size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (c >= 0xF5 || len == 0 || pos + len > s.size())
    return 0;
  cp = c & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    if ((byte(k) & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (byte(k) & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

Token Lexer::lexInvalid(size_t start, SourceLoc loc) {
  unsigned char c = static_cast<unsigned char>(peek());
  uint32_t cp = 0;
  size_t len = c >= 0x80 ? decodeUtf8(text_, pos_, cp) : 0;
  char hex[32];
  std::string message;
  if (c == 0) {
    message = "unexpected NUL byte in source";
  } else if (c < 0x80) {
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    message = c < 0x20 || c == 0x7F
                  ? std::string("unexpected control character ") + hex + " in source"
                  : std::string("unexpected character '") + char(c) + "'";
  } else if (len) {
    std::snprintf(hex, sizeof hex, "U+%04X", unsigned(cp));
    message = std::string("non-ASCII character ") + hex +
              " is only allowed in comments";
  } else {
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    message = std::string("invalid UTF-8 byte ") + hex + " in source";
  }
  advanceBytes(len ? len : 1);
  // Swallow the rest of a run of bad bytes: one message per run.
  while (!atEnd()) {
    unsigned char b = static_cast<unsigned char>(peek());
    bool bad = b >= 0x80 || b == 0x7F || (b < 0x20 && b != '\n' && b != '\t' &&
                                          b != '\r' && b != '\f' && b != '\v');
    if (!bad)
      break;
    advanceBytes(1);
  }
  diag_.error(loc, message);
  return make(TokenKind::Error, start, loc);
}

} // namespace attnc
