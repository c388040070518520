//===- BenchConfig.cpp - Check and time every implementation of one config ===//
//
// Correctness comes before speed: nothing is timed until its output has been
// compared. The naive loop is the independent referee; on configurations too
// large to run it whole it computes only the first and last 32 query rows of
// every head, which still covers the mask's edge cases. A disagreement beyond
// 1e-4 * max(1, max |ref|) (the accuracy bound of docs/language.md §2, as max |ref| <=
// max |v|) marks the implementation "wrong" and is printed. With 16-bit storage
// (docs/language.md, storage types) every implementation reads the same rounded
// inputs (the baselines their f32 widening), attnc's 16-bit output is widened
// before the comparison, and the bound is 8e-3 (bf16) or 2e-3 (f16) * max(1, max |v|).
//
//===----------------------------------------------------------------------===//
#include "bench/src/BenchConfig.h"
#include "bench/src/Probes.h"

#include "bench/src/AttncKernel.h"
#include "bench/src/BlasAttention.h"
#include "bench/src/Json.h"
#include "bench/src/Naive.h"
#include "runtime/HalfFloat.h"
#include "runtime/Npy.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>

namespace attnc_bench {

static constexpr int64_t kCheckRows = 32;

// Largest |a - b| over the rows `checked` accepts (rows of width `width`,
// query index = row % Lq); nan anywhere counts as infinitely wrong.
static double maxDiff(const std::vector<float> &a, const std::vector<float> &b,
                      int64_t width, int64_t Lq, bool allRows) {
  double worst = 0;
  int64_t rows = int64_t(a.size()) / width;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t i = r % Lq;
    if (!allRows && i >= kCheckRows && i < Lq - kCheckRows)
      continue;
    for (int64_t d = 0; d < width; ++d) {
      double diff = std::fabs(double(a[r * width + d]) - double(b[r * width + d]));
      if (!(diff <= worst))
        worst = std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff;
    }
  }
  return worst;
}

static double maxAbs(const std::vector<float> &a) {
  double m = 0;
  for (float x : a)
    m = std::fmax(m, std::fabs(double(x)));
  return m;
}

static void loud(const Config &c, const std::string &what) {
  std::fprintf(stderr, "\n!!! %s: %s\n\n", c.id.c_str(), what.c_str());
}

static std::string gflop(double flops) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", flops / 1e9);
  return buf;
}

/// One float32 array for the PyTorch baseline, through the runtime's
/// writer; a failure is reported and the baseline then lacks that input.
static void writeInput(const std::string &path, const std::vector<int64_t> &shape,
                       const float *data) {
  std::string error;
  if (!attnc::runtime::writeNpy(path, ATTN_F32, shape, data, error))
    std::fprintf(stderr, "attnc-bench: %s\n", error.c_str());
}

