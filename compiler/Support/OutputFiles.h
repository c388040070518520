//===- OutputFiles.h - Writes that fail loudly ------------------*- C++ -*-===//
//
// Every byte attnc writes goes through these: the data is written, flushed
// and closed, and each step is checked, so a full disk, /dev/full, a file
// size limit or a closed pipe is an error with a message instead of a
// successful exit with the output lost.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace attnc {

/// Writes `data` to `path` (created or truncated). Throws EnvironmentError
/// "cannot write 'PATH': REASON" on any failure, including at close.
void writeFile(const std::string &path, const std::string &data);

/// Writes `data` to standard output and flushes it. Throws EnvironmentError
/// "cannot write to standard output: REASON".
void writeStdout(const std::string &data);

/// Flushes standard output (C and C++ streams); false with `error` set when
/// anything written so far was lost. For the end of a program.
bool flushStdout(std::string &error);

} // namespace attnc
