//===- SharedRuntimeTest.cpp - One Halide runtime per process -------------===//
//
// Two kernel libraries made by `attnc -o x.so` are loaded together: neither
// carries a Halide runtime, both resolve Halide's entry points to the one
// libattnc_halide_runtime the process holds (so one thread pool), the thread
// count set through libattnrt is the one that runtime uses, and kernels of
// both libraries run from 8 threads at once with the same results, bit for
// bit, as a lone run.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.hpp"
#include "tests/runtime/Reference.h"

#include <gtest/gtest.h>

#include <HalideRuntime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using attn_test::Problem;

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The library file that defines `symbol` as seen from `handle`.
std::string definingFile(void *handle, const char *symbol) {
  void *address = dlsym(handle, symbol);
  Dl_info info;
  if (!address || !dladdr(address, &info) || !info.dli_fname)
    return "";
  return info.dli_fname;
}

struct Job {
  attn::Kernel kernel;
  Problem problem;
  bool causal;
  std::vector<float> expected;

  void run(std::vector<float> &out) const {
    const Problem &p = problem;
    kernel.run({{p.q.data(), p.qShape()},
                {p.k.data(), p.kShape()},
                {p.v.data(), p.vShape()},
                {out.data(), p.outShape()}});
  }
};

class SharedRuntime : public testing::Test {
protected:
  void SetUp() override {
    first = attn::Library::open(ATTN_E2E_LIB);
    second = attn::Library::open(ATTN_SECOND_LIB);
    firstHandle = dlopen(ATTN_E2E_LIB, RTLD_NOW | RTLD_NOLOAD);
    secondHandle = dlopen(ATTN_SECOND_LIB, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(firstHandle, nullptr);
    ASSERT_NE(secondHandle, nullptr);
  }
  void TearDown() override {
    if (firstHandle)
      dlclose(firstHandle);
    if (secondHandle)
      dlclose(secondHandle);
  }
  attn::Library first, second;
  void *firstHandle = nullptr, *secondHandle = nullptr;
};

/// The kernel `tied` (tests/runtime/Inputs/e2e.attn) in Halide's calling
/// convention: q, k, v, out.
using TiedFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                       halide_buffer_t *);

/// A dense f32 buffer of shape [1, 1, rows, 4] over `data`, its dimensions
/// (innermost first) in `dims`.
halide_buffer_t rowsBuffer(std::vector<float> &data, int32_t rows, halide_dimension_t *dims) {
  dims[0] = halide_dimension_t(0, 4, 1);
  dims[1] = halide_dimension_t(0, rows, 4);
  dims[2] = halide_dimension_t(0, 1, 4 * rows);
  dims[3] = halide_dimension_t(0, 1, 4 * rows);
  halide_buffer_t b = {};
  b.host = reinterpret_cast<uint8_t *>(data.data());
  b.type = halide_type_t(halide_type_float, 32);
  b.dimensions = 4;
  b.dim = dims;
  return b;
}

} // namespace

TEST_F(SharedRuntime, BothLibrariesUseTheOneRuntimeLibrary) {
  for (const char *symbol : {"halide_do_par_for", "halide_set_num_threads", "halide_malloc",
                             "halide_error", "halide_set_error_handler"}) {
    std::string a = definingFile(firstHandle, symbol);
    std::string b = definingFile(secondHandle, symbol);
    EXPECT_TRUE(endsWith(a, "/libattnc_halide_runtime.so")) << symbol << " from " << a;
    EXPECT_EQ(a, b) << symbol;
    EXPECT_EQ(dlsym(firstHandle, symbol), dlsym(secondHandle, symbol)) << symbol;
    EXPECT_EQ(dlsym(firstHandle, symbol), dlsym(RTLD_DEFAULT, symbol)) << symbol;
  }
  // The kernels report a target without a runtime of their own.
  EXPECT_NE(first.kernel("mha").target().find("no_runtime"), std::string::npos);
  EXPECT_NE(second.kernel("mqa_causal").target().find("no_runtime"), std::string::npos);
}

TEST_F(SharedRuntime, ThreadCountReachesTheSharedRuntime) {
  using SetFn = int (*)(int);
  auto set = reinterpret_cast<SetFn>(dlsym(secondHandle, "halide_set_num_threads"));
  ASSERT_NE(set, nullptr);
  int before = attn::setNumThreads(3);
  EXPECT_EQ(attn_get_num_threads(), 3);
  // halide_set_num_threads returns the runtime's previous value: ours.
  EXPECT_EQ(set(3), 3);
  attn::setNumThreads(1);
  EXPECT_EQ(set(1), 1);
  attn::setNumThreads(before);
}

