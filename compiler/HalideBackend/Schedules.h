//===- Schedules.h - The schedules of the attention algorithm -*- C++ -*-===//
//
// A schedule is data chosen by name: `tuned` (the fused FlashAttention-style
// schedule with register-blocked Q.K^T and P.V micro-kernels and key-block
// skipping), `simple` (plain and obviously correct, for debugging) and `auto`
// (Halide's Mullapudi2016 autoscheduler, loaded as a plugin).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionAlgorithm.h"

#include <Halide.h>

namespace attnc::halide_backend {

/// Schedules every Func of `funcs` for `target`; records what it chose in
/// funcs.policyName / funcs.scheduleNotes. Throws BackendError on failure.
void applySchedule(AlgorithmFuncs &funcs, const AttentionConfig &config,
                   SchedulePolicy policy, const Halide::Target &target);

const char *toString(SchedulePolicy policy);

/// Halide's autoscheduler failed on kernel `kernel` (`problem`: what it could
/// not do; `halideError`: Halide's message): a usage error naming the
/// schedules that can, since the autoscheduler's limits are not the kernel's
/// fault nor a bug of attnc's.
[[noreturn]] void refuseAutoSchedule(const std::string &kernel, const std::string &problem,
                                     const std::string &halideError);

/// NAME_backward's schedule (GradientSchedule.cpp), for every policy.
void scheduleGradients(AlgorithmFuncs &funcs, const AttentionConfig &config,
                       const Halide::Target &target);

/// Outputs: vectorized over the innermost dimension, the two outermost fused
/// and parallel. `perVector`, a reduction `out` reads at its own coordinates
/// (the weights' scores, qk_weights), is computed per vector of `out`.
void scheduleOutput(Halide::Func out, int vec, Halide::Func perVector = Halide::Func());

/// The tail of a pure stage's dimension of `extent` values (0: not known)
/// vectorized by `vec`: guarded, except when the last vector would hold one
/// value, which Halide 14 miscompiles (the guard vanishes and whole vectors
/// are stored past the end): that vector shifts inwards and recomputes
/// values, which a pure stage may.
Halide::TailStrategy pureTail(int extent, int vec);

/// The value of `e` when it is an integer constant, else `fallback`.
int constantOf(const Halide::Expr &e, int fallback);

/// K or V rows (d, j, g, b) copied once per call at the root, head-major:
/// d vectorized with `tail`, tasks of 64 rows x KV head x batch in parallel.
void scheduleHeadMajorRows(const AlgorithmFuncs &f, Halide::Func rows, int vec,
                           Halide::TailStrategy tail);

/// A per-row sum (a pure start, an update over channels) at the root,
/// vectorized over `row`, of `rows` values (0: not known), and parallel over
/// `outer`. When the last vector would hold one value, the pure start shifts
/// it inwards (pureTail) and the update runs a plain loop over the rows:
/// Halide 14 drops that vector's guard in an update too, and an update may
/// not shift inwards.
void scheduleRowSums(Halide::Func sums, const Halide::Var &row, int rows,
                     const Halide::Var &outer, int vec);

/// p(c, row, ...) += a(r, row, ...) * b(c, r) at the root as a register-blocked
/// matrix product (the projections' micro-kernel), rows and outer dimensions
/// fused into one parallel loop.
void scheduleMatrixProduct(Halide::Func p, int vec);

/// The adjacent loops `vars` of `stage` (innermost first) fused into one
/// parallel loop, the fused loops named `base`1, `base`2, ...
void fuseIntoParallel(Halide::Stage stage, const std::vector<Halide::VarOrRVar> &vars,
                      const std::string &base);

/// The root-level stages every kernel shares: projections, positions,
/// transposed weights, packed sequences' tables, cache writes.
void scheduleRootStages(AlgorithmFuncs &f, int vec);

} // namespace attnc::halide_backend