static void writeTorchInputs(const Config &c, const Options &o,
                             const std::vector<Tensor> &inputs,
                             const std::vector<float> *ref,
                             const ConfigResult &r) {
  std::string dir = o.outDir + "/work/" + c.id;
  mkdir((o.outDir + "/work").c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  JsonWriter meta;
  meta.beginObject().field("id", c.id).field("kind", c.kindName())
      .field("mask", c.maskName()).field("window", c.window)
      .field("sink", c.sink).field("rotary", c.rotary)
      .field("B", c.B).field("H", c.H).field("G", c.G).field("Lq", c.Lq)
      .field("Lk", c.Lk).field("D", c.D).field("Dv", c.Dv)
      .field("hidden", c.hidden).field("model_dim", c.modelDim)
      .field("dtype", dtypeName(c.dtype)).field("kv_dtype", dtypeName(c.kvDtype))
      .field("scale", double(c.scale())).field("tolerance", r.tolerance)
      .field("ref_source", r.refSource).field("threads", o.threads);
  meta.key("inputs").beginArray();
  for (const Tensor &t : inputs) {
    if (!t.ints.empty()) {
      std::string error;
      if (!attnc::runtime::writeNpy(dir + "/" + t.name + ".npy", ATTN_I32, t.shape,
                                    t.ints.data(), error))
        std::fprintf(stderr, "attnc-bench: %s\n", error.c_str());
    } else {
      writeInput(dir + "/" + t.name + ".npy", t.shape, t.data.data());
    }
    meta.value(t.name);
  }
  meta.endArray();
  if (ref)
    writeInput(dir + "/ref.npy", outputShape(c), ref->data());
  meta.field("has_ref", ref != nullptr).endObject();
  std::ofstream(dir + "/meta.json") << meta.str() << "\n";
}

// --- KV caches ---------------------------------------------------------------
// One kernel call covers every sequence and writes the new rows into the
// caches. The naive referee and the OpenBLAS baseline see each sequence b as
// a plain configuration (c.sequence(b): B = 1, Lk = cache_len[b] + Lq) over a
// contiguous K and V holding its cache rows and then its new rows, so query i
// sits at ip = cache_len[b] + i: what a user without caches keeps, and runs
// after copying the new rows in (the baseline's timed run copies them too).

namespace {
struct CacheSequences {
  std::vector<std::unique_ptr<Config>> configs;  // BlasAttention keeps a reference
  std::vector<std::vector<Tensor>> inputs;       // per sequence: q, k, v (f32)
  std::vector<std::unique_ptr<BlasAttention>> blas;
};
} // namespace

static const Tensor &named(const std::vector<Tensor> &in, const std::string &name) {
  for (const Tensor &t : in)
    if (t.name == name)
      return t;
  std::fprintf(stderr, "attnc-bench: no input '%s'\n", name.c_str());
  std::abort();
}

// Rows [len, len + Lq) of sequence b's contiguous K and V: its new rows.
static void copyNewRows(const Config &c, const std::vector<Tensor> &in, CacheSequences &seq,
                        int64_t b) {
  const int64_t len = c.cacheLens[size_t(b)], Lk = len + c.Lq;
  const float *k = named(in, "k").data.data(), *v = named(in, "v").data.data();
  float *kf = seq.inputs[size_t(b)][1].data.data(), *vf = seq.inputs[size_t(b)][2].data.data();
  for (int64_t g = 0; g < c.G; ++g) {
    std::copy_n(k + (b * c.G + g) * c.Lq * c.D, c.Lq * c.D, kf + (g * Lk + len) * c.D);
    std::copy_n(v + (b * c.G + g) * c.Lq * c.Dv, c.Lq * c.Dv, vf + (g * Lk + len) * c.Dv);
  }
}

static CacheSequences cacheSequences(const Config &c, const std::vector<Tensor> &in,
                                     ThreadPool &pool) {
  CacheSequences seq;
  const Tensor &q = named(in, "q"), &kc = named(in, "k_cache"), &vc = named(in, "v_cache");
  std::vector<int32_t> table;
  if (c.cache == CacheKind::Paged)
    table = named(in, "block_table").ints;
  for (int64_t b = 0; b < c.B; ++b) {
    seq.configs.push_back(std::make_unique<Config>(c.sequence(b)));
    const Config &cb = *seq.configs.back();
    const int64_t len = c.cacheLens[size_t(b)];
    Tensor qb{"q", {1, c.H, c.Lq, c.D}, {}};
    qb.data.assign(q.data.begin() + b * c.H * c.Lq * c.D,
                   q.data.begin() + (b + 1) * c.H * c.Lq * c.D);
    Tensor kb{"k", {1, c.G, cb.Lk, c.D}, {}}, vb{"v", {1, c.G, cb.Lk, c.Dv}, {}};
    kb.data.resize(size_t(kb.size()));
    vb.data.resize(size_t(vb.size()));
    for (int64_t g = 0; g < c.G; ++g)
      for (int64_t t = 0; t < len; ++t) {
        std::copy_n(kc.data.data() + cacheIndex(c, table, b, g, t, 0, c.D), c.D,
                    kb.data.data() + (g * cb.Lk + t) * c.D);
        std::copy_n(vc.data.data() + cacheIndex(c, table, b, g, t, 0, c.Dv), c.Dv,
                    vb.data.data() + (g * cb.Lk + t) * c.Dv);
      }
    seq.inputs.push_back({std::move(qb), std::move(kb), std::move(vb)});
    copyNewRows(c, in, seq, b);
    seq.blas.push_back(std::make_unique<BlasAttention>(cb, pool));
  }
  return seq;
}

// Whether the kernel stored sequence b's new rows (bit for bit) at rows
// cache_len[b] .. cache_len[b] + Lq - 1 of both caches; "" or what differs.
static std::string checkStoredRows(const Config &c, const std::vector<Tensor> &in) {
  std::vector<int32_t> table;
  if (c.cache == CacheKind::Paged)
    table = named(in, "block_table").ints;
  for (const char *which : {"k", "v"}) {
    const Tensor &rows = named(in, which), &cache = named(in, std::string(which) + "_cache");
    const int64_t W = rows.shape.back();
    const bool half = !cache.bits.empty();
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t g = 0; g < c.G; ++g)
        for (int64_t r = 0; r < c.Lq; ++r) {
          int64_t at = cacheIndex(c, table, b, g, c.cacheLens[size_t(b)] + r, 0, W);
          int64_t from = ((b * c.G + g) * c.Lq + r) * W;
          bool same = half ? std::equal(rows.bits.begin() + from, rows.bits.begin() + from + W,
                                        cache.bits.begin() + at)
                           : std::memcmp(rows.data.data() + from, cache.data.data() + at,
                                         size_t(W) * sizeof(float)) == 0;
          if (!same)
            return std::string(which) + "_cache: new row " + std::to_string(r) +
                   " of sequence " + std::to_string(b) + ", group " + std::to_string(g) +
                   " not stored at row cache_len + " + std::to_string(r);
        }
  }
  return "";
}

