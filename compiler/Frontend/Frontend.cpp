//===- Frontend.cpp - The frontend's entry points for the driver ----------===//
//
// Glue between the driver and the lexer, parser, Sema and dumps: kernel
// selection, module-level checks (unique C-identifier kernel names) and the
// `-D FIELD=VALUE` overrides, which are parsed as fields from a buffer named
// `<command line>` so their errors are located like any other.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Frontend.h"

#include "compiler/Frontend/ASTDump.h"
#include "compiler/Frontend/Lexer.h"
#include "compiler/Frontend/Parser.h"
#include "compiler/Frontend/Sema.h"
#include "compiler/Frontend/Suggest.h"

#include <algorithm>
#include <map>

namespace attnc {

bool dumpTokens(DiagnosticEngine &diag, std::ostream &os) {
  unsigned errorsBefore = diag.errorCount();
  Lexer lexer(diag);
  while (!diag.tooManyErrors()) {
    Token tok = lexer.next();
    os << tokenKindName(tok.kind);
    if (!tok.is(TokenKind::Newline) && !tok.is(TokenKind::Eof) && !tok.is(TokenKind::Error))
      os << " " << quote(tok.text);
    os << " " << formatLoc(tok.loc) << "\n";
    if (tok.is(TokenKind::Eof))
      break;
  }
  return diag.errorCount() == errorsBefore;
}

std::optional<ModuleAST> parseModule(DiagnosticEngine &diag) {
  // Syntax errors do not end the run: the kernels they touched are marked
  // (KernelAST::syntaxErrors) and analyzeModule still checks the others, so
  // one run reports every independent error (docs/language.md §8).
  Parser parser(diag);
  return parser.parseModule();
}

void dumpAST(const ModuleAST &module, const std::vector<KernelSpec> &specs, std::ostream &os) {
  os << "module " << module.fileName << "\n";
  for (const KernelAST &kernel : module.kernels) {
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const KernelSpec &s) { return s.name == kernel.name; });
    if (spec != specs.end())
      dumpKernelSpec(*spec, os);
    else
      dumpKernelAST(kernel, os);
  }
}

namespace {

/// Kernel names become C symbols (NAME, NAME_run, NAME_argv, ...).
void checkKernelNames(const ModuleAST &module, DiagnosticEngine &diag) {
  std::map<std::string, SourceLoc> seen;
  for (const KernelAST &kernel : module.kernels) {
    if (kernel.name.empty())
      continue; // a missing name, already reported by the parser
    if (isCKeyword(kernel.name) || kernel.name == "main")
      diag.error(kernel.loc, "kernel name " + quote(kernel.name) +
                                 " is reserved in C and cannot name a kernel");
    else if (kernel.name.rfind("halide_", 0) == 0 || kernel.name.rfind("attn_", 0) == 0 ||
             kernel.name.rfind("__", 0) == 0 ||
             (kernel.name.size() > 1 && kernel.name[0] == '_' && kernel.name[1] >= 'A' &&
              kernel.name[1] <= 'Z'))
      diag.error(kernel.loc, "kernel name " + quote(kernel.name) +
                                 " uses a reserved prefix ('__', '_' and a capital, "
                                 "'halide_', 'attn_')");
    auto [it, inserted] = seen.insert({kernel.name, kernel.loc});
    if (!inserted) {
      diag.error(kernel.loc, "redefinition of kernel " + quote(kernel.name));
      diag.note(it->second, "first defined here");
    }
  }
}

/// Parses each `-D FIELD=VALUE` into a FieldAST; reports bad ones.
std::vector<FieldAST> parseOverrides(const FrontendOptions &options, DiagnosticEngine &diag) {
  std::vector<FieldAST> fields;
  const std::vector<std::string> &known = knownFieldNames();
  std::map<std::string, bool> seen;
  for (const auto &[name, value] : options.overrides) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      diag.commandLineError(name == "dropout"
                                ? dropoutMessage()
                                : "unknown field " + quote(name) + " in -D " + name + "=" +
                                      value + didYouMean(name, known));
      continue;
    }
    if (!seen.insert({name, true}).second) {
      diag.commandLineError("field " + quote(name) + " is given twice with -D");
      continue;
    }
    uint32_t buffer = diag.addBuffer("<command line>", name + "=" + value);
    Parser parser(diag, buffer);
    if (std::optional<FieldAST> field = parser.parseOverride())
      fields.push_back(std::move(*field));
  }
  return fields;
}
} // namespace

std::vector<KernelSpec> analyzeModule(const ModuleAST &module, const FrontendOptions &options,
                                      DiagnosticEngine &diag) {
  std::vector<KernelSpec> specs;
  if (diag.tooManyErrors())
    return specs;
  // Errors already reported are the parser's; file-level checks that a
  // broken kernel could trigger (no kernel, unknown --kernel) stay quiet then.
  bool syntaxErrors = diag.errorCount() != 0;
  // Sema resolves fields in dependency order; errors print in source order.
  diag.beginGroup();
  checkKernelNames(module, diag);

  std::vector<std::string> names;
  for (const KernelAST &kernel : module.kernels)
    names.push_back(kernel.name);
  for (const std::string &wanted : options.kernels) {
    if (!syntaxErrors && std::find(names.begin(), names.end(), wanted) == names.end())
      diag.commandLineError("no kernel named " + quote(wanted) + " in " + diag.fileName() +
                            (names.empty() ? "" : " (kernels: " + joinList(names) + ")") +
                            didYouMean(wanted, names));
  }
  if (module.kernels.empty() && !syntaxErrors)
    diag.error(SourceLoc{}, "no kernel in the file; expected 'kernel NAME { ... }'");

  std::vector<FieldAST> overrides = parseOverrides(options, diag);
  std::vector<const FieldAST *> overridePtrs;
  for (const FieldAST &field : overrides)
    overridePtrs.push_back(&field);

  std::map<std::string, bool> done;
  for (const KernelAST &kernel : module.kernels) {
    bool selected = options.kernels.empty() ||
                    std::find(options.kernels.begin(), options.kernels.end(), kernel.name) !=
                        options.kernels.end();
    if (!selected || kernel.syntaxErrors || done.count(kernel.name) || diag.tooManyErrors())
      continue;
    done[kernel.name] = true;
    if (std::optional<KernelSpec> spec = analyzeKernel(kernel, overridePtrs, diag))
      specs.push_back(std::move(*spec));
  }
  diag.endGroup();
  return specs;
}

} // namespace attnc
