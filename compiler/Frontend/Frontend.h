//===- Frontend.h - The frontend's entry points for the driver ----*- C++ -*-===//
//
// What the attnc driver calls: dump tokens, parse a module, analyze it into
// KernelSpecs (with --kernel selection and -D overrides), dump the AST. Every
// function reports through the DiagnosticEngine, which owns the input text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"
#include "compiler/Frontend/Diagnostics.h"

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace attnc {

struct FrontendOptions {
  std::vector<std::string> kernels; // --kernel=NAME (repeatable); empty = every kernel
  std::vector<std::pair<std::string, std::string>> overrides; // -D FIELD=VALUE
};

/// --emit=tokens: one line per token, `KIND 'TEXT' @LINE:COL`. False on lexical errors.
bool dumpTokens(DiagnosticEngine &diag, std::ostream &os);

/// Parses diag.source(). Syntax errors are reported and mark their kernels
/// (KernelAST::syntaxErrors); the caller checks diag.errorCount().
std::optional<ModuleAST> parseModule(DiagnosticEngine &diag);

/// --emit=ast: each selected kernel fully resolved; others as parsed.
void dumpAST(const ModuleAST &module, const std::vector<KernelSpec> &specs, std::ostream &os);

/// Checks the module (duplicate kernel names), selects kernels, applies the
/// overrides and resolves each selected kernel. Returns the kernels that
/// resolved cleanly, in file order; the caller checks diag.errorCount().
std::vector<KernelSpec> analyzeModule(const ModuleAST &module, const FrontendOptions &options,
                                      DiagnosticEngine &diag);

} // namespace attnc
