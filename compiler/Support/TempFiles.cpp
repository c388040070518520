//===- TempFiles.cpp - Temporary files that never outlive the compile ------===//
//
// The removal table is a static array of fixed-size path buffers with an
// atomic state per slot: a signal handler may only call async-signal-safe
// functions, so it cannot walk a std::vector or take a lock. A path that does
// not fit, or a full table, only loses signal-time removal; the destructor
// still removes the file.
//
//===----------------------------------------------------------------------===//
#include "compiler/Support/TempFiles.h"
#include "compiler/Support/EnvironmentError.h"
#include "compiler/Support/Signals.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace attnc {

namespace {

constexpr int kSlots = 64;
constexpr size_t kMaxPath = 4096;
enum SlotState : int { Free = 0, Filling = 1, Armed = 2 };

struct Slot {
  std::atomic<int> state{Free};
  char path[kMaxPath];
};
Slot slots[kSlots];

int arm(const std::string &path) {
  if (path.size() >= kMaxPath)
    return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = Free;
    if (!slots[i].state.compare_exchange_strong(expected, Filling))
      continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(Armed);
    return i;
  }
  return -1;
}

void onSignal(int sig) {
  removeTempFilesNow();
  // SA_RESETHAND restored the default action; SA_NODEFER lets it act now.
  raise(sig);
}

} // namespace

TempFile::TempFile(const std::string &suffix) {
  const char *env = std::getenv("TMPDIR");
  bool fromEnv = env && *env;
  std::string dir = fromEnv ? env : "/tmp";
  std::string pattern = dir + "/attnc-XXXXXX" + suffix;
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  int fd = mkstemps(buf.data(), (int)suffix.size());
  if (fd < 0)
    throw EnvironmentError("cannot create a temporary file in '" + dir + "'" +
                           (fromEnv ? " (TMPDIR)" : "") + ": " + errnoText(errno) +
                           (fromEnv ? "; set TMPDIR to a writable folder" : ""));
  close(fd);
  path_ = buf.data();
  slot_ = arm(path_);
}

TempFile::~TempFile() {
  // Unlink first: a signal in between only repeats the unlink.
  unlink(path_.c_str());
  if (slot_ >= 0)
    slots[slot_].state.store(Free);
}

void removeTempFilesNow() noexcept {
  for (Slot &slot : slots)
    if (slot.state.load() == Armed)
      unlink(slot.path);
}

void removeTempFilesOnSignals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN)
      continue;
    setSignalHandler(sig, onSignal, SA_RESETHAND | SA_NODEFER);
  }
}

} // namespace attnc
