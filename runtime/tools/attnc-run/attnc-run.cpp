//===- attnc-run.cpp - Run an attnc kernel on .npy files ------------------===//
//
// `attnc-run LIB.so|MODEL.attn [--kernel NAME] --in ARG=FILE.npy ... --inout
// ARG=FILE.npy ... --out ARG=FILE.npy` (docs/tools.md §4): loads the library
// (or compiles the .attn file through the run-time cache) with libattnrt's
// C++ API, reads the inputs and in-out arguments (KV caches), allocates
// outputs from the shapes the inputs imply, runs (or times with --bench) and
// writes the outputs and the updated in-out arguments back, all or nothing.
// Exit codes: 0 success, 1 an error in the inputs or the library or a kernel
// that failed (no file changed), 2 a bad command line.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.hpp"
#include "runtime/Npy.h"
#include "runtime/tools/attnc-run/HalfFloatFiles.h"
#include "runtime/tools/attnc-run/OutputFiles.h"
#include "runtime/tools/attnc-run/RunOptions.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

using attnc::runtime::NpyArray;
using attnc::run::RunOptions;

namespace {

/// Reported as "attnc-run: error: MESSAGE" with exit code 1.
struct RunError {
  std::string message;
};

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string join(const std::vector<std::string> &items) {
  std::string s;
  for (const std::string &item : items)
    s += (s.empty() ? "" : ", ") + item;
  return s;
}

attn::Library openLibrary(const RunOptions &options) {
  const std::string &path = options.library;
  try {
    if (!endsWith(path, ".attn"))
      return attn::Library::open(path);
    // Run-time compilation through the cache, the same entry point an app
    // uses; every kernel of the file is compiled, --kernel selects later.
    attn::Library lib = attn::Library::compileFile(path);
    if (options.verbose)
      std::fprintf(stderr, "attnc-run: %s '%s' (%s)\n",
                   lib.fromCache() ? "loaded from the cache:" : "compiled into the cache:",
                   path.c_str(), lib.path().c_str());
    return lib;
  } catch (const attn::Error &e) {
    throw RunError{e.what()};
  }
}

attn::Kernel selectKernel(const attn::Library &lib, const std::string &path,
                          const std::string &name) {
  std::vector<attn::Kernel> kernels = lib.kernels();
  std::vector<std::string> names;
  for (const attn::Kernel &k : kernels)
    names.push_back(k.name());
  if (name.empty()) {
    if (kernels.size() == 1)
      return kernels[0];
    throw RunError{"'" + path + "' holds several kernels (" + join(names) +
                   "); choose one with --kernel"};
  }
  for (const attn::Kernel &k : kernels)
    if (k.name() == name)
      return k;
  throw RunError{"'" + path + "' has no kernel '" + name + "'; its kernels are " +
                 join(names)};
}

void listKernels(const attn::Library &lib) {
  for (const attn::Kernel &k : lib.kernels()) {
    std::printf("kernel %s (target %s)\n", k.name().c_str(), k.target().c_str());
    // One line per compiled variant, best first (docs/targets.md).
    std::string variants = k.variants();
    for (size_t pos = 0; pos < variants.size();) {
      size_t end = variants.find('\n', pos);
      if (end == std::string::npos)
        end = variants.size();
      std::printf("  variant %s\n", variants.substr(pos, end - pos).c_str());
      pos = end + 1;
    }
    // Columns as wide as this kernel's directions ("inout" for KV caches)
    // and names need.
    std::vector<attn::Argument> args = k.arguments();
    int directionWidth = 3, nameWidth = 10;
    for (const attn::Argument &a : args) {
      directionWidth = std::max(directionWidth, int(std::strlen(a.direction())));
      nameWidth = std::max(nameWidth, int(a.name.size()));
    }
    for (const attn::Argument &a : args)
      std::printf("  %-*s %-*s %s\n", directionWidth, a.direction(), nameWidth,
                  a.name.c_str(), a.shapeText.c_str());
  }
}

/// The keys each query of a KV-cache kernel attends, summed over the batch:
/// sum of cache_len[b] + Lq (0 without a cache_len argument).
double cachedKeys(const std::map<std::string, size_t> &index,
                  const std::vector<attn_tensor> &args, int64_t lq) {
  auto it = index.find("cache_len");
  if (it == index.end())
    return 0;
  const attn_tensor &lens = args[it->second];
  double keys = 0;
  for (int64_t b = 0; lens.rank == 1 && b < lens.shape[0]; ++b)
    keys += double(static_cast<const int32_t *>(lens.data)[b] + lq);
  return keys;
}

/// The attention FLOPs of docs/tools.md §6, 2*B*H*Lq*Lk*(D+Dv), where a
/// KV-cache kernel's B*Lk is its sequences' keys, cache_len[b] + Lq each; 0
/// when the kernel's signature does not name all of these sizes.
double attentionFlops(const attn::Kernel &kernel, const std::map<std::string, size_t> &index,
                      const std::vector<attn_tensor> &args) {
  std::map<std::string, int64_t> v;
  for (const char *name : {"B", "H", "Lq", "Lk", "D", "Dv"}) {
    int64_t value = 0;
    if (attn_kernel_size(kernel.c(), args.data(), args.size(), name, &value) ==
        ATTN_OK)
      v[name] = value;
  }
  if (v.count("Lq")) {
    if (double keys = cachedKeys(index, args, v["Lq"]); keys > 0) {
      v["B"] = 1; // B * Lk: the keys of all sequences
      v["Lk"] = int64_t(keys);
    }
  }
  if (!v.count("Lk") && v.count("Lq"))
    v["Lk"] = v["Lq"]; // self-attention: one sequence length
  if (!v.count("Dv") && v.count("D"))
    v["Dv"] = v["D"];
  for (const char *name : {"B", "H", "Lq", "Lk", "D", "Dv"})
    if (!v.count(name))
      return 0;
  return 2.0 * double(v["B"]) * double(v["H"]) * double(v["Lq"]) *
         double(v["Lk"]) * double(v["D"] + v["Dv"]);
}

void runKernel(const attn::Kernel &kernel, const RunOptions &options) {
  std::vector<attn::Argument> args = kernel.arguments();
  std::map<std::string, size_t> index;
  std::vector<std::string> names;
  for (size_t i = 0; i < args.size(); ++i) {
    index[args[i].name] = i;
    names.push_back(args[i].name);
  }

  // Every binding must name an argument of the right direction: an in-out
  // argument (a KV cache) given with --in would be updated and then lost.
  enum Direction { In, Out, InOut };
  auto directionOf = [](const attn::Argument &a) {
    return a.isOutput ? Out : a.isWritten ? InOut : In;
  };
  static const char *const kWhat[] = {"an input", "an output", "an in-out argument"};
  static const char *const kOption[] = {"--in", "--out", "--inout"};
  std::vector<const std::string *> files(args.size(), nullptr);
  auto bind = [&](const std::pair<std::string, std::string> &b, Direction given) {
    auto it = index.find(b.first);
    if (it == index.end())
      throw RunError{"kernel '" + kernel.name() + "' has no argument '" +
                     b.first + "'; its arguments are " + join(names)};
    const attn::Argument &a = args[it->second];
    Direction want = directionOf(a);
    if (want != given)
      throw RunError{"'" + b.first + "' is " + kWhat[want] + " of kernel '" +
                     kernel.name() + "'" +
                     (want == InOut ? " (the kernel updates it in place)" : "") +
                     "; pass it with " + kOption[want] +
                     (want == InOut ? " " + b.first + "=FILE.npy: the file is read, then "
                                      "written back with the updated array"
                                    : "")};
    files[it->second] = &b.second;
  };
  for (const auto &b : options.inputs)
    bind(b, In);
  for (const auto &b : options.outputs)
    bind(b, Out);
  for (const auto &b : options.inouts)
    bind(b, InOut);
  for (Direction d : {In, InOut}) {
    std::vector<std::string> missing;
    for (size_t i = 0; i < args.size(); ++i)
      if (directionOf(args[i]) == d && !files[i])
        missing.push_back(args[i].name + " : " + args[i].shapeText);
    if (!missing.empty())
      throw RunError{std::string("missing ") + kOption[d] + " for " +
                     (d == In ? "input" : "in-out argument") +
                     (missing.size() > 1 ? "s " : " ") + join(missing)};
  }

  // Inputs from files; outputs shaped by what the inputs imply.
  std::vector<NpyArray> arrays(args.size());
  std::vector<attn_tensor> tensors(args.size(), attn_tensor{});
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].isOutput)
      continue;
    std::string error;
    if (!attnc::runtime::readNpy(*files[i], arrays[i], error))
      throw RunError{"argument '" + args[i].name + "': " + error};
    bool ok = args[i].isWritten
                  ? attnc::run::checkInoutFile(args[i].name, args[i].dtype, arrays[i], error)
                  : attnc::run::convertInput(args[i].name, args[i].dtype, arrays[i], error);
    if (!ok)
      throw RunError{error};
    tensors[i] = arrays[i].view();
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isOutput)
      continue;
    std::vector<int64_t> shape(args[i].dims.size());
    char err[1024];
    if (attn_kernel_output_shape(kernel.c(), tensors.data(), tensors.size(), i,
                                 shape.data(), err, sizeof err) != ATTN_OK)
      throw RunError{err};
    arrays[i] = NpyArray(args[i].dtype, shape);
    if (!arrays[i].data())
      throw RunError{"argument '" + args[i].name + "': out of memory"};
    tensors[i] = arrays[i].view();
  }

  if (options.threads >= 0)
    attn_set_num_threads(options.threads);
  auto runOnce = [&]() {
    char err[1024];
    if (attn_kernel_run(kernel.c(), tensors.data(), tensors.size(), err,
                        sizeof err) != ATTN_OK)
      throw RunError{err};
  };
  runOnce(); // also the warm-up of --bench
  if (options.bench > 0) {
    std::vector<double> ms;
    for (int r = 0; r < options.bench; ++r) {
      auto start = std::chrono::steady_clock::now();
      runOnce();
      auto stop = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ms.size() % 2 ? ms[ms.size() / 2]
                                  : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
    // A backward kernel (it takes d_out) counts 2.5x the forward's FLOPs,
    // FlashAttention-2's convention (docs/tools.md §6).
    bool backward = index.count("d_out") != 0;
    double flops = attentionFlops(kernel, index, tensors) * (backward ? 2.5 : 1.0);
    std::printf("%s: %d runs, median %.4f ms", kernel.name().c_str(),
                options.bench, median);
    if (flops > 0 && median > 0)
      std::printf(", %.2f GFLOP/s (%s2*%s*(D+Dv) = %.0f FLOP)\n", flops / (median * 1e6),
                  backward ? "2.5 x " : "",
                  index.count("cache_len") ? "H*Lq*sum(cache_len+Lq)" : "B*H*Lq*Lk", flops);
    else
      std::printf(", GFLOP/s n/a (the signature does not name B, H, Lq, Lk, D "
                  "and Dv)\n");
  }

  // All or nothing: every output and in-out argument goes to a temporary
  // file first; only when all are written are they renamed over their
  // destinations. In-out arguments go back in the type they were read as.
  attnc::run::OutputBatch batch;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!(args[i].isOutput || args[i].isWritten) || !files[i])
      continue;
    std::string error, temporary;
    NpyArray widened;
    const NpyArray *out = attnc::run::outputToWrite(
        arrays[i], options.raw || args[i].isWritten, widened);
    if (!out)
      throw RunError{"argument '" + args[i].name + "': out of memory"};
    if (!attnc::runtime::writeNpyTemporary(*files[i], out->dtype(), out->shape(),
                                           out->data(), temporary, error))
      throw RunError{"argument '" + args[i].name + "': " + error};
    batch.add(temporary, *files[i]);
  }
  std::string error;
  if (!batch.commit(error))
    throw RunError{error};
}

} // namespace