/// Times attnc's kernel (when it ran, even if wrong); memory-bound rows
/// take the read-bandwidth probe right before and after, the better of two,
/// and paged caches also the probe of pages as scattered as theirs.
static void timeAttnc(const Config &c, ThreadPool &pool, AttncKernel *kernel,
                      const std::function<int()> &run, ConfigResult &r) {
  if (!kernel || (r.attnc.status != "ok" && r.attnc.status != "wrong"))
    return;
  const int64_t probeBytes = int64_t(512) << 20; // two 512 MiB arrays
  // A paged cache's pages: one group's rows of a block, scattered.
  const int64_t pageBytes =
      c.cache == CacheKind::Paged ? c.block * c.D * elementBytes(c.kvDtype) : 0;
  auto probe = [&] {
    r.readGbs = std::max(r.readGbs, measureReadBandwidth(pool, probeBytes));
    if (pageBytes > 0)
      r.pagedReadGbs =
          std::max(r.pagedReadGbs, measureScatteredReadBandwidth(pool, probeBytes, pageBytes));
  };
  if (c.memoryBound)
    probe();
  r.attnc.timing = timeIt([&] { run(); });
  r.attnc.timed = true;
  if (c.memoryBound)
    probe();
  kernel->releaseThreads();
}

/// The check's bound: docs/language.md §2's 1e-4 * max(1, max |ref|), or the
/// storage types' bound of the coarser 16-bit format, * max(1, max |v|).
static double tolerance(const Config &c, const std::vector<float> &ref, double maxV) {
  if (!c.has16BitInputs())
    return 1e-4 * std::fmax(1.0, maxAbs(ref));
  bool bf16 = c.dtype == Dtype::Bf16 || c.kvDtype == Dtype::Bf16;
  return (bf16 ? 8e-3 : 2e-3) * std::fmax(1.0, maxV); // (fmax skips NaN)
}

/// The OpenBLAS baseline's output against the reference (attnc's when it
/// agrees with the naive loop, else the naive loop's).
static void checkBlas(const Config &c, ConfigResult &r, const std::vector<float> &ref,
                      const char *refName, const std::vector<float> &outB, int64_t width,
                      bool wholeRows) {
  r.blas.maxErr = maxDiff(outB, ref, width, c.Lq, wholeRows);
  r.blas.checkedAgainst = refName;
  if (!(r.blas.maxErr <= r.tolerance)) {
    r.blas.status = "wrong";
    r.blas.note = "OpenBLAS baseline disagrees with " + r.blas.checkedAgainst +
                  ": max |diff| " + std::to_string(r.blas.maxErr);
    loud(c, r.blas.note);
  }
}

