//===- ConcurrencyTest.cpp - Many threads, and libraries opened and closed ===//
//
// Kernels of one library run from many threads at once (each with its own
// outputs) while another thread changes the Halide thread count, and every
// result still matches the float64 reference. A kernel library is opened,
// run and closed hundreds of times: in the sanitizer build LeakSanitizer
// fails the test on any leak at exit; in every build the process's mappings
// and open files return to their level after warm-up and resident memory
// stays flat, so a leaked dlopen handle or Halide thread pool shows here.
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace attnc::edge;

namespace {

Problem problemFor(int index) {
  Problem p;
  if (index % 2 == 0) { // masked: GQA, causal, valid_len
    p.B = 2, p.H = 4, p.G = 2, p.Lq = 9 + index, p.Lk = 70 + 3 * index, p.D = 4, p.Dv = 4;
    p.scale = 0.5;
    p.causal = true;
    p.validLen = {int32_t(index * 5 % (p.Lk + 1)), int32_t(p.Lk)};
  } else { // decode
    p.Lq = 1 + index % 3, p.Lk = 200 + 17 * index, p.D = p.Dv = 8;
    p.scale = 1 / std::sqrt(8.0);
  }
  p.q = uniform(size_t(p.B) * p.H * p.Lq * p.D, uint32_t(90 + index));
  p.k = uniform(size_t(p.B) * p.G * p.Lk * p.D, uint32_t(190 + index));
  p.v = uniform(size_t(p.B) * p.G * p.Lk * p.Dv, uint32_t(290 + index));
  return p;
}

TEST(Concurrency, ManyThreadsRunKernelsOfOneLibrary) {
  constexpr int kThreads = 12, kRuns = 25;
  std::vector<Problem> problems;
  std::vector<Reference> refs;
  for (int t = 0; t < kThreads; ++t) {
    problems.push_back(problemFor(t));
    refs.push_back(reference(problems.back()));
  }
  attn::Kernel masked = edgeKernel("masked"), decode = edgeKernel("decode");
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  // Changes the thread count of the Halide pool(s) while kernels run.
  std::thread toggler([&] {
    int n = 1;
    while (!done.load()) {
      attn_set_num_threads(n);
      n = n % 4 + 1;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      const Problem &p = problems[size_t(t)];
      bool isMasked = t % 2 == 0;
      for (int r = 0; r < kRuns; ++r) {
        try {
          Result got = run(isMasked ? masked : decode, p, isMasked);
          if (maxAbsDiff(got.out, refs[size_t(t)].out) > errorBound(p))
            ++failures;
        } catch (const attn::Error &e) {
          ADD_FAILURE() << "thread " << t << ": " << e.what();
          ++failures;
        }
      }
    });
  for (std::thread &w : workers)
    w.join();
  done = true;
  toggler.join();
  attn_set_num_threads(0);
  EXPECT_EQ(failures.load(), 0);
}

/// Lines of /proc/self/maps: every mapped library and thread stack.
size_t mappingCount() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);)
    ++n;
  return n;
}

size_t openFileCount() {
  size_t n = 0;
  if (DIR *dir = opendir("/proc/self/fd")) {
    while (readdir(dir))
      ++n;
    closedir(dir);
  }
  return n;
}

size_t residentKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoul(line.substr(6));
  return 0;
}

/// Lines of /proc/self/maps that map `path`.
size_t mappingsOf(const std::string &path) {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find(path) != std::string::npos;
  return n;
}

/// Opens the library, runs every kernel once (threaded), closes it.
void openRunClose(const std::string &path, const Problem &maskedProblem,
                  const Problem &decodeProblem) {
  attn::Library lib = attn::Library::open(path);
  attn::Kernel masked(attn_kernel_find(lib.c(), "masked"));
  attn::Kernel decode(attn_kernel_find(lib.c(), "decode"));
  run(masked, maskedProblem, true);
  run(decode, decodeProblem, false);
}

TEST(Concurrency, OpeningAndClosingLibrariesDoesNotLeak) {
  // A private copy, so no other open of edge.so keeps it loaded.
  std::string path = (std::filesystem::temp_directory_path() /
                      ("attnc-edge-unload-" + std::to_string(getpid()) + ".so"))
                         .string();
  std::filesystem::copy_file(ATTN_EDGE_LIB, path,
                             std::filesystem::copy_options::overwrite_existing);
  attn_set_num_threads(2); // the Halide pool starts threads in each library
  Problem m = problemFor(2), d = problemFor(3);
  for (int i = 0; i < 20; ++i) // warm-up: lazily created process state
    openRunClose(path, m, d);
  EXPECT_EQ(mappingsOf(path), 0u) << "the library stays mapped after attn_library_close";
  size_t maps = mappingCount(), files = openFileCount(), rss = residentKiB();
  constexpr int kCycles = 300;
  for (int i = 0; i < kCycles; ++i)
    openRunClose(path, m, d);
  EXPECT_EQ(mappingsOf(path), 0u);
  EXPECT_LE(openFileCount(), files) << "file descriptors leaked";
#ifndef ATTNC_EDGE_ASAN // ASan's allocator maps regions and quarantines freed
                        // memory as it likes; LeakSanitizer checks leaks there
  EXPECT_LE(mappingCount(), maps + 4) << "mappings grew over " << kCycles << " open/close cycles";
  // A leaked library or pool costs far more than 16 KiB per cycle.
  EXPECT_LE(residentKiB(), rss + kCycles * 16) << "resident memory grew";
#endif
  attn_set_num_threads(0);
  std::filesystem::remove(path);
}

TEST(Concurrency, ThreadsOpeningTheSameLibraryAtOnce) {
  // dlopen reference counts: concurrent opens and closes of one path, each
  // running a kernel, must neither crash nor unload code another thread runs.
  Problem d = problemFor(1);
  Reference ref = reference(d);
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 8; ++t)
    workers.emplace_back([&] {
      for (int r = 0; r < 20; ++r) {
        try {
          attn::Library lib = attn::Library::open(ATTN_EDGE_LIB);
          Result got = run(attn::Kernel(attn_kernel_find(lib.c(), "decode")), d, false);
          if (maxAbsDiff(got.out, ref.out) > errorBound(d))
            ++failures;
        } catch (const attn::Error &e) {
          ADD_FAILURE() << e.what();
          ++failures;
        }
      }
    });
  for (std::thread &w : workers)
    w.join();
  EXPECT_EQ(failures.load(), 0);
}

} // namespace
