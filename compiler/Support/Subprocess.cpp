//===- Subprocess.cpp - Running the system's C compiler -------------------===//
//
// posix_spawnp (no fork of a process that may hold gigabytes of compiler
// state) and a waitpid that survives EINTR. The messages distinguish a
// compiler that is missing, one that cannot be started, one that failed and
// one that was killed, each with the fix.
//
//===----------------------------------------------------------------------===//
#include "compiler/Support/Subprocess.h"
#include "compiler/Support/EnvironmentError.h"

#include <cerrno>
#include <cstdlib>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace attnc {

namespace {

std::vector<std::string> splitBlanks(const std::string &text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (c == ' ' || c == '\t') {
      if (!word.empty())
        words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty())
    words.push_back(word);
  return words;
}

/// $CC split at blanks, else `cc`; `fromEnv` tells which.
std::vector<std::string> cCompilerCommand(bool &fromEnv) {
  const char *env = std::getenv("CC");
  std::vector<std::string> argv = splitBlanks(env ? env : "");
  fromEnv = !argv.empty();
  if (!fromEnv)
    argv = {"cc"};
  return argv;
}

} // namespace

bool hasCCompiler() {
  bool fromEnv;
  std::string program = cCompilerCommand(fromEnv)[0];
  if (program.find('/') != std::string::npos)
    return access(program.c_str(), X_OK) == 0;
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    if (access((dir + "/" + program).c_str(), X_OK) == 0)
      return true;
    start = end + 1;
  }
  return false;
}

void runCCompiler(const std::vector<std::string> &args, const std::string &what) {
  bool fromEnv;
  std::vector<std::string> argv = cCompilerCommand(fromEnv);
  argv.insert(argv.end(), args.begin(), args.end());
  std::string name = "the C compiler '" + argv[0] + "'" + (fromEnv ? " (CC)" : "");

  std::vector<char *> cargs;
  for (std::string &a : argv)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  pid_t pid;
  int err = posix_spawnp(&pid, cargs[0], nullptr, nullptr, cargs.data(), environ);
  if (err == ENOENT)
    throw EnvironmentError(name + " was not found" +
                           (argv[0].find('/') == std::string::npos ? " on PATH" : "") +
                           (fromEnv ? ": set CC to an installed C compiler"
                                    : ": install gcc or set CC") +
                           " (needed to " + what + ")");
  if (err != 0)
    throw EnvironmentError("cannot run " + name + ": " + errnoText(err) + " (needed to " +
                           what + ")");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw EnvironmentError("waiting for " + name + " failed: " + errnoText(errno));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return;
  std::string how = WIFEXITED(status) ? "failed (exit status " +
                                            std::to_string(WEXITSTATUS(status)) + ")"
                                      : "was killed by signal " +
                                            std::to_string(WTERMSIG(status));
  throw EnvironmentError(name + " " + how + " while trying to " + what +
                         "; its messages, if any, are above (check CC, the linker and "
                         "free disk space)");
}

} // namespace attnc
