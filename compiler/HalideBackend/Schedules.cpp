//===- Schedules.cpp - The schedules of the attention algorithm --------===//
//
// Three named policies over the Funcs of AttentionAlgorithm.h. `tuned`:
// (b, h, query tile) in parallel; per key block a Q.K^T micro-kernel of
// 2 vectors of queries x 8 keys, the block's max / exp / sum vectorized over
// queries, and a P.V micro-kernel of a few rows x Dv; key blocks that no query
// of the tile sees are skipped by the RDom predicate. `simple` and `auto`
// are for debugging and comparison.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/Schedules.h"
#include "compiler/HalideBackend/BackendError.h"

#include <mutex>

using namespace Halide;

namespace attnc::halide_backend {

// attnc::Expr is the frontend's AST node; here Expr means Halide's.
using Halide::Expr;

const char *toString(SchedulePolicy policy) {
  switch (policy) {
  case SchedulePolicy::Tuned:
    return "tuned";
  case SchedulePolicy::Simple:
    return "simple";
  case SchedulePolicy::Auto:
    return "auto";
  }
  return "?";
}

namespace {

/// The largest divisor of `n` that is at most `limit` (at least 1).
int divisorAtMost(int n, int limit) {
  for (int k = std::min(n, limit); k > 1; --k)
    if (n % k == 0)
      return k;
  return 1;
}

int constantOf(const Expr &e, int fallback) {
  if (const int64_t *v = as_const_int(e))
    return (int)*v;
  return fallback;
}

/// Root-level precomputations: parallel over their outermost dimension,
/// vectorized over the innermost.
void schedulePrecomputed(AlgorithmFuncs &f, int vec) {
  for (Func p : f.precomputed) {
    std::vector<Var> args = p.args();
    p.compute_root();
    p.vectorize(args.front(), vec, TailStrategy::GuardWithIf).parallel(args.back());
    for (int k = 0; k < p.num_update_definitions(); ++k)
      p.update(k).vectorize(args.front(), vec, TailStrategy::GuardWithIf).parallel(args.back());
  }
}

/// Outputs: vectorized over the innermost dimension, the two outermost fused
/// and parallel.
void scheduleOutput(Func out, int vec) {
  std::vector<Var> args = out.args();
  out.vectorize(args.front(), vec, TailStrategy::GuardWithIf);
  if (args.size() >= 3) {
    Var fused("fused");
    out.fuse(args[args.size() - 2], args.back(), fused).parallel(fused);
  } else {
    out.parallel(args.back());
  }
}

void scheduleTuned(AlgorithmFuncs &f, const Target &target) {
  const int vec = target.natural_vector_size<float>();
  const int TQ = f.tileQ, BK = f.blockK;
  const int Dv = constantOf(f.Dv, 64);
  std::vector<std::string> &notes = f.scheduleNotes;
  Var d = f.d, ii = f.ii, qt = f.qt, h = f.h, b = f.b, jj = f.jj, i = f.i, j = f.j;
  schedulePrecomputed(f, vec);

  // The state of a query tile: one parallel task per (query tile, head, batch).
  int dVectors = (Dv + vec - 1) / vec;
  int pvRows = divisorAtMost(TQ, std::max(1, 16 / dVectors));
  Var io("io"), iu("iu"), dO("dO"), dI("dI");
  f.state.compute_root().vectorize(d, vec, TailStrategy::GuardWithIf);
  f.state.update()
      .split(ii, io, iu, pvRows)
      .split(d, dO, dI, vec, TailStrategy::GuardWithIf)
      .reorder(dI, dO, iu, io, f.rk, qt, h, b)
      .vectorize(dI)
      .unroll(dO)
      .unroll(iu)
      .parallel(qt);
  notes.push_back("softmax_state: compute_root; update loops b > h > qt parallel > rk > ii/" +
                  std::to_string(pvRows) + " > d vectorized x" + std::to_string(vec));

  // Queries of the tile, stored transposed so the Q.K^T kernel loads vectors.
  // With `weights` they are also read outside the state's loops: keep them all.
  LoopLevel qLevel = f.weights.defined() ? LoopLevel::root() : LoopLevel(f.state, qt);
  if (f.qs.defined())
    f.qs.compute_at(qLevel).reorder_storage(i, d).reorder(i, d).vectorize(
        i, vec, TailStrategy::GuardWithIf);
  if (f.qHoist.defined() && !f.kHoist.defined())
    f.qHoist.compute_at(qLevel); // general: W^T q per query tile
  if (f.kHoist.defined()) {
    // Additive: W_q q and W_k k once per row, outside the (i, j) loops.
    f.qHoist.compute_root().vectorize(f.n, vec, TailStrategy::GuardWithIf).parallel(f.b);
    f.qHoist.update().vectorize(f.n, vec, TailStrategy::GuardWithIf).parallel(f.b);
    f.kHoist.compute_root().vectorize(f.n, vec, TailStrategy::GuardWithIf).parallel(f.b);
    f.kHoist.update().vectorize(f.n, vec, TailStrategy::GuardWithIf).parallel(f.b);
  }

  // P.V: pvRows rows x Dv values in registers, one broadcast p per row and key.
  Var dO2("dO2"), dI2("dI2");
  f.blockPV.compute_at(f.state, io).vectorize(d, vec, TailStrategy::GuardWithIf);
  f.blockPV.update()
      .split(d, dO2, dI2, vec, TailStrategy::GuardWithIf)
      .reorder(dI2, dO2, ii, f.rj)
      .vectorize(dI2)
      .unroll(dO2)
      .unroll(ii);
  notes.push_back("block_pv: compute_at softmax_state.io; micro-kernel " +
                  std::to_string(pvRows) + " rows x " + std::to_string(Dv) +
                  " values, d vectorized, rows unrolled");

  // The block's scores, max, exponentials and sum, per key block.
  for (Func fn : {f.blockScore, f.blockMax, f.blockExp, f.blockSum})
    fn.compute_at(f.state, f.rk);
  if (TQ % vec == 0) {
    // Q.K^T: (2 x vec) queries x 8 keys in registers, vectorized over queries.
    int ir = (TQ % (2 * vec) == 0) ? 2 * vec : vec;
    int jr = divisorAtMost(BK, 8);
    Var jo("jo"), ji("ji"), iq("iq"), iv("iv"), ivo("ivo"), ivi("ivi");
    f.blockScore.reorder_storage(ii, jj, qt, f.kb, h, b)
        .split(jj, jo, ji, jr)
        .split(ii, iq, iv, ir)
        .split(iv, ivo, ivi, vec)
        .reorder(ivi, ivo, ji, iq, jo)
        .vectorize(ivi)
        .unroll(ivo)
        .unroll(ji);
    Var qo("qo"), qi("qi");
    f.qk.compute_at(f.blockScore, iq).reorder_storage(i, j, h, b);
    f.qk.split(i, qo, qi, vec).reorder(qi, qo, j).vectorize(qi).unroll(qo).unroll(j);
    f.qk.update().split(i, qo, qi, vec).reorder(qi, qo, j, f.rd).vectorize(qi).unroll(qo).unroll(j);
    notes.push_back("qk: compute_at block_score.iq; micro-kernel " + std::to_string(ir) +
                    " queries (vectorized) x " + std::to_string(jr) + " keys (unrolled)");
    f.blockMax.vectorize(ii, vec);
    f.blockMax.update().reorder(ii, f.rj).vectorize(ii, vec);
    f.blockExp.reorder_storage(ii, jj, qt, f.kb, h, b).reorder(ii, jj).vectorize(ii, vec);
    f.blockSum.vectorize(ii, vec);
    f.blockSum.update().reorder(ii, f.rj).vectorize(ii, vec);
  } else {
    // Few query rows (decode): vectorize over keys instead.
    f.blockScore.vectorize(jj, vec, TailStrategy::GuardWithIf);
    f.blockExp.vectorize(jj, vec, TailStrategy::GuardWithIf);
    notes.push_back("qk: per key vector (few query rows), keys vectorized");
  }
  notes.push_back("block_score, block_max, block_exp, block_sum: compute_at softmax_state.rk "
                  "(tile " + std::to_string(TQ) + " queries x " + std::to_string(BK) + " keys)");

  for (Func out : f.outputs)
    scheduleOutput(out, vec);
  notes.push_back("outputs: innermost dimension vectorized, outer dimensions parallel");
}

void scheduleSimple(AlgorithmFuncs &f, const Target &) {
  for (Func p : f.precomputed)
    p.compute_root();
  if (f.kHoist.defined()) {
    f.qHoist.compute_root();
    f.kHoist.compute_root();
  }
  f.state.compute_root();
  f.state.update().reorder(f.d, f.ii, f.rk, f.qt, f.h, f.b).parallel(f.b);
  for (Func fn : {f.blockScore, f.blockMax, f.blockExp, f.blockSum, f.blockPV})
    fn.compute_at(f.state, f.rk);
  if (f.qs.defined() && f.weights.defined())
    f.qs.compute_root();
  else if (f.qs.defined())
    f.qs.compute_at(f.state, f.qt);
  f.scheduleNotes.push_back("softmax_state: compute_root, loops b (parallel) > h > qt > rk > ii > d");
  f.scheduleNotes.push_back("block funcs: compute_at softmax_state.rk; nothing vectorized");
}

void scheduleAuto(AlgorithmFuncs &f, const Target &target) {
  static std::once_flag loaded;
  static std::string loadError;
  std::call_once(loaded, [] {
    try {
      load_plugin("/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_mullapudi2016.so");
    } catch (const std::exception &e) {
      loadError = e.what();
    }
  });
  if (!loadError.empty())
    throw BackendError("cannot load the Mullapudi2016 autoscheduler: " + loadError);
  // 2 cores, a 32 MiB last-level cache, load cost 40x an arithmetic op.
  Pipeline p = f.pipeline();
  AutoSchedulerResults results =
      p.auto_schedule("Mullapudi2016", target, MachineParams(2, 32 * 1024 * 1024, 40));
  f.scheduleNotes.push_back("Mullapudi2016 autoscheduler, MachineParams(2, 32 MiB, 40):");
  f.scheduleNotes.push_back(results.schedule_source);
}

using ScheduleFn = void (*)(AlgorithmFuncs &, const Target &);
struct PolicyRow {
  SchedulePolicy policy;
  ScheduleFn apply;
};
const PolicyRow kPolicies[] = {
    {SchedulePolicy::Tuned, scheduleTuned},
    {SchedulePolicy::Simple, scheduleSimple},
    {SchedulePolicy::Auto, scheduleAuto},
};

} // namespace

void applySchedule(AlgorithmFuncs &funcs, const AttentionConfig &config,
                   SchedulePolicy policy, const Target &target) {
  (void)config;
  funcs.policyName = toString(policy);
  funcs.scheduleNotes.clear();
  try {
    for (const PolicyRow &row : kPolicies)
      if (row.policy == policy)
        row.apply(funcs, target);
  } catch (const BackendError &) {
    throw;
  } catch (const Halide::Error &e) {
    throw BackendError("kernel '" + funcs.name + "': cannot apply the " +
                       std::string(toString(policy)) + " schedule: " + e.what());
  }
}

} // namespace attnc::halide_backend
