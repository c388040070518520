//===- HalideHooks.h - The runtime's hold on Halide's runtime ----*- C++ -*-===//
//
// Generated kernels report run-time errors through `halide_error`, which by
// default prints to stderr. We install a handler, in every Halide runtime copy
// a loaded library reaches, that keeps the message for the thread running the
// kernel, so attn_kernel_run can return it. The same registry applies the
// caller's thread count to every runtime copy.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace attnc::runtime {

/// Finds `halide_set_error_handler` / `halide_set_num_threads` through the
/// dlopen handle (the library and its dependencies) and the process, installs
/// the capturing handler and applies the current thread count.
void attachHalideRuntime(void *handle);
/// Forgets the runtime copies of `handle` (before dlclose).
void detachHalideRuntime(void *handle);

/// Sets the thread count of every attached runtime; 0 means Halide's
/// default. Returns the previous setting.
int setNumThreads(int n);
int numThreads();

/// While alive, collects the Halide errors raised on this thread. Errors
/// raised on Halide's worker threads have no capture; they are kept as the
/// process's latest error, which message() falls back on. While no capture
/// is alive anywhere, errors (an app calling a kernel directly) go to stderr.
class ErrorCapture {
public:
  ErrorCapture();
  ~ErrorCapture();
  ErrorCapture(const ErrorCapture &) = delete;
  ErrorCapture &operator=(const ErrorCapture &) = delete;

  /// The collected text (trailing newlines removed), "" if none.
  std::string message() const;
  void append(const char *text);

private:
  std::string text_;
  uint64_t startSequence_;
  ErrorCapture *outer_;
};

} // namespace attnc::runtime
