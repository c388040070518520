//===- EmitKernel.h - Artifacts from a file's kernels -*- C++ -*-===//
//
// The back end's entry point for the driver: build, schedule and compile every
// kernel of a file into one artifact (object, static or shared library,
// assembly, LLVM IR, lowered statement, Halide print, C header, or the
// standalone Halide runtime). All kernels share one LLVM module, which also
// holds the NAME_run wrappers and the runtime's metadata globals.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"
#include "compiler/HalideBackend/BackendError.h"

#include <string>
#include <vector>

namespace attnc::halide_backend {

enum class Artifact {
  Object,
  StaticLibrary,
  SharedLibrary,
  Assembly,
  LLVMIR,
  Stmt,
  HalideText,
  Header,
  RuntimeObject
};

/// Emits one artifact holding every kernel of `configs` to `path` ("-" =
/// stdout, text artifacts only). Throws BackendError (with a clear message) on
/// any failure, EnvironmentError for the machine's (TMPDIR, disk, C compiler),
/// std::bad_alloc when memory runs out; no Halide exception escapes.
void emitArtifact(const std::vector<AttentionConfig> &configs, const EmitOptions &options,
                  Artifact artifact, const std::string &path);

/// The first target of `--target` (TargetDispatch.h's parseTargets: `host`, a
/// Halide target string, `portable` or a list), adding no_runtime when asked;
/// throws CommandLineError with the accepted forms on error.
Halide::Target parseTarget(const std::string &target, bool withRuntime);

} // namespace attnc::halide_backend