/// Compiles the row's kernel (timed) and runs it once with `run`; `res`
/// says how that went. A 16-bit `out` (its bits) is widened into `out`.
static std::unique_ptr<AttncKernel>
compileAndRunOnce(const Config &c, const Options &o, ImplResult &res,
                  const std::function<int(AttncKernel &)> &run,
                  const std::vector<uint16_t> &outBits, std::vector<float> &out) {
  if (o.attnc.empty()) {
    res.note = "no attnc binary (baselines only)";
    return nullptr;
  }
  std::string err, src = extractKernel(o.kernelsText, c.kernel, err);
  if (src.empty()) {
    res.status = "failed";
    res.note = err;
    return nullptr;
  }
  std::string dir = o.outDir + "/kernels";
  mkdir(dir.c_str(), 0755);
  auto kernel = std::make_unique<AttncKernel>(o.attnc, src, c.target, c.kernel, dir);
  res.compileSeconds = kernel->compileSeconds();
  res.status = kernel->status();
  res.note = kernel->message();
  if (!kernel->ok())
    return kernel;
  kernel->setThreads(o.threads);
  int rc = run(*kernel);
  if (c.dtype == Dtype::F16)
    attnc::runtime::widenF16(outBits.data(), out.data(), outBits.size());
  else if (c.dtype == Dtype::Bf16)
    attnc::runtime::widenBf16(outBits.data(), out.data(), outBits.size());
  if (rc != 0) {
    res.status = "failed";
    res.note = rc == -1000 ? kernel->message() : c.kernel + "_run returned " + std::to_string(rc);
  }
  return kernel;
}

