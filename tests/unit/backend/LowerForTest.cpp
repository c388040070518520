//===- LowerForTest.cpp - Back-end inputs through the real path -----------===//
#include "tests/unit/backend/LowerForTest.h"

#include "compiler/Conversion/AttnToHalide/ConvertAttnToHalide.h"
#include "compiler/Frontend/Diagnostics.h"
#include "compiler/Frontend/Frontend.h"
#include "compiler/MLIRGen/MLIRGen.h"
#include "compiler/Pipeline/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <sstream>
#include <stdexcept>

namespace attnc::test {

using halide_backend::AttentionConfig;

static std::vector<AttentionConfig> lowerSpecs(const std::vector<KernelSpec> &specs) {
  mlir::MLIRContext context;
  mlir::DialectRegistry registry;
  registerAttncDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  std::string errors;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    errors += d.str() + "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlirGen(context, "test.attn", specs);
  if (!module)
    throw std::runtime_error("MLIRGen failed:\n" + errors);
  mlir::PassManager pm(&context);
  buildDefaultPipeline(pm);
  if (mlir::failed(pm.run(*module)))
    throw std::runtime_error("the pass pipeline failed:\n" + errors);
  std::vector<AttentionConfig> configs;
  if (mlir::failed(convertAttnToHalide(*module, configs)))
    throw std::runtime_error("convert-attn-to-halide failed:\n" + errors);
  return configs;
}

AttentionConfig lowerSpec(KernelSpec spec, const std::string &name) {
  spec.name = name;
  if (!spec.keyDim)
    spec.keyDim = spec.headDim;
  if (!spec.valueDim)
    spec.valueDim = spec.headDim;
  return lowerSpecs({spec}).at(0);
}

std::vector<AttentionConfig> lowerSource(const std::string &source) {
  std::ostringstream messages;
  DiagnosticEngine diag("test.attn", source, messages);
  std::optional<ModuleAST> ast = parseModule(diag);
  std::vector<KernelSpec> specs;
  if (ast)
    specs = analyzeModule(*ast, FrontendOptions{}, diag);
  if (!ast || diag.errorCount())
    throw std::runtime_error("invalid test source:\n" + messages.str());
  return lowerSpecs(specs);
}

} // namespace attnc::test
