//===- CacheLock.cpp - The per-key lock of the run-time compilation cache -===//
//
// flock on `attnc-KEY.lock`, polled with LOCK_NB so the wait can end. The
// holder unlinks the file before closing it; a waiter that then gets the
// lock on the unlinked inode sees that the path no longer names the file it
// locked and starts over on the new one, so two processes never both
// believe they hold the key.
//
//===----------------------------------------------------------------------===//
#include "runtime/jit/CacheLock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace attnc::jit {

double lockTimeoutSeconds() {
  if (const char *text = std::getenv("ATTNC_LOCK_TIMEOUT"); text && *text) {
    char *end = nullptr;
    double value = std::strtod(text, &end);
    if (end && *end == '\0' && std::isfinite(value) && value >= 0)
      return value;
  }
  return 120;
}

namespace {
bool sameFile(int fd, const std::string &path) {
  struct stat opened, named;
  return fstat(fd, &opened) == 0 && stat(path.c_str(), &named) == 0 &&
         opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}
} // namespace

bool CacheLock::acquire(const std::string &path, double timeoutSeconds, std::string &error) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(timeoutSeconds));
  path_ = path;
  while (true) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return true; // no lock file possible: go on unlocked
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR)
        continue;
      if (errno != EWOULDBLOCK) {
        close(fd);
        return true; // no working locks here
      }
      if (Clock::now() >= deadline) {
        close(fd);
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", timeoutSeconds);
        error = "timed out after " + std::string(seconds) +
                " s waiting for the cache lock '" + path +
                "': another process is compiling the same source and has not finished "
                "(if no such process is running, delete the file; ATTNC_LOCK_TIMEOUT "
                "sets the wait in seconds)";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (sameFile(fd, path)) {
      fd_ = fd;
      held_ = true;
      return true;
    }
    close(fd); // the previous holder removed this file: lock the new one
  }
}

CacheLock::~CacheLock() {
  if (fd_ < 0)
    return;
  if (held_)
    unlink(path_.c_str()); // before the close that releases the lock
  close(fd_);
}

} // namespace attnc::jit
