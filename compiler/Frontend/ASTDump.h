//===- ASTDump.h - Stable text dumps of the frontend's data -------*- C++ -*-===//
//
// `--emit=ast` prints each kernel with every resolved field, its value, and
// either the location it was written at or `(default)`; expressions print as
// indented trees with their types and locations. The format is stable so
// FileCheck tests can rely on it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"

#include <ostream>
#include <string>

namespace attnc {

/// `@LINE:COL` (or `@<command line>:COL` for -D values).
std::string formatLoc(SourceLoc loc);

/// Prints an expression tree, one node per line, each indented by `indent`.
void dumpExpr(const Expr &expr, unsigned indent, std::ostream &os);

/// Prints one resolved kernel.
void dumpKernelSpec(const KernelSpec &spec, std::ostream &os);

/// Prints one kernel as parsed (used for kernels without a resolved spec).
void dumpKernelAST(const KernelAST &kernel, std::ostream &os);

/// Formats a double the way the dump and messages show it (shortest round trip).
std::string formatDouble(double value);

} // namespace attnc