TEST_F(SharedRuntime, EightThreadsRunKernelsOfBothLibrariesConcurrently) {
  std::vector<Job> jobs;
  jobs.push_back({first.kernel("mha"), Problem(2, 2, 2, 33, 70, 8, 8, 11), false, {}});
  jobs.push_back({second.kernel("mqa_causal"), Problem(1, 4, 1, 40, 57, 16, 16, 12), true, {}});
  jobs.push_back({first.kernel("gqa_causal"), Problem(2, 4, 2, 19, 64, 16, 8, 13), true, {}});
  // Reference results: one run each, alone, checked against float64.
  for (Job &job : jobs) {
    job.problem.causal = job.causal;
    job.run(job.problem.out);
    ASSERT_LE(job.problem.maxError(false), 1e-4);
    job.expected = job.problem.out;
  }
  constexpr int kThreads = 8, kRounds = 25;
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const Job &job = jobs[size_t((t + r) % int(jobs.size()))];
        std::vector<float> out(job.expected.size(), NAN);
        try {
          job.run(out);
        } catch (const attn::Error &) {
          ++failures;
          continue;
        }
        if (out != job.expected)
          ++mismatches;
      }
    });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

// libattnrt's error handler sits in the shared runtime, which an app's own
// kernels (attnc_add_kernel) use too: an error from a kernel the app calls
// directly, outside attn_kernel_run, still reaches stderr as Halide's
// default handler would print it.
TEST_F(SharedRuntime, ErrorsOutsideAttnKernelRunStillReachStderr) {
  auto tied = reinterpret_cast<TiedFn>(dlsym(firstHandle, "tied"));
  ASSERT_NE(tied, nullptr);
  // q, out: [1, 1, 3, 4]; k, v: [1, 1, 2, 4], but the kernel ties Lk to Lq.
  std::vector<float> q(12, 0.5f), k(8, 0.5f), v(8, 0.5f), out(12);
  halide_dimension_t dq[4], dk[4], dv[4], dout[4];
  halide_buffer_t bq = rowsBuffer(q, 3, dq), bk = rowsBuffer(k, 2, dk),
                  bv = rowsBuffer(v, 2, dv), bout = rowsBuffer(out, 3, dout);
  testing::internal::CaptureStderr();
  int code = tied(&bq, &bk, &bv, &bout);
  std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_NE(code, 0);
  EXPECT_EQ(printed, "Constraint violated: k.extent.1 (2) == q.extent.1 (3)\n");
}

// Halide's calling convention checks every buffer before anything runs
// (compiler/HalideBackend/BufferChecks.h): type, rank, null host pointers (a
// bounds query's too) and every shape constraint (mins, strides, sizes) come
// back as Halide's error codes and messages, and the output is left alone.
TEST_F(SharedRuntime, DirectCallsCheckEveryBuffer) {
  auto tied = reinterpret_cast<TiedFn>(dlsym(firstHandle, "tied"));
  ASSERT_NE(tied, nullptr);
  std::vector<float> q(12, 0.5f), k(12, 0.5f), v(12, 0.5f), out(12, -7.0f);
  struct Buffer {
    halide_dimension_t dims[4];
    halide_buffer_t b;
  } bq, bk, bv, bout;
  auto reset = [](Buffer &x, std::vector<float> &data) { x.b = rowsBuffer(data, 3, x.dims); };
  auto call = [&](const std::function<void()> &spoil) {
    reset(bq, q);
    reset(bk, k);
    reset(bv, v);
    reset(bout, out);
    spoil();
    testing::internal::CaptureStderr();
    int code = tied(&bq.b, &bk.b, &bv.b, &bout.b);
    std::string printed = testing::internal::GetCapturedStderr();
    return std::make_pair(code, printed);
  };
  struct Case {
    std::function<void()> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[&] { bq.b.type = halide_type_t(halide_type_int, 32); },
       "Input buffer q has type float32 but type of the buffer passed in is int32\n"},
      {[&] { bk.b.dimensions = 3; },
       "Input buffer k requires a buffer of exactly 4 dimensions, but the buffer passed in "
       "has 3 dimensions\n"},
      {[&] { bv.dims[0].min = 1; },
       "Constraint violated: v.min.0 (1) == 0 (0)\n"},
      {[&] { bq.dims[1].stride = 5; },
       "Constraint violated: q.stride.1 (5) == 4 (4)\n"},
      {[&] { bout.dims[0].extent = 3; },
       "Constraint violated: out.extent.0 (3) == 4 (4)\n"},
      {[&] { bout.b.host = nullptr, bout.b.device = 1; },
       "The host pointer of Output buffer out is null, but the pipeline will access it on "
       "the host.\n"},
      // Neither host nor device memory: Halide's bounds query, which attnc's
      // kernels do not answer (no_bounds_query, BufferChecks.h).
      {[&] { bk.b.host = nullptr; },
       "The host pointer of Input buffer k is null, but the pipeline will access it on "
       "the host.\n"},
  };
  for (const Case &c : cases) {
    auto [code, printed] = call(c.spoil);
    EXPECT_NE(code, 0) << c.message;
    EXPECT_EQ(printed, c.message);
    EXPECT_EQ(out, std::vector<float>(12, -7.0f)) << c.message;
  }
  // The same buffers, unspoiled, run.
  auto [code, printed] = call([] {});
  EXPECT_EQ(code, 0) << printed;
  EXPECT_NEAR(out[0], 0.5f, 1e-6f);
}

