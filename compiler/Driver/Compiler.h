//===- Compiler.h - The whole compile, from .attn text to artifacts -*- C++ -*-===//
//
// The library behind `attnc`: runs the pipeline stage by stage and stops at
// the one asked for (--emit=...) or writes the artifacts -o names. The
// runtime's run-time compilation calls the same entry point.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/Frontend.h"
#include "compiler/HalideBackend/AttentionConfig.h"

#include <ostream>
#include <string>
#include <vector>

namespace attnc {

/// The stages `--emit=` can print, in pipeline order.
enum class EmitStage { None, Tokens, AST, MLIR, MLIROpt, Halide, Stmt, LLVM, Asm, Header, Runtime };

/// Parses a `--emit=` value; returns false for an unknown stage.
bool parseEmitStage(const std::string &name, EmitStage &stage);

struct CompileOptions {
  std::string inputFile;   // for messages; `source` holds the text
  std::string outputFile;  // -o; empty prints the stage to stdout
  EmitStage emit = EmitStage::None;
  FrontendOptions frontend;
  halide_backend::EmitOptions backend;
  bool writeHeader = true; // -o also writes NAME.h beside the artifact
  bool timeStages = false;  // --time-stages: print each stage's CPU and wall time
};

/// Exit codes of attnc (docs/tools.md §2). 2 covers the command line and
/// the environment it runs in (outputs, TMPDIR, C compiler, memory).
enum ExitCode {
  Success = 0,
  InputError = 1,
  UsageError = 2,
  EnvironmentFailure = 2,
  InternalError = 3
};

/// Compiles `source` as options say; diagnostics go to `errs`.
ExitCode compileSource(const std::string &source, const CompileOptions &options,
                       std::ostream &errs);

/// The files a compile with `options` writes (-o FILE, and the header beside
/// an artifact), so a driver can refuse to overwrite its input.
std::vector<std::string> outputFiles(const CompileOptions &options);

/// The compiler's version string, part of the runtime cache key.
const char *compilerVersion();

} // namespace attnc
