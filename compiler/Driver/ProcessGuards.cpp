//===- ProcessGuards.cpp - Process-wide settings of the attnc program -----===//
//
// LLVM is built without exceptions, so its handlers cannot throw back to the
// driver: they print, remove the temporary files and _exit. An I/O failure
// on an output stream is the environment's (exit 2); any other fatal LLVM
// error on valid input is a bug of attnc (exit 3). So is a crash (a
// segmentation fault inside Halide's lowering, for one): it is reported as
// such, on a stack of its own so that a stack overflow is reported too.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/ProcessGuards.h"
#include "compiler/Driver/Compiler.h"
#include "compiler/Support/CodegenDeadline.h"
#include "compiler/Support/EnvironmentError.h"
#include "compiler/Support/Signals.h"
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

/// A crash: only async-signal-safe calls (unlink, write, _exit).
void onCrash(int sig) {
  removeTempFilesNow();
  const char *what = sig == SIGSEGV ? "a segmentation fault"
                     : sig == SIGBUS ? "a bus error"
                     : sig == SIGFPE ? "an arithmetic exception"
                                     : "an illegal instruction";
  const char *parts[] = {"attnc: internal error: the compiler crashed (", what,
                         "); this is a bug of attnc: please report it with the .attn file\n"};
  for (const char *part : parts)
    if (write(STDERR_FILENO, part, std::strlen(part)) < 0)
      break;
  _exit(InternalError);
}

void reportCrashes() {
  static char altStack[64 * 1024];
  stack_t stack;
  std::memset(&stack, 0, sizeof stack);
  stack.ss_sp = altStack;
  stack.ss_size = sizeof altStack;
  sigaltstack(&stack, nullptr);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    setSignalHandler(sig, onCrash, SA_ONSTACK | SA_RESETHAND);
}

} // namespace

void installProcessGuards() {
  // A write beyond `ulimit -f` then fails with EFBIG and is reported.
  std::signal(SIGXFSZ, SIG_IGN);
  removeTempFilesOnSignals();
  llvm::install_bad_alloc_error_handler(onLLVMOutOfMemory, nullptr);
  llvm::install_fatal_error_handler(onLLVMFatalError, nullptr);
  reportCrashes();
  armCodegenDeadline();
}

} // namespace attnc
