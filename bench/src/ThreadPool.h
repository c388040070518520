//===- ThreadPool.h - A fixed pool of pinned worker threads -----*- C++ -*-===//
//
// The benchmark's own threads: a fixed number of workers, each pinned to one
// CPU with pthread_setaffinity_np, used by the machine probes and the
// baselines. The caller never runs work itself, so its CPU mask (which Halide's
// thread pool inherits) stays unpinned.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attnc_bench {

class ThreadPool {
public:
  /// Starts `threads` workers; worker t is pinned to CPU t modulo the CPU count.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return static_cast<int>(workers.size()); }

  /// Runs fn(workerIndex) once on every worker and waits for all of them.
  void runOnAll(const std::function<void(int)> &fn);

  /// Hands items [0, n) out one at a time to the workers: fn(item, worker).
  void parallelFor(int64_t n, const std::function<void(int64_t, int)> &fn);

private:
  void workerLoop(int index);

  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake, done;
  const std::function<void(int)> *job = nullptr;
  uint64_t generation = 0;
  int pending = 0;
  bool stopping = false;
};

/// Number of CPUs this process may run on.
int availableCpus();

} // namespace attnc_bench
