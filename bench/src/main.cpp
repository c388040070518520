//===- main.cpp - attnc-bench: attnc against the machine and baselines ----===//
//
// One run measures the machine's roofs, then, per configuration of
// bench/src/Configs.cpp, checks and times attnc's kernel, the naive loop and
// the OpenBLAS baseline, and writes results.json into the results folder
// (bench/report.py turns it into table.md and roofline.png; bench/run.sh runs
// everything, including the PyTorch baseline). Usage: attnc-bench --help.
//
//===----------------------------------------------------------------------===//
#include "bench/src/BenchConfig.h"
#include "bench/src/BlasAttention.h"
#include "bench/src/Json.h"
#include "bench/src/Probes.h"
#include "bench/src/VecMath.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

using namespace attnc_bench;

static const char *kUsage = R"(usage: attnc-bench --out DIR [options]

Measures the FP32 FMA peak and triad bandwidth, then checks and times attnc's
kernels against a naive loop and OpenBLAS; writes DIR/results.json and the
PyTorch baseline's inputs under DIR/work/. bench/run.sh is the usual driver.

  --out DIR             results folder (created)
  --attnc PATH          the attnc compiler; without it only baselines run
  --kernels FILE        the kernels (default: bench/kernels.attn beside this source)
  --baselines-only      do not run attnc even if --attnc is given
  --quick               the smoke-test subset of configurations
  --only ID[,ID...]     only these configuration ids
  --threads N           threads for every implementation (default: all CPUs)
  --seed N              base seed of the inputs (default 20261121)
  --naive-max-gflop X   time the naive loop only up to X GFLOP per run (default 10)
  --no-torch-inputs     do not write .npy inputs for the PyTorch baseline
  --list                print the configuration ids and exit
)";