// Kernel buffers of 16 KiB or more are kept for the next call
// (runtime/ScratchCache.c) rather than faulted in again page by page: a
// freed block serves the next request it holds, a block in use is never
// handed out twice, a request more than twice a kept block's size gets its
// own, and every block is aligned for the widest vectors.
TEST_F(SharedRuntime, LargeBuffersAreKeptForTheNextCall) {
  using MallocFn = void *(*)(void *, size_t);
  using FreeFn = void (*)(void *, void *);
  auto allocate = reinterpret_cast<MallocFn>(dlsym(firstHandle, "halide_malloc"));
  auto release = reinterpret_cast<FreeFn>(dlsym(firstHandle, "halide_free"));
  ASSERT_TRUE(allocate && release);
  const size_t size = 4 << 20;
  char *block = static_cast<char *>(allocate(nullptr, size));
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 128, 0u);
  block[0] = block[size - 1] = 1;
  release(nullptr, block);
  char *again = static_cast<char *>(allocate(nullptr, size - 4096));
  EXPECT_EQ(again, block);
  char *second = static_cast<char *>(allocate(nullptr, size));
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, again);
  second[size - 1] = 2;
  release(nullptr, again);
  release(nullptr, second);
  char *larger = static_cast<char *>(allocate(nullptr, 3 * size));
  EXPECT_NE(larger, block);
  EXPECT_NE(larger, second);
  release(nullptr, larger);
  // Four blocks freed together come back as they were: a decode's partial
  // states (128 KiB each) and a head_dim 256 prefill task's state (32 KiB).
  // (Plain mallocs in between would take blocks that went back to malloc.)
  auto fourComeBack = [&](size_t bytes) {
    std::vector<char *> first, again;
    std::vector<void *> others;
    for (int s = 0; s < 4; ++s)
      first.push_back(static_cast<char *>(allocate(nullptr, bytes)));
    for (char *b : first)
      release(nullptr, b);
    for (int s = 0; s < 4; ++s)
      others.push_back(malloc(bytes + 256));
    for (int s = 0; s < 4; ++s)
      again.push_back(static_cast<char *>(allocate(nullptr, bytes)));
    for (char *b : again)
      release(nullptr, b);
    for (void *o : others)
      free(o);
    std::sort(first.begin(), first.end());
    std::sort(again.begin(), again.end());
    return first == again;
  };
  EXPECT_TRUE(fourComeBack(128 << 10));
  EXPECT_TRUE(fourComeBack(32 << 10));
  // With every slot holding a small block, a large one takes a small one's slot.
  std::vector<char *> smalls;
  for (int s = 0; s < 40; ++s)
    smalls.push_back(static_cast<char *>(allocate(nullptr, 20 << 10)));
  char *big = static_cast<char *>(allocate(nullptr, 5 << 20)); // (no kept block fits it)
  for (char *b : smalls)
    release(nullptr, b);
  release(nullptr, big);
  EXPECT_EQ(allocate(nullptr, 5 << 20), big);
  release(nullptr, big);
  char *small = static_cast<char *>(allocate(nullptr, 1000));
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 128, 0u);
  release(nullptr, small);
}
