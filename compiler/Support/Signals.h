//===- Signals.h - Installing a signal handler ------------------*- C++ -*-===//
//
// One sigaction call with an empty mask, shared by the temporary files'
// removal on SIGINT / SIGTERM and the driver's crash report.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_SIGNALS_H
#define ATTNC_SUPPORT_SIGNALS_H

namespace attnc {

/// Installs `handler` for `sig` with the sigaction flags `flags` (SA_*).
void setSignalHandler(int sig, void (*handler)(int), int flags);

} // namespace attnc

#endif // ATTNC_SUPPORT_SIGNALS_H
