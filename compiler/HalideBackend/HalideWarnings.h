//===- HalideWarnings.h - Halide's compile-time warnings, collected --*- C++ -*-===//
//
// Halide prints its compile-time warnings to stderr unless a reporter is
// installed; attnc collects them instead, so they reach the user as attnc's
// own messages or schedule notes, and throws its errors as Halide would
// (CompileError, InternalError).
// The reporter is one global of libHalide: hold a HalideWarningScope for as
// short a time as possible (it serializes on a mutex).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <memory>
#include <string>
#include <vector>

namespace attnc::halide_backend {

class HalideWarningScope {
public:
  /// Collects into `warnings` ("Warning: " and trailing newlines removed).
  explicit HalideWarningScope(std::vector<std::string> &warnings);
  ~HalideWarningScope();
  HalideWarningScope(const HalideWarningScope &) = delete;
  HalideWarningScope &operator=(const HalideWarningScope &) = delete;

private:
  struct State;
  std::unique_ptr<State> state;
};

/// Whether a lowering warning is Halide's "This pipeline is guaranteed to fail
/// an assertion at runtime" about an explicit bound (bound_extent): loop
/// partitioning leaves such asserts in branches no call reaches (causal
/// N=128: the condition holds for no query tile), and were one reached, the
/// call would still return Halide's error with its message.
bool isUnreachableBoundsAssertion(const std::string &warning);

} // namespace attnc::halide_backend
