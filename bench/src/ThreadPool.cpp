//===- ThreadPool.cpp - A fixed pool of pinned worker threads -------------===//
//
// Workers sleep on a condition variable between jobs; a job is a function
// run once per worker, and parallelFor builds dynamic scheduling on top of it
// with an atomic item counter. Pinning keeps runs reproducible: a worker does
// not migrate between cores in the middle of a timed run.
//
//===----------------------------------------------------------------------===//
#include "bench/src/ThreadPool.h"

#include <atomic>
#include <pthread.h>
#include <sched.h>

namespace attnc_bench {

int availableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return static_cast<int>(std::thread::hardware_concurrency());
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

// The index-th CPU of the process mask, so pinning honours taskset.
static int nthAllowedCpu(int index) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return index;
  int count = CPU_COUNT(&set);
  if (count == 0)
    return index;
  int want = index % count;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set) && want-- == 0)
      return cpu;
  return index;
}

ThreadPool::ThreadPool(int threads) {
  if (threads < 1)
    threads = 1;
  for (int t = 0; t < threads; ++t) {
    int cpu = nthAllowedCpu(t);
    workers.emplace_back([this, t] { workerLoop(t); });
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(workers.back().native_handle(), sizeof(set), &set);
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (auto &w : workers)
    w.join();
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)> *fn;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping)
        return;
      seen = generation;
      fn = job;
    }
    (*fn)(index);
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (--pending == 0)
        done.notify_all();
    }
  }
}

void ThreadPool::runOnAll(const std::function<void(int)> &fn) {
  std::unique_lock<std::mutex> lock(mutex);
  job = &fn;
  pending = size();
  ++generation;
  wake.notify_all();
  done.wait(lock, [&] { return pending == 0; });
  job = nullptr;
}

void ThreadPool::parallelFor(int64_t n,
                             const std::function<void(int64_t, int)> &fn) {
  std::atomic<int64_t> next{0};
  runOnAll([&](int worker) {
    for (int64_t item = next++; item < n; item = next++)
      fn(item, worker);
  });
}

} // namespace attnc_bench
