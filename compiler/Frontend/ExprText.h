//===- ExprText.h - Expressions back to .attn source text ------*- C++ -*-===//
//
// A checked expression as the shortest `.attn` text that parses back to the
// same tree (parentheses only where the grouping needs them). MLIRGen
// records it on each custom region (attn.yield's `source`), so the header
// can state what a kernel computes from the IR alone.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"

#include <string>

namespace attnc {

/// The expression as .attn source text.
std::string exprText(const Expr &e);

/// A custom mask term as written in a `mask = a & b` conjunction: an
/// `and` / `or` term is parenthesized when there are other terms, since they
/// bind looser than `&` would suggest to a reader.
std::string maskTermText(const Expr &e, bool inConjunction);

} // namespace attnc