int main(int argc, char **argv) {
  RunOptions options;
  std::string error;
  if (!attnc::run::parseRunOptions(argc, argv, options, error)) {
    std::fprintf(stderr, "attnc-run: error: %s\n%s", error.c_str(),
                 attnc::run::runUsage());
    return 2;
  }
  if (options.help) {
    std::fputs(attnc::run::runUsage(), stdout);
    return 0;
  }
  if (options.version) {
    std::printf("attnc-run (libattnrt %s)\n", attn_version());
    return 0;
  }
  // Before anything is read or compiled: no output may replace a file the
  // run reads or another output.
  std::vector<attnc::run::NamedFile> readFiles{{"the library", options.library}}, outputs;
  for (const auto &[arg, file] : options.inputs)
    readFiles.push_back({"input '" + arg + "'", file});
  for (const auto &[arg, file] : options.outputs)
    outputs.push_back({"output '" + arg + "'", file});
  // An in-out file is read and then rewritten, so it is checked as an
  // output: it may not be the library, an input's, an output's or another
  // in-out argument's file.
  for (const auto &[arg, file] : options.inouts)
    outputs.push_back({"in-out '" + arg + "'", file});
  if (!attnc::run::checkOutputsAreDistinct(readFiles, outputs, error)) {
    std::fprintf(stderr, "attnc-run: error: %s\n", error.c_str());
    return 2;
  }
  try {
    attn::Library lib = openLibrary(options);
    if (options.list) {
      listKernels(lib);
      return 0;
    }
    attn::Kernel kernel = selectKernel(lib, options.library, options.kernel);
    runKernel(kernel, options);
    return 0;
  } catch (const RunError &e) {
    std::fprintf(stderr, "attnc-run: error: %s\n", e.message.c_str());
  } catch (const attn::Error &e) {
    std::fprintf(stderr, "attnc-run: error: %s\n", e.what());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "attnc-run: error: out of memory\n");
  }
  return 1;
}
