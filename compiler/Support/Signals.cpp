//===- Signals.cpp - Installing a signal handler --------------------------===//
#include "compiler/Support/Signals.h"

#include <csignal>
#include <cstring>

namespace attnc {

void setSignalHandler(int sig, void (*handler)(int), int flags) {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = flags;
  sigaction(sig, &action, nullptr);
}

} // namespace attnc
