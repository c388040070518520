//===- ProcessGuards.h - Process-wide settings of the attnc program -*- C++ -*-===//
//
// What only a program (never a library) may set up: no signal may end a
// compile that could have reported an error instead (SIGXFSZ under
// `ulimit -f`), temporary files go away on SIGINT / SIGTERM, and LLVM's own
// out-of-memory and fatal-error paths, which would abort, print attnc's
// messages and exit with the codes of docs/tools.md §2, and LLVM code
// generation that never ends (CodegenDeadline.h).
//
//===----------------------------------------------------------------------===//
#pragma once

namespace attnc {

/// Call once at the start of main().
void installProcessGuards();

} // namespace attnc
