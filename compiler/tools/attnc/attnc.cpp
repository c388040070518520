//===- attnc.cpp - The attention compiler's command line -------------------===//
//
// A thin driver: parses the command line of TOOLS.md section 2, reads the
// input file and hands both to the compiler library. Exit codes: 0 success,
// 1 errors in the input, 2 bad command line, 3 internal error.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/Compiler.h"

#include <Halide.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace attnc;

static const char *kUsage = R"(usage: attnc FILE.attn [options]

  -o FILE               write FILE: kernel.o (object + kernel.h), libk.a (static
                        library + libk.h), libk.so (shared library + libk.h), or
                        the printed stage with --emit
  --emit=STAGE          print one stage: tokens, ast, mlir, mlir-opt, halide,
                        stmt, llvm, asm, header; `--emit=runtime -o rt.o` writes
                        the Halide runtime alone
  --kernel=NAME         only this kernel (repeatable); default every kernel
  --target=T            Halide target string (host, x86-64-linux-avx2, arm-64-linux, ...)
  --no-runtime          leave the Halide runtime out of the object
  --schedule=S          tuned (default), simple, or auto (Halide autoscheduler)
  -D FIELD=VALUE        override a field of every selected kernel
  --version, --help
)";

static int usageError(const std::string &message) {
  std::cerr << "attnc: error: " << message << "\n"
            << "Run 'attnc --help' for usage.\n";
  return UsageError;
}

/// Accepts `--name=value` and `--name value`; advances `i` past a value.
static bool optionValue(int argc, char **argv, int &i, const char *name, std::string &value) {
  size_t n = std::strlen(name);
  const char *arg = argv[i];
  if (std::strncmp(arg, name, n) != 0)
    return false;
  if (arg[n] == '=') {
    value = arg + n + 1;
    return true;
  }
  if (arg[n] == '\0' && i + 1 < argc) {
    value = argv[++i];
    return true;
  }
  return false;
}

static bool parseSchedule(const std::string &name, halide_backend::SchedulePolicy &policy) {
  using halide_backend::SchedulePolicy;
  const std::pair<const char *, SchedulePolicy> table[] = {
      {"tuned", SchedulePolicy::Tuned}, {"simple", SchedulePolicy::Simple}, {"auto", SchedulePolicy::Auto}};
  for (const auto &row : table) {
    if (name == row.first) {
      policy = row.second;
      return true;
    }
  }
  return false;
}

int main(int argc, char **argv) {
  CompileOptions options;
  std::string value;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return Success;
    }
    if (arg == "--version") {
      std::cout << compilerVersion() << "\n";
      return Success;
    }
    if (arg == "--no-runtime") {
      options.backend.withRuntime = false;
    } else if (arg == "-o") {
      if (i + 1 >= argc)
        return usageError("-o needs a file name");
      options.outputFile = argv[++i];
    } else if (optionValue(argc, argv, i, "--emit", value)) {
      if (!parseEmitStage(value, options.emit))
        return usageError("unknown stage '" + value +
                          "' for --emit; expected tokens, ast, mlir, mlir-opt, halide, stmt, "
                          "llvm, asm, header or runtime");
    } else if (optionValue(argc, argv, i, "--kernel", value)) {
      options.frontend.kernels.push_back(value);
    } else if (optionValue(argc, argv, i, "--target", value)) {
      options.backend.target = value;
    } else if (optionValue(argc, argv, i, "--schedule", value)) {
      if (!parseSchedule(value, options.backend.schedule))
        return usageError("unknown schedule '" + value + "'; expected tuned, simple or auto");
    } else if (arg.rfind("-D", 0) == 0) {
      std::string def = arg.size() > 2 ? arg.substr(2) : (i + 1 < argc ? argv[++i] : "");
      size_t eq = def.find('=');
      if (eq == std::string::npos || eq == 0)
        return usageError("-D expects FIELD=VALUE, got '" + def + "'");
      options.frontend.overrides.emplace_back(def.substr(0, eq), def.substr(eq + 1));
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return usageError("unknown option '" + arg + "'");
    } else if (options.inputFile.empty()) {
      options.inputFile = arg;
    } else {
      return usageError("more than one input file ('" + options.inputFile + "' and '" + arg + "')");
    }
  }

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
