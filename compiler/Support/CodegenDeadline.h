//===- CodegenDeadline.h - LLVM code generation that never ends -*- C++ -*-===//
//
// LLVM 14's instruction selection can run for hours on a very large basic
// block (its DAG combiner's store chains are superlinear: one backward
// kernel's 1024 unrolled stores never finished, docs/status.md, BUG-12).
// Nothing can interrupt it, so a process of attnc's own (the attnc program,
// a run-time compile's child process) ends itself with an internal error
// once code generation has run past its limit, instead of hanging its
// caller. A library caller's process is never ended: there it stays unarmed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

namespace attnc {

/// Arms CodegenDeadline in this process (installProcessGuards does). The
/// limit is ATTNC_CODEGEN_TIMEOUT seconds if set, else 600.
void armCodegenDeadline();

/// While alive, in an armed process: past the limit, removes the temporary
/// files, prints an internal error naming `what` and exits with code 3.
class CodegenDeadline {
public:
  explicit CodegenDeadline(const char *what);
  ~CodegenDeadline();
  CodegenDeadline(const CodegenDeadline &) = delete;
  CodegenDeadline &operator=(const CodegenDeadline &) = delete;

private:
  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  std::thread watcher_;
};

} // namespace attnc
