//===- RunOptions.cpp - attnc-run's command line --------------------------===//
//
// Accepts `--opt VALUE` and `--opt=VALUE`. Argument names are only checked
// for form here; whether the kernel has them is known after loading.
//
//===----------------------------------------------------------------------===//
#include "runtime/tools/attnc-run/RunOptions.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

namespace attnc::run {

const char *runUsage() {
  return "usage: attnc-run LIB.so|MODEL.attn [--kernel NAME] --in ARG=FILE.npy ...\n"
         "                 [--inout ARG=FILE.npy ...] [--out ARG=FILE.npy ...]\n"
         "                 [--raw] [--bench N] [--threads N]\n"
         "       attnc-run LIB.so|MODEL.attn --list\n"
         "\n"
         "Runs a kernel of an attnc kernel library on .npy inputs and writes .npy\n"
         "outputs (C-order little-endian <f4, <i4, |u1, <f2 or <u2). Outputs without\n"
         "--out are computed and not written. A MODEL.attn is compiled at run time\n"
         "into the cache, or loaded from it when it was compiled before.\n"
         "\n"
         "16-bit arguments: an f16 input takes <f2, or <f4 rounded to f16 on load;\n"
         "a bf16 input takes <f4 rounded to bf16 on load, or <u2 holding the raw\n"
         "bf16 bits (NumPy has no bfloat16). Rounding is to nearest even. f16 and\n"
         "bf16 outputs are written as <f4 (exactly) unless --raw is given.\n"
         "\n"
         "In-out arguments (the k_cache and v_cache of a KV-cache kernel) are read\n"
         "from their file and, after a successful run, the updated array is written\n"
         "back to the same file, in the file's own type: a 16-bit cache file must\n"
         "hold that type (<f2 for f16, <u2 bits for bf16), never <f4. A kernel that\n"
         "fails (a cache too small for the new tokens) changes no file.\n"
         "\n"
         "  --kernel NAME      the kernel to run (optional when the library has one)\n"
         "  --in ARG=FILE      an input argument from a .npy file\n"
         "  --inout ARG=FILE   an in-out argument: read from FILE, then updated in it\n"
         "  --out ARG=FILE     write an output argument to a .npy file\n"
         "  --raw              write f16 outputs as <f2 and bf16 outputs as <u2 bits\n"
         "  --bench N          time N runs; print the median and GFLOP/s\n"
         "  --threads N        Halide worker threads (0 = default)\n"
         "  --list             list the kernels and their arguments\n"
         "  -v, --verbose      say whether MODEL.attn was compiled or found in the\n"
         "                     cache ($ATTNC_CACHE_DIR, $XDG_CACHE_HOME/attnc or\n"
         "                     ~/.cache/attnc)\n"
         "  --help, --version\n";
}

namespace {
bool parseCount(const std::string &option, const std::string &text, int min,
                int &value, std::string &error) {
  errno = 0;
  char *end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min ||
      v > INT_MAX) {
    error = option + " expects an integer >= " + std::to_string(min) +
            ", got '" + text + "'";
    return false;
  }
  value = int(v);
  return true;
}

bool parseBinding(const std::string &option, const std::string &text,
                  std::pair<std::string, std::string> &binding,
                  std::string &error) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    error = option + " expects ARG=FILE.npy, got '" + text + "'";
    return false;
  }
  binding = {text.substr(0, eq), text.substr(eq + 1)};
  return true;
}
} // namespace

bool parseRunOptions(int argc, const char *const *argv, RunOptions &options,
                     std::string &error) {
  std::set<std::string> named;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string option = arg, value;
    bool hasValue = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        option = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        hasValue = true;
      }
    }
    auto takeValue = [&]() {
      if (hasValue)
        return true;
      if (i + 1 >= argc) {
        error = option + " expects a value";
        return false;
      }
      value = argv[++i];
      return true;
    };

    if (option == "--help" || option == "-h") {
      options.help = true;
    } else if (option == "--version") {
      options.version = true;
    } else if (option == "--raw") {
      options.raw = true;
    } else if (option == "--list") {
      options.list = true;
    } else if (option == "--verbose" || option == "-v") {
      options.verbose = true;
    } else if (option == "--kernel") {
      if (!takeValue())
        return false;
      if (value.empty()) {
        error = "--kernel expects a kernel name";
        return false;
      }
      options.kernel = value;
    } else if (option == "--in" || option == "--out" || option == "--inout") {
      if (!takeValue())
        return false;
      std::pair<std::string, std::string> binding;
      if (!parseBinding(option, value, binding, error))
        return false;
      if (!named.insert(binding.first).second) {
        error = "argument '" + binding.first + "' is given twice";
        return false;
      }
      (option == "--in"    ? options.inputs
       : option == "--out" ? options.outputs
                           : options.inouts)
          .push_back(binding);
    } else if (option == "--bench") {
      if (!takeValue() || !parseCount(option, value, 1, options.bench, error))
        return false;
    } else if (option == "--threads") {
      if (!takeValue() || !parseCount(option, value, 0, options.threads, error))
        return false;
    } else if (arg.size() > 1 && arg[0] == '-') {
      error = "unknown option '" + arg + "'";
      return false;
    } else if (options.library.empty()) {
      options.library = arg;
    } else {
      error = "unexpected argument '" + arg + "' (the library is '" +
              options.library + "')";
      return false;
    }
  }
  if (!options.help && !options.version && options.library.empty()) {
    error = "no kernel library given";
    return false;
  }
  return true;
}

} // namespace attnc::run
