//===- attnc.cpp - The attention compiler's command line -------------------===//
//
// A thin driver: parses the command line of docs/tools.md §2 (with the
// parser the runtime's run-time compilation shares), reads the input file
// and hands both to the compiler library. Exit codes: 0 success, 1 errors in
// the input, 2 bad command line, 3 internal error.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/CommandLine.h"
#include "compiler/Driver/Compiler.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/stat.h>

using namespace attnc;

static int usageError(const std::string &message) {
  std::cerr << "attnc: error: " << message << "\n"
            << "Run 'attnc --help' for usage.\n";
  return UsageError;
}

int main(int argc, char **argv) {
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
  if (options.inputFile == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    source = ss.str();
    options.inputFile = "<stdin>";
  } else {
    // An ifstream opens a directory and reads nothing from it, which would
    // pass for an empty file ("no kernel in the file").
    struct stat st;
    if (stat(options.inputFile.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      std::cerr << "attnc: error: cannot read '" << options.inputFile << "': it is a directory\n";
      return InputError;
    }
    std::ifstream in(options.inputFile, std::ios::binary);
    if (!in) {
      std::cerr << "attnc: error: cannot open '" << options.inputFile << "'\n";
      return InputError;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    source = ss.str();
  }
  try {
    return compileSource(source, options, std::cerr);
  } catch (const std::exception &e) {
    std::cerr << "attnc: internal error: " << e.what()
              << "\nPlease report this with the input file and command line.\n";
    return InternalError;
  }
}
