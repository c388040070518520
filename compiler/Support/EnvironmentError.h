//===- EnvironmentError.h - Failures of the machine, not of attnc -*- C++ -*-===//
//
// A compile can fail because of where it runs: TMPDIR missing, the disk full,
// no C compiler, CC pointing at the wrong program. None of these is a bug of
// attnc, so they must not be reported as internal errors (exit 3): docs/tools.md
// §2 makes them exit 2, with a message that says what to fix.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <stdexcept>
#include <string>

namespace attnc {

class EnvironmentError : public std::runtime_error {
public:
  explicit EnvironmentError(const std::string &message) : std::runtime_error(message) {}
};

/// The text after "attnc: error: " when memory runs out (std::bad_alloc, or
/// LLVM's out-of-memory handler).
const char *outOfMemoryMessage();

/// strerror(err) as a std::string (one place that reads errno's text).
std::string errnoText(int err);

} // namespace attnc
