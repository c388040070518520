//===- TempFiles.h - Temporary files that never outlive the compile -*- C++ -*-===//
//
// Every temporary file of a compile (the object linked into a .so or .a, the
// lowered statement) is a TempFile: created in $TMPDIR, removed by its
// destructor on normal and exceptional exits, and listed in a fixed table
// that a signal handler can walk without allocating, so SIGINT / SIGTERM /
// SIGHUP remove them too before the signal takes its default effect.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace attnc {

/// A new empty file `$TMPDIR/attnc-XXXXXX<suffix>` (TMPDIR unset or empty:
/// /tmp), removed when the object dies. Throws EnvironmentError when it
/// cannot be created, naming the folder and TMPDIR.
class TempFile {
public:
  explicit TempFile(const std::string &suffix);
  ~TempFile();
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;
  const std::string &path() const { return path_; }

private:
  std::string path_;
  int slot_ = -1; // entry in the signal-time removal table
};

/// Removes every live TempFile now. Async-signal-safe (only unlink), for
/// signal handlers and fatal-error handlers that end the process.
void removeTempFilesNow() noexcept;

/// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT that remove the
/// temporary files and then re-raise the signal with its default action.
/// Signals the process was started with ignored stay ignored (as with
/// background jobs of a shell). For programs only; a library must not call it.
void removeTempFilesOnSignals();

} // namespace attnc
