//===- AttentionConfig.h - What the Halide back end is asked to build -*- C++ -*-===//
//
// The Halide back end's input: one fused attention op, read off the `attn`
// dialect by the convert-attn-to-halide step, as plain data. It carries the
// results of the dialect passes (folded scale, key intervals of the mask) so
// the back end never re-derives them. Custom expressions arrive as callbacks
// that build Halide Exprs from the index variables, so this header needs no
// MLIR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"
#include "compiler/Frontend/Signature.h"

#include <Halide.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnc::halide_backend {

/// The schedule policies of `--schedule=`.
enum class SchedulePolicy { Tuned, Simple, Auto };

/// Values an expression callback may read. Index variables are int32; `dot`
/// is the float dot product of the current query and key rows (score only).
struct ExprEnv {
  Halide::Expr b, h, i, j, g, ip;
  Halide::Expr B, H, G, Lq, Lk, D, Dv;
  Halide::Expr dot;                                 // only while building `score`
  std::map<std::string, Halide::Func> inputs;      // declared inputs, clamped access
  std::map<std::string, std::vector<Halide::Expr>> inputExtents;
};
using ExprBuilder = std::function<Halide::Expr(const ExprEnv &)>;

/// The visible keys of query row i form [lo(i), hi(i)) when a mask term is an
/// interval; the back end bounds its key loops by them. Each bound is
/// `ip + offset` (relative) or a constant, absent when unbounded.
struct KeyBound {
  enum Kind { None, RelativeToIp, ValidLen } kind = None;
  int64_t offset = 0;
};

struct KeyInterval {
  KeyBound lo; // first visible key: max of the terms' lower bounds
  KeyBound hi; // one past the last visible key: min of the terms' upper bounds
};

struct AttentionConfig {
  std::string name;  // entry point name
  KernelSpec spec;   // the kernel as written (sizes, layout, outputs, inputs)
  std::vector<ArgSpec> arguments;

  // Results of the dialect passes.
  double scale = 1.0;         // multiply the score by this
  bool scaleOnQuery = false;  // scale folded into q (Lq*D multiplies, not Lq*Lk)
  KeyInterval interval;       // from attn-analyze-mask
  bool maskNeedsElementTest = false; // some term is not an interval (input, custom)

  // Custom parts, built from the dialect's regions.
  ExprBuilder customScore; // ScoreKind::Custom
  ExprBuilder customBias;  // BiasKind::Custom
  std::vector<ExprBuilder> customMasks; // MaskKind::Custom terms, all ANDed
};

/// Everything needed to emit artifacts for the kernels of one file.
struct EmitOptions {
  std::string target = "host";
  SchedulePolicy schedule = SchedulePolicy::Tuned;
  bool withRuntime = true;
  /// For shared libraries: the shared Halide runtime library (a path) to
  /// link against instead of embedding a runtime, so that every kernel
  /// library of a process shares one runtime and thread pool. Empty: embed
  /// (when withRuntime).
  std::string sharedRuntime;
};

} // namespace attnc::halide_backend
