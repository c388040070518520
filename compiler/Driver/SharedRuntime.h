//===- SharedRuntime.h - Where the shared Halide runtime library is -*- C++ -*-===//
//
// Shared kernel libraries (`attnc -o libk.so`, and the runtime's cache) are
// built without a Halide runtime of their own and linked against one shared
// runtime library shipped with attnc (libattnc_halide_runtime.so), so that
// every kernel library a process loads shares one runtime and thread pool.
// This finds that library relative to the code doing the compiling.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace attnc {

/// The path of the shared Halide runtime library: $ATTNC_HALIDE_RUNTIME when
/// set, else the library beside the module (attnc or libattnrt) that holds
/// this code, or in its ../lib folder. Empty when none exists; `searched`
/// lists where it looked, for messages.
std::string findSharedHalideRuntime(std::string &searched);

/// The Halide runtime object built with attnc for the host's baseline target
/// (`attnc --emit=runtime`, attnc_halide_runtime.o), in the same places as
/// the shared library. `attnc -o k.o` (and `.a`) merges it into the kernel
/// object instead of compiling the runtime again, half of a small kernel's
/// compile time. Empty when none exists.
std::string findHalideRuntimeObject(std::string &searched);

} // namespace attnc
