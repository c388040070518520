//===- attnc.cpp - The attention compiler's command line -------------------===//
//
// A thin driver: parses the command line of docs/tools.md §2 (with the
// parser the runtime's run-time compilation shares), reads the input file
// within the limits, refuses outputs that would overwrite it, and hands both
// to the compiler library. Exit codes: 0 success, 1 errors in the input, 2 bad
// command line or environment (outputs, TMPDIR, C compiler, memory), 3
// internal error. Nothing ends in a signal the compile caused itself.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/CommandLine.h"
#include "compiler/Driver/Compiler.h"
#include "compiler/Driver/InputFile.h"
#include "compiler/Driver/ProcessGuards.h"
#include "compiler/Support/EnvironmentError.h"
#include "compiler/Support/OutputFiles.h"

#include <iostream>
#include <new>

using namespace attnc;

static int usageError(const std::string &message) {
  std::cerr << "attnc: error: " << message << "\n"
            << "Run 'attnc --help' for usage.\n";
  return UsageError;
}

static int run(int argc, char **argv) {
  CommandLine cl;
  std::string error;
  if (!parseCommandLine(std::vector<std::string>(argv + 1, argv + argc), cl, error))
    return usageError(error);
  if (cl.help) {
    std::cout << commandLineUsage();
    return Success;
  }
  if (cl.version) {
    std::cout << compilerVersion() << "\n";
    return Success;
  }
  CompileOptions &options = cl.compile;

  if (options.emit == EmitStage::Runtime) {
    if (options.outputFile.empty())
      return usageError("--emit=runtime needs -o FILE");
    return compileSource("", options, std::cerr);
  }
  if (options.inputFile.empty())
    return usageError("no input file");
  if (options.emit == EmitStage::None && options.outputFile.empty())
    return usageError("nothing to do: give -o FILE or --emit=STAGE");

  std::string source;
  FileIdentity input;
  if (!readSourceFile(options.inputFile, source, input, error)) {
    std::cerr << "attnc: error: " << error << "\n";
    return InputError;
  }
  if (options.inputFile == "-")
    options.inputFile = "<stdin>";
  // As gcc does: `attnc kernel.h -o kernel.o` would replace the source with
  // the generated header.
  std::vector<std::string> outputs = outputFiles(options);
  if (outputs.size() == 2 && outputs[0] == outputs[1])
    return usageError("-o '" + outputs[0] + "' would be overwritten by the header written "
                      "beside it; name the artifact FILE.o, FILE.a or FILE.so");
  std::string clash = outputNamingInput(input, outputs);
  if (!clash.empty())
    return usageError("input file '" + options.inputFile + "' is the same as output file '" +
                      clash + "'");
  return compileSource(source, options, std::cerr);
}

int main(int argc, char **argv) {
  installProcessGuards();
  int code;
  try {
    code = run(argc, argv);
  } catch (const std::bad_alloc &) {
    std::cerr << "attnc: error: " << outOfMemoryMessage() << "\n";
    code = EnvironmentFailure;
  } catch (const std::exception &e) {
    std::cerr << "attnc: internal error: " << e.what()
              << "\nPlease report this with the input file and command line.\n";
    code = InternalError;
  }
  // Output printed with --emit, --help or --version must have arrived (a
  // failed write already reported itself).
  std::string error;
  if (code == Success && !flushStdout(error)) {
    std::cerr << "attnc: error: " << error << "\n";
    return EnvironmentFailure;
  }
  return code;
}
