//===- Compiler.cpp - The whole compile, from .attn text to artifacts -----===//
//
// Frontend -> MLIRGen -> pass pipeline -> convert-attn-to-halide -> Halide
// back end, stopping at the requested stage. A `.mlir` input (IR as
// --emit=mlir or --emit=mlir-opt printed it) enters after MLIRGen: the IR
// states the whole kernel, so both paths produce the same artifacts. Every
// failure becomes a message and an exit code: input errors are 1; a bad
// output path, an output that cannot be written, a missing TMPDIR or C
// compiler and running out of memory are errors of the command line or
// environment (2); MLIR or Halide failures on valid input are internal
// errors (3) with a request to report.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/Compiler.h"
#include "compiler/Driver/SharedRuntime.h"

#include "compiler/Conversion/AttnToHalide/ConvertAttnToHalide.h"
#include "compiler/Frontend/Diagnostics.h"
#include "compiler/Frontend/Limits.h"
#include "compiler/HalideBackend/EmitKernel.h"
#include "compiler/MLIRGen/MLIRGen.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Support/EnvironmentError.h"
#include "compiler/Support/OutputFiles.h"
#include "compiler/Support/StageTimes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <new>
#include <optional>
#include <sstream>

namespace attnc {

bool parseEmitStage(const std::string &name, EmitStage &stage) {
  const std::pair<const char *, EmitStage> table[] = {
      {"tokens", EmitStage::Tokens}, {"ast", EmitStage::AST},
      {"mlir", EmitStage::MLIR},     {"mlir-opt", EmitStage::MLIROpt},
      {"halide", EmitStage::Halide}, {"stmt", EmitStage::Stmt},
      {"llvm", EmitStage::LLVM},     {"asm", EmitStage::Asm},
      {"header", EmitStage::Header}, {"runtime", EmitStage::Runtime}};
  for (const auto &row : table) {
    if (name == row.first) {
      stage = row.second;
      return true;
    }
  }
  return false;
}

const char *compilerVersion() { return "attnc 0.1.0 (LLVM 14, MLIR 14, Halide 14)"; }

namespace {

using halide_backend::Artifact;

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// `dir/kernel.o` -> `dir/kernel.h`.
std::string headerPathFor(const std::string &path) {
  size_t dot = path.find_last_of('.');
  size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + ".h";
  return path.substr(0, dot) + ".h";
}

/// Writes text to -o FILE or stdout, checked through the close
/// (compiler/Support); a lost output is exit 2, never a silent success.
bool writeText(const std::string &text, const std::string &path, std::ostream &errs) {
  try {
    if (path.empty() || path == "-")
      writeStdout(text);
    else
      writeFile(path, text);
  } catch (const EnvironmentError &e) {
    errs << "attnc: error: " << e.what() << "\n";
    return false;
  }
  return true;
}

class Compilation {
public:
  Compilation(const std::string &source, const CompileOptions &options, std::ostream &errs)
      : source(source), options(options), errs(errs), diag(options.inputFile, source, errs),
        backend(options.backend) {}

  ExitCode run() {
    if (source.size() > limits::kMaxSourceBytes) {
      // The tool refuses such files before reading them; this guards the
      // runtime's attn_library_compile, which hands over text.
      errs << "attnc: error: '" << options.inputFile << "' is " << source.size()
           << " bytes, above the limit of " << limits::kMaxSourceBytes
           << " bytes (100 MiB) for a source file\n";
      return InputError;
    }
    if (options.emit == EmitStage::Runtime)
      return emit(Artifact::RuntimeObject, {});
    if (endsWith(options.inputFile, ".mlir"))
      return compileIR();
    if (options.emit == EmitStage::Tokens) {
      std::ostringstream os;
      bool ok = dumpTokens(diag, os);
      if (!writeText(os.str(), options.outputFile, errs))
        return UsageError;
      return ok ? Success : InputError;
    }
    std::optional<ModuleAST> ast;
    std::vector<KernelSpec> specs;
    {
      StageTimer timer("frontend");
      ast = parseModule(diag);
      if (!ast)
        return InputError;
      specs = analyzeModule(*ast, options.frontend, diag);
    }
    if (diag.errorCount())
      return InputError;
    if (options.emit == EmitStage::AST) {
      std::ostringstream os;
      dumpAST(*ast, specs, os);
      return writeText(os.str(), options.outputFile, errs) ? Success : UsageError;
    }
    return lower([&](mlir::MLIRContext &context) {
      return mlirGen(context, options.inputFile, specs);
    });
  }

