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

} // namespace attnc::halide_backend
