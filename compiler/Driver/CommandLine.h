//===- CommandLine.h - attnc's options, parsed once for every caller -*- C++ -*-===//
//
// The command line of docs/tools.md §2 as a library function, so `attnc`
// and the runtime's run-time compilation (which takes the same options as a
// string, e.g. "-D seq_q=128 --target=host") accept exactly the same forms
// with the same messages. Splitting an option string into words lives here
// too.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Driver/Compiler.h"

#include <string>
#include <vector>

namespace attnc {

struct CommandLine {
  CompileOptions compile;
  bool help = false;
  bool version = false;
};

/// Parses `args` (without the program name). False with a message (no
/// "attnc: error:" prefix) on a usage error.
bool parseCommandLine(const std::vector<std::string> &args, CommandLine &result,
                      std::string &error);

/// Splits an option string into words at blanks; single and double quotes
/// group words, a backslash escapes the next character. False with a
/// message on an unterminated quote.
bool splitOptionString(const std::string &text, std::vector<std::string> &words,
                       std::string &error);

/// The usage text of `attnc --help`.
const char *commandLineUsage();

} // namespace attnc
