//===- AttncKernel.cpp - Compile an .attn kernel with attnc and load it ---===//
//
// attnc runs as a child process (posix_spawn) with its output captured in a
// log, under a time limit. The argument list of NAME_run is read from the
// generated header, so the call matches whatever dynamic sizes the kernel
// kept; every argument is pointer-sized (pointers and int64_t), which makes a
// call with N integer-class arguments ABI-correct on x86-64 and AArch64.
//
//===----------------------------------------------------------------------===//
#include "bench/src/AttncKernel.h"

#include "bench/src/Timing.h"

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <utility>

extern char **environ;

namespace attnc_bench {

static constexpr double kCompileTimeLimit = 600.0; // seconds

std::string extractKernel(const std::string &text, const std::string &name,
                          std::string &error) {
  std::istringstream in(text);
  std::string line, out;
  int depth = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    std::string code = line.substr(0, line.find('#'));
    code = code.substr(0, code.find("//"));
    if (!inside) {
      std::istringstream words(code);
      std::string kw, id;
      words >> kw >> id;
      if (kw == "kernel" && (id == name || id == name + "{")) {
        inside = true;
        depth = 0;
      }
    }
    if (!inside)
      continue;
    out += line + "\n";
    for (char ch : code) {
      depth += ch == '{';
      depth -= ch == '}';
    }
    if (depth <= 0 && code.find('}') != std::string::npos)
      return out;
  }
  error = inside ? "kernel '" + name + "' is not closed in kernels.attn"
                 : "no kernel '" + name + "' in kernels.attn";
  return "";
}

static std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first line of the log that says "error", else its first line.
static std::string firstError(const std::string &log) {
  std::istringstream in(log);
  std::string line, first;
  while (std::getline(in, line)) {
    if (first.empty() && !line.empty())
      first = line;
    if (line.find("error") != std::string::npos)
      return line;
  }
  return first.empty() ? "(no output)" : first;
}

AttncKernel::AttncKernel(const std::string &attnc, const std::string &source,
                         const std::string &target, const std::string &name,
                         const std::string &dir)
    : kernelName(name) {
  std::string file = target.empty() ? name : name + "_" + target;
  std::string attnPath = dir + "/" + file + ".attn";
  std::string libPath = dir + "/" + file + ".so";
  std::string logPath = dir + "/" + file + ".log";
  {
    std::ofstream f(attnPath);
    f << source;
    if (!f) {
      messageText = "cannot write " + attnPath;
      return;
    }
  }
  std::vector<std::string> argv = {attnc, attnPath, "-o", libPath};
  if (!target.empty())
    argv.push_back("--target=" + target);
  std::vector<char *> cargv;
  for (auto &a : argv)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  double start = nowSeconds();
  int rc = posix_spawn(&pid, attnc.c_str(), &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    messageText = "cannot run " + attnc;
    return;
  }
  int wstatus = 0;
  bool timedOut = false;
  for (;;) {
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid)
      break;
    if (nowSeconds() - start > kCompileTimeLimit) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      timedOut = true;
      break;
    }
    usleep(2000);
  }
  compileTime = nowSeconds() - start;
  std::string log = readFile(logPath);
  if (timedOut) {
    messageText = "attnc did not finish within 600 s";
    return;
  }
  if (WIFSIGNALED(wstatus)) {
    messageText = "attnc died of signal " + std::to_string(WTERMSIG(wstatus));
    return;
  }
  int code = WEXITSTATUS(wstatus);
  if (code != 0) {
    if (code == 1)
      statusText = "unsupported";
    messageText = "attnc exit " + std::to_string(code) + ": " + firstError(log);
    return;
  }
  handle = dlopen(libPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = dlerror();
    messageText = std::string("dlopen: ") + (e ? e : "unknown error");
    return;
  }
  entry = dlsym(handle, (name + "_run").c_str());
  if (!entry) {
    messageText = "no symbol " + name + "_run in " + libPath;
    return;
  }
  haveHeader = readSignature(dir, name);
  statusText = "ok";
}

AttncKernel::~AttncKernel() {
  // The library is not dlclose'd: a Halide runtime inside it may still own
  // threads. releaseThreads() stops them.
}

void AttncKernel::releaseThreads() {
  if (!handle)
    return;
  using Fn = void (*)();
  if (auto fn = reinterpret_cast<Fn>(dlsym(handle, "halide_shutdown_thread_pool")))
    fn();
}

void AttncKernel::setThreads(int threads) {
  if (!handle)
    return;
  using Fn = int (*)(int);
  if (auto fn = reinterpret_cast<Fn>(dlsym(handle, "halide_set_num_threads")))
    fn(threads);
}

