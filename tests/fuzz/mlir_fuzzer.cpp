//===- mlir_fuzzer.cpp - libFuzzer entry over attn IR parsing and verification ===//
//
// Parses arbitrary text as MLIR with the dialects attnc registers (attn, std,
// arith, math), runs the verifiers (the attn ops' shape, kind and region
// checks) and, on IR that verifies, the default attn pass pipeline, which
// must reject what it cannot handle with a diagnostic. Diagnostics are
// swallowed; only crashes, hangs and sanitizer reports are findings. Seeds
// come from tests/lit/Dialect and tests/lit/Transforms (see run_fuzzers.sh).
//
//===----------------------------------------------------------------------===//
#include "compiler/MLIRGen/MLIRGen.h"
#include "compiler/Pipeline/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <string>

// Nesting depth of the (uninstrumented) MLIR parser is bounded only by the
// stack; inputs this long cannot nest deep enough to exhaust it.
static constexpr size_t kMaxInput = 16384;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInput)
    return 0;
  static const mlir::DialectRegistry *registry = [] {
    auto *r = new mlir::DialectRegistry; // lives for the process
    attnc::registerAttncDialects(*r);
    return r;
  }();
  mlir::MLIRContext context(*registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });

  // A std::string keeps the NUL terminator the MLIR lexer looks for.
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString(text, &context);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  mlir::PassManager pm(&context);
  attnc::buildDefaultPipeline(pm);
  (void)pm.run(*module);
  return 0;
}
