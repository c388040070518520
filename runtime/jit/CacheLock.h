//===- CacheLock.h - The per-key lock of the run-time compilation cache -*- C++ -*-===//
//
// A second process that wants a key being compiled waits for the first and
// then loads its entry. The wait is bounded ($ATTNC_LOCK_TIMEOUT seconds,
// default 120): a stopped or hung holder produces an error naming the lock
// file instead of blocking forever. The holder removes the lock file when it
// is done (success or failure), so no empty `.lock` files accumulate.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace attnc::jit {

class CacheLock {
public:
  CacheLock() = default;
  ~CacheLock();
  CacheLock(const CacheLock &) = delete;
  CacheLock &operator=(const CacheLock &) = delete;

  /// Takes the lock at `path`, waiting at most `timeoutSeconds`. False (with
  /// a message) only on timeout; where the file system has no working locks
  /// it returns true without holding one (rename keeps entries whole anyway).
  bool acquire(const std::string &path, double timeoutSeconds, std::string &error);
  /// True when this process holds the key: no one else is writing it.
  bool held() const { return held_; }

private:
  std::string path_;
  int fd_ = -1;
  bool held_ = false;
};

/// $ATTNC_LOCK_TIMEOUT as seconds (a non-negative number), else 120.
double lockTimeoutSeconds();

} // namespace attnc::jit