static std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool AttncKernel::readSignature(const std::string &dir, const std::string &name) {
  // The header lands beside the library; its name is not pinned down by the
  // contract, so look through every header in the folder.
  DIR *d = opendir(dir.c_str());
  if (!d)
    return false;
  std::string decl;
  while (dirent *e = readdir(d)) {
    std::string file = e->d_name;
    if (file.size() < 2 || file.substr(file.size() - 2) != ".h")
      continue;
    std::string text = readFile(dir + "/" + file);
    size_t at = text.find("int " + name + "_run(");
    if (at == std::string::npos)
      continue;
    size_t open = text.find('(', at), close = text.find(')', open);
    if (close != std::string::npos) {
      decl = text.substr(open + 1, close - open - 1);
      break;
    }
  }
  closedir(d);
  if (decl.empty())
    return false;
  std::istringstream parts(decl);
  std::string part;
  while (std::getline(parts, part, ',')) {
    part = trim(part);
    size_t end = part.size();
    while (end > 0 && !(std::isalnum((unsigned char)part[end - 1]) || part[end - 1] == '_'))
      --end;
    size_t begin = end;
    while (begin > 0 && (std::isalnum((unsigned char)part[begin - 1]) || part[begin - 1] == '_'))
      --begin;
    params.push_back({part.substr(begin, end - begin),
                      part.find('*') != std::string::npos});
  }
  return true;
}

template <size_t... I>
static int callWith(void *fn, const intptr_t *a, std::index_sequence<I...>) {
  using Fn = int (*)(decltype((void)I, intptr_t())...);
  return reinterpret_cast<Fn>(fn)(a[I]...);
}

template <size_t N> static int callN(void *fn, const std::vector<intptr_t> &a) {
  return callWith(fn, a.data(), std::make_index_sequence<N>());
}

int AttncKernel::run(const Inputs &inputs, void *out, int64_t B, int64_t Lq,
                     int64_t Lk, const Sizes &sizes) {
  auto size = [&](const std::string &n, int64_t &value) {
    for (auto &s : sizes)
      if (s.first == n) {
        value = s.second;
        return true;
      }
    return false;
  };
  auto find = [&](const std::string &n) -> const void * {
    for (auto &in : inputs)
      if (in.first == n)
        return in.second;
    return nullptr;
  };
  std::vector<intptr_t> args;
  if (haveHeader) {
    for (const Param &p : params) {
      int64_t value = 0;
      if (p.name == "out") {
        args.push_back(reinterpret_cast<intptr_t>(out));
      } else if (!p.pointer && size(p.name, value)) {
        args.push_back(value);
      } else if (!p.pointer && (p.name == "B" || p.name == "Lq" || p.name == "Lk" ||
                                p.name == "Tq" || p.name == "Tk")) {
        // Packed batches name their token totals Tq, Tk.
        args.push_back(p.name == "B" ? B : (p.name == "Lq" || p.name == "Tq") ? Lq : Lk);
      } else if (const void *ptr = find(p.name)) {
        args.push_back(reinterpret_cast<intptr_t>(ptr));
      } else {
        messageText = kernelName + "_run wants argument '" + p.name +
                      "' which this configuration does not provide";
        return -1000;
      }
    }
  } else {
    // No header: the contract order with every size fixed (bench/kernels.attn
    // fixes all sizes), i.e. the inputs in order, then out.
    for (auto &in : inputs)
      args.push_back(reinterpret_cast<intptr_t>(in.second));
    args.push_back(reinterpret_cast<intptr_t>(out));
  }
  switch (args.size()) {
#define ATTNC_BENCH_CALL(n)                                                    \
  case n:                                                                      \
    return callN<n>(entry, args);
    ATTNC_BENCH_CALL(1) ATTNC_BENCH_CALL(2) ATTNC_BENCH_CALL(3)
    ATTNC_BENCH_CALL(4) ATTNC_BENCH_CALL(5) ATTNC_BENCH_CALL(6)
    ATTNC_BENCH_CALL(7) ATTNC_BENCH_CALL(8) ATTNC_BENCH_CALL(9)
    ATTNC_BENCH_CALL(10) ATTNC_BENCH_CALL(11) ATTNC_BENCH_CALL(12)
    ATTNC_BENCH_CALL(13) ATTNC_BENCH_CALL(14) ATTNC_BENCH_CALL(15)
    ATTNC_BENCH_CALL(16)
#undef ATTNC_BENCH_CALL
  default:
    messageText = "unexpected argument count " + std::to_string(args.size());
    return -1000;
  }
}

} // namespace attnc_bench
