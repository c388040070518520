//===- Sema.h - From parsed kernels to checked KernelSpecs --------*- C++ -*-===//
//
// Resolves the raw fields of a KernelAST into a KernelSpec (docs/language.md
// §3-§5): every default applied, every accepted form recognised, every
// constraint checked with a located error that lists the accepted forms.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"
#include "compiler/Frontend/Diagnostics.h"

#include <optional>
#include <string>
#include <vector>

namespace attnc {

/// Every field of docs/language.md §4, in resolution order.
const std::vector<std::string> &knownFieldNames();

/// True for C's keywords (through C11) and bool/true/false: names that
/// cannot become C identifiers in the generated header.
bool isCKeyword(const std::string &name);

/// The accepted forms of `field`, as messages list them ("bhsd, bshd").
const char *acceptedForms(const std::string &field);

/// Why `dropout` is refused (as a field and as -D dropout=...).
const char *dropoutMessage();

/// Resolves one kernel. Each field in `overrides` replaces the kernel's own
/// field of that name (-D on the command line). Returns nullopt after errors.
std::optional<KernelSpec> analyzeKernel(const KernelAST &kernel,
                                        const std::vector<const FieldAST *> &overrides,
                                        DiagnosticEngine &diag);

} // namespace attnc
