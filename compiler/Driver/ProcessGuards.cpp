//===- ProcessGuards.cpp - Process-wide settings of the attnc program -----===//
//
// LLVM is built without exceptions, so its handlers cannot throw back to the
// driver: they print, remove the temporary files and _exit. An I/O failure
// on an output stream is the environment's (exit 2); any other fatal LLVM
// error on valid input is a bug of attnc (exit 3).
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/ProcessGuards.h"
#include "compiler/Driver/Compiler.h"
#include "compiler/Support/EnvironmentError.h"
#include "compiler/Support/TempFiles.h"

#include "llvm/Support/ErrorHandling.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace attnc {

namespace {

[[noreturn]] void leave(const char *prefix, const char *message, int code) {
  removeTempFilesNow();
  std::fflush(stdout);
  std::fprintf(stderr, "%s%s\n", prefix, message);
  std::fflush(stderr);
  _exit(code);
}

void onLLVMOutOfMemory(void *, const char *, bool) {
  leave("attnc: error: ", outOfMemoryMessage(), EnvironmentFailure);
}

void onLLVMFatalError(void *, const char *reason, bool) {
  if (std::strstr(reason, "IO failure"))
    leave("attnc: error: cannot write an output: LLVM: ", reason, EnvironmentFailure);
  leave("attnc: internal error: LLVM: ", reason, InternalError);
}

} // namespace

void installProcessGuards() {
  // A write beyond `ulimit -f` then fails with EFBIG and is reported.
  std::signal(SIGXFSZ, SIG_IGN);
  removeTempFilesOnSignals();
  llvm::install_bad_alloc_error_handler(onLLVMOutOfMemory, nullptr);
  llvm::install_fatal_error_handler(onLLVMFatalError, nullptr);
}

} // namespace attnc