static ConfigResult benchCacheConfig(const Config &c, const Options &o, ThreadPool &pool) {
  ConfigResult r;
  std::vector<Tensor> inputs = makeInputs(c, configSeed(c, o.seed));
  CacheSequences seq = cacheSequences(c, inputs, pool);
  AttncKernel::Inputs args;
  for (const Tensor &t : inputs)
    args.push_back({t.name, t.pointer()});
  const AttncKernel::Sizes sizes = {{"Lmax", c.Lk},
                                    {"num_blocks", c.cache == CacheKind::Paged ? c.numBlocks() : 0},
                                    {"max_blocks", c.cache == CacheKind::Paged ? c.maxBlocks() : 0}};
  const int64_t perSeq = c.H * c.Lq * c.Dv, outSize = c.B * perSeq, width = c.Dv;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> outA(outSize, nan), outN(outSize, nan), outB(outSize, nan);
  std::vector<uint16_t> outBits(c.dtype == Dtype::F32 ? 0 : outSize, 0xffff);
  void *outAttnc = outBits.empty() ? static_cast<void *>(outA.data()) : outBits.data();

  // --- attnc: compile (timed) and one run, which stores the new rows --------
  std::unique_ptr<AttncKernel> kernel = compileAndRunOnce(
      c, o, r.attnc, [&](AttncKernel &k) { return k.run(args, outAttnc, c.B, c.Lq, c.Lk, sizes); },
      outBits, outA);
  auto runAttnc = [&] { return kernel->run(args, outAttnc, c.B, c.Lq, c.Lk, sizes); };
  const bool attncRuns = r.attnc.status == "ok";

  // --- the naive referee per sequence, whole or on the first and last rows --
  const bool naiveWhole = c.Lq <= 2 * kCheckRows || c.flops() <= o.naiveMaxFlops;
  r.checkRows = naiveWhole ? "all" : "first and last 32 query rows of every head";
  auto runNaive = [&](int64_t r0, int64_t r1) {
    for (int64_t b = 0; b < c.B; ++b)
      naiveAttention(*seq.configs[size_t(b)], seq.inputs[size_t(b)], outN.data() + b * perSeq,
                     pool, r0, r1);
  };
  if (naiveWhole) {
    runNaive(0, c.Lq);
  } else {
    runNaive(0, kCheckRows);
    runNaive(c.Lq - kCheckRows, c.Lq);
  }

  // --- OpenBLAS per sequence, after copying the new rows in, one run --------
  auto runBlas = [&] {
    for (int64_t b = 0; b < c.B; ++b) {
      copyNewRows(c, inputs, seq, b);
      seq.blas[size_t(b)]->run(seq.inputs[size_t(b)], outB.data() + b * perSeq);
    }
  };
  runBlas();

  // --- checks, before any timing --------------------------------------------
  r.tolerance = tolerance(c, outN, std::fmax(maxAbs(named(inputs, "v").data),
                                             maxAbs(named(inputs, "v_cache").data)));
  r.naive.status = "ok";
  r.blas.status = "ok";
  bool attncAgrees = false;
  if (attncRuns) {
    r.attnc.maxErr = maxDiff(outA, outN, width, c.Lq, naiveWhole);
    r.attnc.checkedAgainst = "naive";
    attncAgrees = r.attnc.maxErr <= r.tolerance;
    std::string stored = checkStoredRows(c, inputs);
    if (attncAgrees && stored.empty()) {
      r.naive.maxErr = r.attnc.maxErr;
      r.naive.checkedAgainst = "attnc";
    } else {
      attncAgrees = false;
      r.attnc.status = "wrong";
      r.attnc.note = !stored.empty() ? stored
                                     : "attnc disagrees with the naive loop: max |diff| " +
                                           std::to_string(r.attnc.maxErr);
      loud(c, r.attnc.note);
    }
  }
  checkBlas(c, r, attncAgrees ? outA : outN, attncAgrees ? "attnc" : "naive", outB, width,
            attncAgrees || naiveWhole);
  r.refSource = attncAgrees ? "attnc" : "naive";
  // No PyTorch inputs: torch_baseline.py has no cache kernels.

  // --- timing: every call writes the same new rows at the same place --------
  timeAttnc(c, pool, kernel.get(), runAttnc, r);
  if (c.flops() <= o.naiveMaxFlops) {
    r.naive.timing = timeIt([&] { runNaive(0, c.Lq); });
    r.naive.timed = true;
  } else {
    r.naive.note = "checked, not timed: " + gflop(c.flops()) +
                   " GFLOP per run is above the naive budget (--naive-max-gflop)";
  }
  r.blas.timing = timeIt(runBlas);
  r.blas.timed = true;
  return r;
}

