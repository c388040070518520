//===- CodegenDeadline.cpp - LLVM code generation that never ends ---------===//
#include "compiler/Support/CodegenDeadline.h"
#include "compiler/Support/TempFiles.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace attnc {

namespace {
std::atomic<double> limitSeconds{0}; // 0: unarmed
} // namespace

void armCodegenDeadline() {
  double limit = 600;
  if (const char *text = std::getenv("ATTNC_CODEGEN_TIMEOUT")) {
    char *end = nullptr;
    double value = std::strtod(text, &end);
    if (end != text && *end == '\0' && value > 0)
      limit = value;
  }
  limitSeconds = limit;
}

CodegenDeadline::CodegenDeadline(const char *what) {
  const double limit = limitSeconds;
  if (limit <= 0)
    return;
  watcher_ = std::thread([this, limit, what] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (finished_.wait_for(lock, std::chrono::duration<double>(limit), [this] { return done_; }))
      return;
    removeTempFilesNow();
    std::fflush(stdout);
    std::fprintf(stderr,
                 "attnc: internal error: LLVM's %s did not finish in %g s (LLVM 14's "
                 "instruction selection can run for hours on a very large block); this is a bug "
                 "of attnc: please report it with the .attn file and --target; another --target "
                 "may compile it\n",
                 what, limit);
    std::fflush(stderr);
    _exit(3);
  });
}

CodegenDeadline::~CodegenDeadline() {
  if (!watcher_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  finished_.notify_all();
  watcher_.join();
}

} // namespace attnc
