//===- Subprocess.h - Running the system's C compiler -----------*- C++ -*-===//
//
// attnc links shared libraries, and merges its prebuilt Halide runtime into
// kernel objects, with the host's C compiler ($CC, else `cc`).
// When that fails, the machine is at fault (no compiler, a wrong CC, a full
// disk under the linker), so every failure is an EnvironmentError that names
// the command and what to fix; the compiler's own messages are already on
// stderr, which the child shares.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace attnc {

/// Runs the C compiler ($CC split at blanks, as make does; else `cc`, searched
/// on PATH) with `args` appended and waits for it. `what` completes "while
/// trying to ..." in messages. Throws EnvironmentError on any failure.
void runCCompiler(const std::vector<std::string> &args, const std::string &what);

/// Whether runCCompiler would find its compiler: $CC's first word, else `cc`,
/// an executable file (searched on PATH without a slash).
bool hasCCompiler();

} // namespace attnc