  /// A `.mlir` input: the stages before the IR do not apply.
  ExitCode compileIR() {
    if (options.emit == EmitStage::Tokens || options.emit == EmitStage::AST) {
      errs << "attnc: error: --emit=" << (options.emit == EmitStage::Tokens ? "tokens" : "ast")
           << " needs a .attn input; '" << options.inputFile << "' is attn IR\n";
      return UsageError;
    }
    if (!options.frontend.kernels.empty() || !options.frontend.overrides.empty()) {
      errs << "attnc: error: --kernel and -D apply to .attn inputs; '" << options.inputFile
           << "' is attn IR\n";
      return UsageError;
    }
    fromIR = true;
    return lower([&](mlir::MLIRContext &context) {
      llvm::SourceMgr sourceMgr;
      sourceMgr.AddNewSourceBuffer(
          llvm::MemoryBuffer::getMemBufferCopy(diag.source(), options.inputFile), llvm::SMLoc());
      return mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    });
  }

private:
  const std::string &source;
  const CompileOptions &options;
  std::ostream &errs;
  DiagnosticEngine diag;
  halide_backend::EmitOptions backend; // options.backend plus the shared runtime found
  /// The input is IR: passes and conversion reject it with located errors
  /// (input errors), where on generated IR they would be attnc's bugs.
  bool fromIR = false;

  /// MLIR diagnostics in the same `FILE:LINE:COL: error: ...` form as the
  /// frontend's.
  void printDiagnostic(mlir::Diagnostic &d) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (auto loc = d.getLocation().dyn_cast<mlir::FileLineColLoc>())
      os << loc.getFilename().getValue() << ":" << loc.getLine() << ":" << loc.getColumn() << ": ";
    else
      os << options.inputFile << ": ";
    const char *severity = d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                           : d.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                                                                                  : "note";
    os << severity << ": " << d.str() << "\n";
    errs << os.str();
  }

  /// From the module `makeModule` builds (null after reporting an error) on.
  ExitCode lower(
      const std::function<mlir::OwningOpRef<mlir::ModuleOp>(mlir::MLIRContext &)> &makeModule) {
    std::optional<StageTimer> timer;
    timer.emplace("MLIR generation");
    mlir::MLIRContext context;
    mlir::DialectRegistry registry;
    registerAttncDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
      printDiagnostic(d);
      return mlir::success();
    });

    mlir::OwningOpRef<mlir::ModuleOp> module = makeModule(context);
    if (!module)
      return InputError;
    if (options.emit == EmitStage::MLIR)
      return printModule(*module);

    timer.emplace("attn passes");
    mlir::PassManager pm(&context);
    buildDefaultPipeline(pm);
    if (mlir::failed(pm.run(*module))) {
      if (fromIR)
        return InputError;
      errs << "attnc: internal error: the attn pass pipeline failed; please report this "
              "with the input file\n";
      return InternalError;
    }
    if (options.emit == EmitStage::MLIROpt)
      return printModule(*module);