static bool readText(const std::string &path, std::string &text) {
  std::ifstream in(path);
  if (!in)
    return false;
  std::stringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

static void writeImpl(JsonWriter &j, const std::string &name, const ImplResult &r) {
  j.key(name).beginObject().field("status", r.status).field("note", r.note);
  if (r.compileSeconds >= 0)
    j.field("compile_s", r.compileSeconds);
  if (r.maxErr >= 0)
    j.field("max_err", std::fmin(r.maxErr, 1e30)) // 1e30: inf or nan
        .field("checked_against", r.checkedAgainst);
  if (r.timed)
    j.field("median_s", r.timing.median)
        .field("cpu_median_s", r.timing.cpuMedian)
        .field("min_s", r.timing.min)
        .field("max_s", r.timing.max).field("runs", r.timing.runs)
        .field("warmups", r.timing.warmups);
  j.endObject();
}

int main(int argc, char **argv) {
  Options opt;
  opt.threads = availableCpus();
  std::string kernelsPath = ATTNC_BENCH_DEFAULT_KERNELS;
  bool quick = false, baselinesOnly = false;
  std::string only;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    auto next = [&]() -> std::string {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "attnc-bench: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (arg == "--out") opt.outDir = next();
    else if (arg == "--attnc") opt.attnc = next();
    else if (arg == "--kernels") kernelsPath = next();
    else if (arg == "--baselines-only") baselinesOnly = true;
    else if (arg == "--quick") quick = true;
    else if (arg == "--only") only = "," + next() + ",";
    else if (arg == "--threads") opt.threads = std::atoi(next().c_str());
    else if (arg == "--seed") opt.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (arg == "--naive-max-gflop") opt.naiveMaxFlops = std::atof(next().c_str()) * 1e9;
    else if (arg == "--no-torch-inputs") opt.torchInputs = false;
    else if (arg == "--list") {
      for (const Config &c : allConfigs())
        std::printf("%-26s %s%s\n", c.id.c_str(), c.label.c_str(), c.quick ? "  (quick)" : "");
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "attnc-bench: unknown option '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  if (opt.outDir.empty() || opt.threads < 1) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (baselinesOnly)
    opt.attnc.clear();
  if (!opt.attnc.empty() && !readText(kernelsPath, opt.kernelsText)) {
    std::fprintf(stderr, "attnc-bench: cannot read %s\n", kernelsPath.c_str());
    return 2;
  }
  if (mkdir(opt.outDir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "attnc-bench: cannot create %s\n", opt.outDir.c_str());
    return 2;
  }
  // Pinned thread counts: Halide's pool (in every kernel library) and OpenBLAS.
  setenv("HL_NUM_THREADS", std::to_string(opt.threads).c_str(), 1);
  blasUseOneThreadPerCall();

  // Roofs on 1 thread and on every CPU, plus on the run's thread count when
  // --threads is neither: "% of roof" compares with the roof of the threads used.
  const int cpus = availableCpus();
  ThreadPool one(1), all(opt.threads), every(cpus);
  std::fprintf(stderr, "attnc-bench: %d thread(s), measuring the machine...\n", opt.threads);
  struct Roof {
    PeakResult p512, p256, pBf16;
    double triad = 0;
  };
  auto measure = [](ThreadPool &pool) {
    const int64_t triadElems = 32 << 20; // 3 arrays x 128 MiB, far beyond any L3
    return Roof{measureFmaPeak("avx512f", pool), measureFmaPeak("avx2", pool),
                measureFmaPeak("avx512bf16", pool), measureTriad(pool, triadElems)};
  };
  Roof roofOne = measure(one), roofAll = measure(every);
  Roof roofUsed = opt.threads == 1      ? roofOne
                  : opt.threads == cpus ? roofAll
                                        : measure(all);
  std::fprintf(stderr,
               "  FMA peak AVX-512 %.0f / %.0f GFLOP/s, AVX2 %.0f / %.0f, triad "
               "%.1f / %.1f GB/s (1 / %d threads)\n",
               roofOne.p512.gflops, roofAll.p512.gflops, roofOne.p256.gflops,
               roofAll.p256.gflops, roofOne.triad, roofAll.triad, cpus);

  JsonWriter j;
  char stamp[64];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&now));
  j.beginObject().field("version", 1).field("timestamp", stamp)
      .field("quick", quick).field("subset", !only.empty()).field("threads", opt.threads)
      .field("seed", std::to_string(opt.seed))
      .field("naive_max_gflop", opt.naiveMaxFlops / 1e9);
  j.key("machine").beginObject().field("cpu", cpuModelName())
      .field("cpus", cpus).field("openblas", blasDescription())
      .field("softmax_isa", vecMathIsa());
  j.key("peak_gflops").beginObject();
  auto peak = [&](PeakResult Roof::*which) {
    if ((roofOne.*which).isa == "none")
      return;
    j.key((roofOne.*which).isa).beginObject().field("1", (roofOne.*which).gflops)
        .field("all", (roofAll.*which).gflops).field("used", (roofUsed.*which).gflops)
        .endObject();
  };
  peak(&Roof::p512);
  peak(&Roof::p256);
  peak(&Roof::pBf16);
  j.endObject();
  j.key("triad_gbs").beginObject().field("1", roofOne.triad).field("all", roofAll.triad)
      .field("used", roofUsed.triad).endObject();
  j.endObject();
  j.key("attnc").beginObject().field("path", opt.attnc)
      .field("kernels", opt.attnc.empty() ? std::string() : kernelsPath).endObject();

  j.key("configs").beginArray();
  std::vector<const Config *> chosen;
  for (const Config &c : allConfigs())
    if ((!quick || c.quick) && (only.empty() || only.find("," + c.id + ",") != std::string::npos))
      chosen.push_back(&c);
  // Rows timed again in alternation after all rows (Config::alternateWith).
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const Config *c : chosen)
    for (const std::string &partner : c->alternateWith)
      for (const Config *other : chosen)
        if (other->id == partner) {
          pairs.emplace_back(c->id, other->id);
          opt.keep.insert(c->id);
          opt.keep.insert(other->id);
        }
  std::map<std::string, std::function<void()>> reruns;
  int index = 0;
  for (const Config *cp : chosen) {
    const Config &c = *cp;
    std::fprintf(stderr, "[%d/%zu] %s ...", ++index, chosen.size(), c.id.c_str());
    std::fflush(stderr);
    ConfigResult r = benchConfig(c, opt, all);
    if (r.rerun)
      reruns[c.id] = r.rerun;
    auto ms = [](const ImplResult &i) -> std::string {
      if (i.timed)
        return std::to_string(i.timing.median * 1e3).substr(0, 7) + " ms";
      return i.status == "ok" ? "checked, not timed" : i.status;
    };
    std::fprintf(stderr, " attnc %s | naive %s | OpenBLAS %s\n", ms(r.attnc).c_str(),
                 ms(r.naive).c_str(), ms(r.blas).c_str());
    j.beginObject().field("id", c.id).field("label", c.label)
        .field("kind", c.kindName()).field("mask", c.maskName())
        .field("window", c.window).field("sink", c.sink).field("rotary", c.rotary)
        .field("B", c.B).field("H", c.H).field("G", c.G)
        .field("Lq", c.Lq).field("Lk", c.Lk).field("D", c.D).field("Dv", c.Dv)
        .field("hidden", c.hidden).field("model_dim", c.modelDim)
        .field("flops", c.flops()).field("bytes", c.bytes())
        .field("dtype", dtypeName(c.dtype)).field("kv_dtype", dtypeName(c.kvDtype))
        .field("kv_bytes", c.kvBytes()).field("visible_pairs", c.visiblePairs())
        // the baselines read the f32 widening of 16-bit K and V
        .field("baseline_kv_bytes", c.kvBytes() * 4 / double(elementBytes(c.kvDtype)))
        .field("cache", c.cacheName()).field("compare_to", c.compareTo)
        .field("memory_bound", c.memoryBound).field("check_rows", r.checkRows)
        .field("tolerance", r.tolerance).field("ref_source", r.refSource);
    if (r.readGbs > 0)
      j.field("read_gbs", r.readGbs);
    if (r.pagedReadGbs > 0)
      j.field("paged_read_gbs", r.pagedReadGbs);
    if (!c.cacheLens.empty()) {
      j.key("cache_len").beginArray();
      for (int64_t len : c.cacheLens)
        j.value(len);
      j.endArray();
    }
    j.key("impls").beginObject();
    writeImpl(j, "attnc", r.attnc);
    writeImpl(j, "naive", r.naive);
    writeImpl(j, "openblas", r.blas);
    j.endObject().endObject();
  }
  j.endArray();
  j.key("pairs").beginArray();
  for (const auto &[a, b] : pairs) {
    if (!reruns.count(a) || !reruns.count(b))
      continue;
    std::fprintf(stderr, "alternating %s and %s ...", a.c_str(), b.c_str());
    std::fflush(stderr);
    PairTiming t = timeAlternately(reruns[a], reruns[b]);
    std::fprintf(stderr, " %.4g ms / %.4g ms (%d rounds)\n", t.aMedian * 1e3, t.bMedian * 1e3,
                 t.rounds);
    j.beginObject().field("a", a).field("b", b).field("a_median_s", t.aMedian)
        .field("b_median_s", t.bMedian).field("rounds", t.rounds).endObject();
  }
  j.endArray().endObject();
  reruns.clear(); // the kept kernels and inputs, before the report is written
  std::ofstream(opt.outDir + "/results.json") << j.str() << "\n";
  std::fprintf(stderr, "attnc-bench: wrote %s/results.json\n", opt.outDir.c_str());
  return 0;
}
