//===- frontend_fuzzer.cpp - libFuzzer entry over lexer, parser and Sema ---===//
//
// Feeds arbitrary bytes through the whole frontend as attnc does (tokens,
// parse, analyze with and without -D overrides, AST dump). Any crash, hang,
// sanitizer report or leak is a bug: bad input must only produce diagnostics.
// Built by run_fuzzers.sh with clang++-14 -fsanitize=fuzzer,address,undefined.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Frontend.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

using namespace attnc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source(reinterpret_cast<const char *>(data), size);
  std::ostringstream diagnostics, dump;
  {
    DiagnosticEngine diag("fuzz.attn", source, diagnostics);
    dumpTokens(diag, dump);
  }
  DiagnosticEngine diag("fuzz.attn", source, diagnostics);
  std::optional<ModuleAST> module = parseModule(diag);
  if (!module)
    return 0;
  FrontendOptions options;
  // The first line doubles as an override, so -D parsing is fuzzed too.
  std::string firstLine = source.substr(0, source.find('\n'));
  size_t eq = firstLine.find('=');
  if (eq != std::string::npos && eq > 0)
    options.overrides.push_back({firstLine.substr(0, eq), firstLine.substr(eq + 1)});
  std::vector<KernelSpec> specs = analyzeModule(*module, options, diag);
  dumpAST(*module, specs, dump);
  return 0;
}