ConfigResult benchConfig(const Config &c, const Options &o, ThreadPool &pool) {
  if (c.cache != CacheKind::None)
    return benchCacheConfig(c, o, pool);
  ConfigResult r;
  std::vector<Tensor> inputs = makeInputs(c, configSeed(c, o.seed));
  AttncKernel::Inputs args;
  for (const Tensor &t : inputs)
    args.push_back({t.name, t.pointer()});
  int64_t outSize = 1;
  for (int64_t d : outputShape(c))
    outSize *= d;
  const int64_t width = outputShape(c).back();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> outA(outSize, nan), outN(outSize, nan), outB(outSize, nan);
  // A 16-bit `out`: attnc writes bits here (all ones: a NaN in f16 and bf16),
  // widened into outA after the checked run.
  std::vector<uint16_t> outBits(c.dtype == Dtype::F32 ? 0 : outSize, 0xffff);
  void *outAttnc = outBits.empty() ? static_cast<void *>(outA.data()) : outBits.data();

  // --- attnc: compile (timed) and one run --------------------------------
  // Packed: the kernel's B counts the sequences.
  const int64_t kernelB = c.kind == Kind::Packed ? int64_t(c.seqLens.size()) : c.B;
  std::unique_ptr<AttncKernel> kernel = compileAndRunOnce(
      c, o, r.attnc, [&](AttncKernel &k) { return k.run(args, outAttnc, kernelB, c.Lq, c.Lk); },
      outBits, outA);
  auto runAttnc = [&] { return kernel->run(args, outAttnc, kernelB, c.Lq, c.Lk); };
  const bool attncRuns = r.attnc.status == "ok";

  // --- the naive referee, whole or on the first and last rows -------------
  const bool naiveWhole = c.kind != Kind::Sdpa || c.Lq <= 2 * kCheckRows ||
                          c.flops() <= o.naiveMaxFlops;
  r.checkRows = naiveWhole ? "all" : "first and last 32 query rows of every head";
  if (naiveWhole) {
    naiveAttention(c, inputs, outN.data(), pool, 0, c.Lq);
  } else {
    naiveAttention(c, inputs, outN.data(), pool, 0, kCheckRows);
    naiveAttention(c, inputs, outN.data(), pool, c.Lq - kCheckRows, c.Lq);
  }

  // --- OpenBLAS, one run --------------------------------------------------
  BlasAttention blas(c, pool);
  blas.run(inputs, outB.data());

  // --- checks, before any timing ------------------------------------------
  // attnc's output is the reference once it agrees with the naive loop;
  // otherwise the naive loop is (on the rows it computed).
  double maxV = 0; // (rows with projections have no v)
  for (const Tensor &t : inputs)
    if (t.name == "v")
      maxV = maxAbs(t.data);
  r.tolerance = tolerance(c, outN, maxV);
  r.naive.status = "ok";
  r.blas.status = "ok";
  bool attncAgrees = false;
  if (attncRuns) {
    r.attnc.maxErr = maxDiff(outA, outN, width, c.Lq, naiveWhole);
    r.attnc.checkedAgainst = "naive";
    attncAgrees = r.attnc.maxErr <= r.tolerance;
    if (attncAgrees) {
      r.naive.maxErr = r.attnc.maxErr;
      r.naive.checkedAgainst = "attnc";
    }
    if (!attncAgrees) {
      r.attnc.status = "wrong";
      r.attnc.note = "attnc disagrees with the naive loop: max |diff| " +
                     std::to_string(r.attnc.maxErr);
      loud(c, r.attnc.note);
    }
  }
  checkBlas(c, r, attncAgrees ? outA : outN, attncAgrees ? "attnc" : "naive", outB, width,
            attncAgrees || naiveWhole);
  const std::vector<float> *torchRef = nullptr;
  if (attncAgrees) {
    torchRef = &outA;
    r.refSource = "attnc";
  } else if (r.blas.status == "ok") {
    torchRef = &outB;
    r.refSource = naiveWhole ? "OpenBLAS (agrees with naive)"
                             : "OpenBLAS (agrees with naive on checked rows)";
  }
  if (o.torchInputs)
    writeTorchInputs(c, o, inputs, torchRef, r);

  // --- timing -------------------------------------------------------------
  timeAttnc(c, pool, kernel.get(), runAttnc, r);
  if (c.flops() <= o.naiveMaxFlops) {
    r.naive.timing = timeIt([&] { naiveAttention(c, inputs, outN.data(), pool, 0, c.Lq); });
    r.naive.timed = true;
  } else {
    r.naive.note = "checked, not timed: " + gflop(c.flops()) +
                   " GFLOP per run is above the naive budget (--naive-max-gflop)";
  }
  r.blas.timing = timeIt([&] { blas.run(inputs, outB.data()); });
  r.blas.timed = true;
  if (o.keep.count(c.id) && kernel && r.attnc.status == "ok") {
    // The kernel, its inputs (moving the vector keeps each tensor's data, so
    // `args` stays valid) and its output buffer, owned by the closure.
    struct Kept {
      std::unique_ptr<AttncKernel> kernel;
      std::vector<Tensor> inputs;
      AttncKernel::Inputs args;
      std::vector<float> outA;
      std::vector<uint16_t> outBits;
    };
    auto kept = std::make_shared<Kept>(
        Kept{std::move(kernel), std::move(inputs), args, std::move(outA), std::move(outBits)});
    r.rerun = [kept, kernelB, Lq = c.Lq, Lk = c.Lk] {
      void *out = kept->outBits.empty() ? static_cast<void *>(kept->outA.data())
                                        : kept->outBits.data();
      kept->kernel->run(kept->args, out, kernelB, Lq, Lk);
    };
  }
  return r;
}

} // namespace attnc_bench
