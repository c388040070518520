//===- Token.cpp - Names of token kinds -----------------------------------===//
//
// One table gives each token kind its dump name (FileCheck-stable, as in
// clang's -dump-tokens) and the spelling messages use.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Token.h"

namespace attnc {

namespace {
struct TokenInfo {
  TokenKind kind;
  const char *name;
  const char *spelling;
};

const TokenInfo kTokenTable[] = {
    {TokenKind::Eof, "eof", "end of file"},
    {TokenKind::Newline, "newline", "end of line"},
    {TokenKind::Error, "error", "invalid token"},
    {TokenKind::Identifier, "identifier", "identifier"},
    {TokenKind::Integer, "integer", "integer"},
    {TokenKind::Float, "float", "number"},
    {TokenKind::KwKernel, "kw_kernel", "'kernel'"},
    {TokenKind::KwAnd, "kw_and", "'and'"},
    {TokenKind::KwOr, "kw_or", "'or'"},
    {TokenKind::KwNot, "kw_not", "'not'"},
    {TokenKind::KwTrue, "kw_true", "'true'"},
    {TokenKind::KwFalse, "kw_false", "'false'"},
    {TokenKind::LBrace, "l_brace", "'{'"},
    {TokenKind::RBrace, "r_brace", "'}'"},
    {TokenKind::LParen, "l_paren", "'('"},
    {TokenKind::RParen, "r_paren", "')'"},
    {TokenKind::LBracket, "l_square", "'['"},
    {TokenKind::RBracket, "r_square", "']'"},
    {TokenKind::Comma, "comma", "','"},
    {TokenKind::Semicolon, "semi", "';'"},
    {TokenKind::Colon, "colon", "':'"},
    {TokenKind::Equal, "equal", "'='"},
    {TokenKind::Plus, "plus", "'+'"},
    {TokenKind::Minus, "minus", "'-'"},
    {TokenKind::Star, "star", "'*'"},
    {TokenKind::Slash, "slash", "'/'"},
    {TokenKind::Percent, "percent", "'%'"},
    {TokenKind::Amp, "amp", "'&'"},
    {TokenKind::Pipe, "pipe", "'|'"},
    {TokenKind::Less, "less", "'<'"},
    {TokenKind::LessEqual, "less_equal", "'<='"},
    {TokenKind::Greater, "greater", "'>'"},
    {TokenKind::GreaterEqual, "greater_equal", "'>='"},
    {TokenKind::EqualEqual, "equal_equal", "'=='"},
    {TokenKind::BangEqual, "bang_equal", "'!='"},
};

const TokenInfo &info(TokenKind kind) {
  for (const TokenInfo &row : kTokenTable)
    if (row.kind == kind)
      return row;
  return kTokenTable[0];
}
} // namespace

const char *tokenKindName(TokenKind kind) { return info(kind).name; }
const char *tokenKindSpelling(TokenKind kind) { return info(kind).spelling; }

} // namespace attnc