    timer.emplace("attn to Halide");
    std::vector<halide_backend::AttentionConfig> configs;
    if (mlir::failed(convertAttnToHalide(*module, configs)))
      return fromIR ? InputError : InternalError;
    timer.reset();
    return emitBackend(configs);
  }

  ExitCode printModule(mlir::ModuleOp module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    os << "\n";
    return writeText(os.str(), options.outputFile, errs) ? Success : UsageError;
  }

  ExitCode emitBackend(const std::vector<halide_backend::AttentionConfig> &configs) {
    switch (options.emit) {
    case EmitStage::Halide: return emit(Artifact::HalideText, configs);
    case EmitStage::Stmt: return emit(Artifact::Stmt, configs);
    case EmitStage::LLVM: return emit(Artifact::LLVMIR, configs);
    case EmitStage::Asm: return emit(Artifact::Assembly, configs);
    case EmitStage::Header: return emit(Artifact::Header, configs);
    default: break;
    }
    const std::string &out = options.outputFile;
    Artifact artifact = endsWith(out, ".a")    ? Artifact::StaticLibrary
                        : endsWith(out, ".so") ? Artifact::SharedLibrary
                                               : Artifact::Object;
    if (artifact == Artifact::SharedLibrary && options.backend.withRuntime &&
        backend.sharedRuntime.empty()) {
      // One Halide runtime per process (docs/tools.md §4): link the shared
      // runtime library rather than embedding a private copy.
      std::string searched;
      backend.sharedRuntime = findSharedHalideRuntime(searched);
      if (backend.sharedRuntime.empty())
        errs << "attnc: warning: the shared Halide runtime library was not found (looked at "
             << searched << "); '" << out
             << "' embeds its own runtime and will not share a thread pool with other kernel "
                "libraries\n";
    }
    if (artifact != Artifact::SharedLibrary && options.backend.withRuntime &&
        backend.runtimeObject.empty()) {
      // The runtime built with attnc, merged in rather than compiled again;
      // without it (a partial build) the runtime is compiled, as before.
      std::string searched;
      backend.runtimeObject = findHalideRuntimeObject(searched);
    }
    ExitCode code = emit(artifact, configs);
    if (code != Success || !options.writeHeader)
      return code;
    return emitTo(Artifact::Header, configs, headerPathFor(out));
  }

  ExitCode emit(Artifact artifact, const std::vector<halide_backend::AttentionConfig> &configs) {
    std::string path = options.outputFile.empty() ? "-" : options.outputFile;
    return emitTo(artifact, configs, path);
  }

  ExitCode emitTo(Artifact artifact, const std::vector<halide_backend::AttentionConfig> &configs,
                  const std::string &path) {
    // A testing hook (docs/robustness.md): the path of a compiler crash, end
    // to end, without a kernel that crashes Halide.
    if (const char *crash = std::getenv("ATTNC_DEBUG_CRASH"); crash && *crash)
      std::raise(SIGSEGV);
    try {
      halide_backend::emitArtifact(configs, backend, artifact, path);
    } catch (const halide_backend::CommandLineError &e) {
      errs << "attnc: error: " << e.what() << "\n";
      return UsageError;
    } catch (const EnvironmentError &e) {
      errs << "attnc: error: " << e.what() << "\n";
      return EnvironmentFailure;
    } catch (const std::bad_alloc &) {
      throw; // reported once, by compileSource
    } catch (const halide_backend::BackendError &e) {
      // Valid input the back end failed on (a Halide compile error, an
      // invalid LLVM module, a failed link) is a bug of attnc.
      std::string message = e.what();
      const std::string prefix = "internal error: ";
      if (message.compare(0, prefix.size(), prefix) == 0)
        message = message.substr(prefix.size());
      while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
        message.pop_back();
      errs << "attnc: internal error: " << message
           << "\nPlease report this with the input file and command line.\n";
      return InternalError;
    } catch (const std::exception &e) {
      errs << "attnc: internal error: " << e.what()
           << "\nPlease report this with the input file and command line.\n";
      return InternalError;
    }
    return Success;
  }
};

} // namespace

std::vector<std::string> outputFiles(const CompileOptions &options) {
  std::vector<std::string> files;
  const std::string &out = options.outputFile;
  if (out.empty() || out == "-")
    return files;
  files.push_back(out);
  if (options.emit == EmitStage::None && options.writeHeader)
    files.push_back(headerPathFor(out));
  return files;
}

ExitCode compileSource(const std::string &source, const CompileOptions &options,
                       std::ostream &errs) {
  std::optional<StageTimes> times;
  if (options.timeStages)
    times.emplace();
  try {
    ExitCode code = Compilation(source, options, errs).run();
    if (times)
      errs << times->report();
    return code;
  } catch (const std::bad_alloc &) {
    // Not a bug and not the input's fault: the memory limit of the machine
    // or of `ulimit -v` (docs/tools.md §2: environment, exit 2).
    errs << "attnc: error: " << outOfMemoryMessage() << "\n";
    return EnvironmentFailure;
  } catch (const EnvironmentError &e) {
    errs << "attnc: error: " << e.what() << "\n";
    return EnvironmentFailure;
  }
}

} // namespace attnc
