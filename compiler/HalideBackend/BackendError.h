//===- BackendError.h - The one error type of the Halide back end -*- C++ -*-===//
//
// Every failure of the back end (a Halide compile error, a bad configuration,
// an I/O or linker failure) reaches the driver as a BackendError with a
// readable message, so no Halide exception escapes and nothing aborts.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <stdexcept>
#include <string>

namespace attnc::halide_backend {

class BackendError : public std::runtime_error {
public:
  explicit BackendError(const std::string &message)
      : std::runtime_error(message) {}
};

/// A request that cannot be carried out as given on the command line (an
/// output path in a missing folder, a binary artifact to standard output, an
/// unknown target, a schedule that cannot schedule the kernel): the driver
/// reports it as a usage error (exit 2), not as a bug of attnc.
class CommandLineError : public BackendError {
public:
  using BackendError::BackendError;
};

} // namespace attnc::halide_backend
