//===- CommandLine.cpp - attnc's options, parsed once for every caller ----===//
//
// Accepts `--name=value` and `--name value`, `-DFIELD=V` and `-D FIELD=V`.
// Checks the form of each option, Halide target strings, and that a shared
// library is asked for the host only; what a kernel name or a field value
// means is the frontend's business, reported with its own diagnostics.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/CommandLine.h"
#include "compiler/HalideBackend/EmitKernel.h"
#include "compiler/HalideBackend/TargetDispatch.h"

#include <Halide.h>

#include <cstring>

namespace attnc {

const char *commandLineUsage() {
  return R"(usage: attnc FILE.attn [options]

  -o FILE               write FILE: kernel.o (object + kernel.h), libk.a (static
                        library + libk.h), libk.so (shared library + libk.h for
                        the host only, linked to the shared Halide runtime
                        libattnc_halide_runtime so loaded libraries share one
                        thread pool), or the printed stage with --emit
  --emit=STAGE          print one stage: tokens, ast, mlir, mlir-opt, halide,
                        stmt, llvm, asm, header; `--emit=runtime -o rt.o` writes
                        the Halide runtime alone
  --kernel=NAME         only this kernel (repeatable); default every kernel
  --target=T            Halide target string (host, x86-64-linux-avx2, arm-64-linux, ...),
                        portable, or a comma-separated list: one variant per
                        target, picked at run time (docs/targets.md)
  --no-runtime          leave the Halide runtime out (link rt.o from
                        --emit=runtime, or libattnc_halide_runtime, once per app)
  --schedule=S          tuned (default), simple, or auto (Halide autoscheduler)
  --bf16-products, --no-bf16-products
                        bf16 kernels: form Q.K^T and P.V products with AVX-512
                        BF16's vdpbf16ps where the target has it, or not; by
                        default yes, except for the host target on an Intel core
                        (half the FLOP rate of f32 FMAs there)
  -D FIELD=VALUE        override a field of every selected kernel
  --time-stages         print the CPU and wall seconds of each compile stage
                        (frontend, MLIR, Halide, LLVM, link) to stderr
  --version, --help
)";
}

namespace {

bool parseSchedule(const std::string &name, halide_backend::SchedulePolicy &policy) {
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

/// Accepts `--name=value` and `--name value`; advances `i` past a value.
bool optionValue(const std::vector<std::string> &args, size_t &i, const char *name,
                 std::string &value) {
  size_t n = std::strlen(name);
  const std::string &arg = args[i];
  if (arg.compare(0, n, name) != 0)
    return false;
  if (arg.size() > n && arg[n] == '=') {
    value = arg.substr(n + 1);
    return true;
  }
  if (arg.size() == n && i + 1 < args.size()) {
    value = args[++i];
    return true;
  }
  return false;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// `-o x.so` is linked by the host's C compiler, so it cannot be built for
/// another architecture or OS; objects and static libraries can.
bool checkSharedLibraryTarget(const CompileOptions &options, std::string &error) {
  const std::string &target = options.backend.target;
  if (options.emit != EmitStage::None || !endsWith(options.outputFile, ".so") ||
      target.empty() || target == "host")
    return true;
  Halide::Target host = Halide::get_host_target();
  Halide::Target wanted = halide_backend::parseTarget(target, true); // checked when parsed
  if (wanted.arch == host.arch && wanted.bits == host.bits && wanted.os == host.os)
    return true;
  error = "shared libraries are linked for the host target only; use -o FILE.o or -o FILE.a "
          "with --target=" + target;
  return false;
}

} // namespace

bool parseCommandLine(const std::vector<std::string> &args, CommandLine &result,
                      std::string &error) {
  CompileOptions &options = result.compile;
  std::string value;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "--help" || arg == "-h") {
      result.help = true;
    } else if (arg == "--version") {
      result.version = true;
    } else if (arg == "--no-runtime") {
      options.backend.withRuntime = false;
    } else if (arg == "--time-stages") {
      options.timeStages = true;
    } else if (arg == "--bf16-products") {
      options.backend.bf16Products = true;
    } else if (arg == "--no-bf16-products") {
      options.backend.bf16Products = false;
    } else if (arg == "-o") {
      if (i + 1 >= args.size()) {
        error = "-o needs a file name";
        return false;
      }
      options.outputFile = args[++i];
    } else if (optionValue(args, i, "--emit", value)) {
      if (!parseEmitStage(value, options.emit)) {
        error = "unknown stage '" + value +
                "' for --emit; expected tokens, ast, mlir, mlir-opt, halide, stmt, "
                "llvm, asm, header or runtime";
        return false;
      }
    } else if (optionValue(args, i, "--kernel", value)) {
      options.frontend.kernels.push_back(value);
    } else if (optionValue(args, i, "--target", value)) {
      try {
        halide_backend::parseTargets(value, true);
      } catch (const halide_backend::BackendError &e) {
        error = e.what();
        return false;
      }
      options.backend.target = value;
    } else if (optionValue(args, i, "--schedule", value)) {
      if (!parseSchedule(value, options.backend.schedule)) {
        error = "unknown schedule '" + value + "'; expected tuned, simple or auto";
        return false;
      }
    } else if (arg.rfind("-D", 0) == 0) {
      std::string def = arg.size() > 2 ? arg.substr(2) : (i + 1 < args.size() ? args[++i] : "");
      size_t eq = def.find('=');
      if (eq == std::string::npos || eq == 0) {
        error = "-D expects FIELD=VALUE, got '" + def + "'";
        return false;
      }
      options.frontend.overrides.emplace_back(def.substr(0, eq), def.substr(eq + 1));
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      error = "unknown option '" + arg + "'";
      return false;
    } else if (options.inputFile.empty()) {
      options.inputFile = arg;
    } else {
      error = "more than one input file ('" + options.inputFile + "' and '" + arg + "')";
      return false;
    }
  }
  return checkSharedLibraryTarget(options, error);
}

bool splitOptionString(const std::string &text, std::vector<std::string> &words,
                       std::string &error) {
  words.clear();
  std::string word;
  bool inWord = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        word += c;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (inWord)
        words.push_back(word);
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
    } else {
      word += c;
    }
  }
  if (quote) {
    error = std::string("unterminated ") + (quote == '"' ? "double" : "single") +
            " quote in the options '" + text + "'";
    return false;
  }
  if (inWord)
    words.push_back(word);
  return true;
}

} // namespace attnc
