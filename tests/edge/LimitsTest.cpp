//===- LimitsTest.cpp - Resource limits fail with a message -----------------===//
//
// Sizes whose products overflow 32 or 64 bits, tensors larger than memory
// and deeply nested expressions, at every entry point that takes them: the
// runtime's checker (attn_kernel_check / attn_kernel_run), the generated
// NAME_run wrapper (error code, no memory touched), attnc-run (message, exit
// status 1) and run-time compilation (the frontend's located diagnostics).
// Dummy data pointers are never large enough: a missed check would show as
// a sanitizer report or a crash, not as a silently passing test.
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"
#include "runtime/Npy.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace attnc::edge;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kBig = int64_t(1) << 40;

/// The checker's verdict on masked's arguments with the given sizes; every
/// tensor points at the same small dummy buffer (never read by the check).
std::string checkMasked(int64_t B, int64_t Lq, int64_t Lk) {
  static float dummy[64];
  static int32_t lens[64];
  int64_t qShape[] = {B, 4, Lq, 4}, kShape[] = {B, 2, Lk, 4}, lShape[] = {B},
          wShape[] = {B, 4, Lq, Lk}, lseShape[] = {B, 4, Lq};
  // Outputs get distinct dummies so the overlap check does not fire first.
  static float out[64], weights[64], lse[64];
  attn_tensor args[] = {
      {dummy, ATTN_F32, 4, qShape, nullptr},   {dummy, ATTN_F32, 4, kShape, nullptr},
      {dummy, ATTN_F32, 4, kShape, nullptr},   {lens, ATTN_I32, 1, lShape, nullptr},
      {out, ATTN_F32, 4, qShape, nullptr},     {weights, ATTN_F32, 4, wShape, nullptr},
      {lse, ATTN_F32, 3, lseShape, nullptr}};
  char err[512] = "";
  const attn_kernel *kernel = edgeKernel("masked").c();
  attn_status status = attn_kernel_check(kernel, args, 7, err, sizeof err);
  // attn_kernel_run must refuse the same way, before touching any data.
  char runErr[512] = "";
  EXPECT_EQ(attn_kernel_run(kernel, args, 7, runErr, sizeof runErr), status);
  EXPECT_STREQ(runErr, err);
  return status == ATTN_OK ? "OK" : err;
}

TEST(Limits, CheckerRefusesADimensionAboveInt32) {
  EXPECT_EQ(checkMasked(int64_t(INT32_MAX) + 1, 1, 1),
            "argument 'q': dimension 0 (B) is 2147483648, above the 2147483647 limit of a "
            "Halide buffer dimension");
}

TEST(Limits, CheckerRefusesElementCountsAboveInt32) {
  // 2^14 * 4 * 2^14 * 4 = 2^32 elements: each extent fits, the product not.
  EXPECT_EQ(checkMasked(16384, 16384, 1),
            "argument 'q': shape [16384, 4, 16384, 4] has more than 2147483647 elements, the "
            "limit of a Halide buffer");
  // Inputs fit, the weights output [1, 4, 65536, 65536] does not.
  EXPECT_EQ(checkMasked(1, 65536, 65536),
            "argument 'weights': shape [1, 4, 65536, 65536] has more than 2147483647 elements, "
            "the limit of a Halide buffer");
}

TEST(Limits, CheckerRefusesProductsThatOverflowInt64) {
  // (2^31 - 1)^2 * 16 overflows int64 long before the int32 test.
  EXPECT_EQ(checkMasked(INT32_MAX, INT32_MAX, 1),
            "argument 'q': shape [2147483647, 4, 2147483647, 4] has more than 2147483647 "
            "elements, the limit of a Halide buffer");
  EXPECT_EQ(checkMasked(-1, 1, 1),
            "argument 'q': dimension 0 (B) is -1; sizes must be at least 1");
}

using MaskedRun = int (*)(const float *, const float *, const float *, const int32_t *, float *,
                          float *, float *, int64_t, int64_t, int64_t);

TEST(Limits, GeneratedRunWrapperRefusesBadSizesWithoutTouchingMemory) {
  void *handle = dlopen(ATTN_EDGE_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto run = reinterpret_cast<MaskedRun>(dlsym(handle, "masked_run"));
  ASSERT_NE(run, nullptr);
  float q[16], k[16], v[16], out[16], w[16], lse[16];
  int32_t lens[1] = {1};
  EXPECT_EQ(run(q, k, v, lens, out, w, lse, 1, 1, 1), 0); // sanity: the smallest call works
  EXPECT_EQ(run(q, k, v, lens, out, w, lse, kBig, 1, 1), -1) << "B = 2^40";
  EXPECT_EQ(run(q, k, v, lens, out, w, lse, 1, kBig, kBig), -1) << "Lq = Lk = 2^40";
  EXPECT_EQ(run(q, k, v, lens, out, w, lse, 1, 65536, 65536), -1) << "weights of 2^34 elements";
  EXPECT_EQ(run(q, k, v, lens, out, w, lse, 16384, 16384, 1), -1) << "q of 2^32 elements";
  EXPECT_EQ(run(q, k, v, lens, out, w, lse, INT64_MAX, INT64_MAX, INT64_MAX), -1);
  EXPECT_EQ(run(q, k, v, lens, out, w, lse, 0, 1, 1), -1) << "B = 0";
  EXPECT_EQ(run(q, k, v, lens, out, w, lse, 1, -5, 1), -1) << "Lq < 0";
  EXPECT_EQ(run(q, nullptr, v, lens, out, w, lse, 1, 1, 1), -2) << "NULL k";
  dlclose(handle);
}

/// Runs `argv` with its address space capped at `limitBytes` (0 = no cap);
/// returns the exit status (-1 when killed by a signal) and stderr.
std::pair<int, std::string> runCapped(const std::vector<std::string> &argv, size_t limitBytes,
                                      const fs::path &stderrFile) {
  pid_t pid = fork();
  if (pid == 0) {
    if (limitBytes) {
      struct rlimit limit = {limitBytes, limitBytes};
      setrlimit(RLIMIT_AS, &limit);
    }
    if (!freopen(stderrFile.c_str(), "w", stderr))
      _exit(127);
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(stderrFile);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

class AttncRunLimits : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attnc-edge-limits-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// .npy inputs for masked with batch 1 and the given Lq = Lk.
  std::vector<std::string> maskedCommand(int64_t L) {
    std::string error;
    std::vector<float> q(size_t(4 * L * 4), 0.5f), k(size_t(2 * L * 4), 0.25f);
    int32_t len = int32_t(L);
    EXPECT_TRUE(attnc::runtime::writeNpy((dir_ / "q.npy").string(), ATTN_F32, {1, 4, L, 4},
                                         q.data(), error)) << error;
    EXPECT_TRUE(attnc::runtime::writeNpy((dir_ / "k.npy").string(), ATTN_F32, {1, 2, L, 4},
                                         k.data(), error)) << error;
    EXPECT_TRUE(attnc::runtime::writeNpy((dir_ / "len.npy").string(), ATTN_I32, {1}, &len,
                                         error)) << error;
    return {ATTNC_RUN_EXE, ATTN_EDGE_LIB, "--kernel", "masked",
            "--in", "q=" + (dir_ / "q.npy").string(), "--in", "k=" + (dir_ / "k.npy").string(),
            "--in", "v=" + (dir_ / "k.npy").string(), "--in", "valid_len=" + (dir_ / "len.npy").string(),
            "--out", "weights=" + (dir_ / "w.npy").string()};
  }
  fs::path dir_;
};

// attnc-run asks the runtime for each output's shape, which refuses shapes
// beyond Halide's limits before anything is allocated (not 64 GiB of weights).
TEST_F(AttncRunLimits, OutputAboveTheHalideLimitIsRefusedBeforeAllocation) {
  auto [status, err] = runCapped(maskedCommand(65536), 0, dir_ / "stderr");
  EXPECT_EQ(status, 1);
  EXPECT_EQ(err, "attnc-run: error: argument 'weights': shape [1, 4, 65536, 65536] has more "
                 "than 2147483647 elements, the limit of a Halide buffer\n");
}

TEST_F(AttncRunLimits, OutputLargerThanMemoryIsAnErrorNotACrash) {
#ifdef ATTNC_EDGE_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space; RLIMIT_AS cannot apply";
#endif
  // weights [1, 4, 20000, 20000] = 1.6e9 floats = 6.4 GB under a 2 GB cap.
  auto [status, err] = runCapped(maskedCommand(20000), size_t(2) << 30, dir_ / "stderr");
  EXPECT_EQ(status, 1);
  EXPECT_EQ(err, "attnc-run: error: argument 'weights': out of memory\n");
}

TEST(Limits, RunTimeCompilationReportsNestingAndSizeLimits) {
  fs::path cache = fs::temp_directory_path() / ("attnc-edge-cache-" + std::to_string(getpid()));
  setenv("ATTNC_CACHE_DIR", cache.c_str(), 1);
  std::string deep = "kernel k {\n head_dim = 4\n bias = " + std::string(100000, '(') + "j" +
                     std::string(100000, ')') + "\n}\n";
  attn_library *lib = nullptr;
  std::vector<char> err(16384);
  attn_status status =
      attn_library_compile(deep.data(), deep.size(), "", &lib, err.data(), err.size());
  if (status == ATTN_ERROR_UNSUPPORTED)
    GTEST_SKIP() << "run-time compilation not available: " << err.data();
  EXPECT_EQ(status, ATTN_ERROR_COMPILE);
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(std::string(err.data()).find(
                "3:265: error: expression is nested too deeply (the maximum depth is 256)"),
            std::string::npos)
      << err.data();

  // A million-term sum: the expression-size limit, not a deep AST.
  std::string wide = "kernel k {\n head_dim = 4\n bias = j";
  for (int t = 0; t < 1000000; ++t)
    wide += " + j";
  wide += "\n}\n";
  status = attn_library_compile(wide.data(), wide.size(), "", &lib, err.data(), err.size());
  EXPECT_EQ(status, ATTN_ERROR_COMPILE);
  EXPECT_NE(std::string(err.data()).find("error: expression is too large"), std::string::npos)
      << err.data();
  fs::remove_all(cache);
}

TEST(Limits, DeepestAcceptedNestingCompilesAndRuns) {
  fs::path cache = fs::temp_directory_path() / ("attnc-edge-cache2-" + std::to_string(getpid()));
  setenv("ATTNC_CACHE_DIR", cache.c_str(), 1);
  // 128 x abs((...)) is 256 levels, the frontend's maximum (129 is refused).
  std::string expr = "j";
  for (int d = 0; d < 128; ++d)
    expr = "abs((" + expr + ") * 0.5)";
  std::string source = "kernel k {\n head_dim = 4\n bias = -0.01 * " + expr + "\n}\n";
  attn_library *lib = nullptr;
  std::vector<char> err(16384);
  attn_status status =
      attn_library_compile(source.data(), source.size(), "", &lib, err.data(), err.size());
  if (status == ATTN_ERROR_UNSUPPORTED)
    GTEST_SKIP() << "run-time compilation not available: " << err.data();
  ASSERT_EQ(status, ATTN_OK) << err.data();
  const attn_kernel *kernel = attn_kernel_find(lib, "k");
  ASSERT_NE(kernel, nullptr);
  std::vector<float> q = uniform(12, 80), k = uniform(20, 81), v = uniform(20, 82), out(12);
  int64_t qs[] = {1, 1, 3, 4}, ks[] = {1, 1, 5, 4};
  attn_tensor args[] = {{q.data(), ATTN_F32, 4, qs, nullptr},
                        {k.data(), ATTN_F32, 4, ks, nullptr},
                        {v.data(), ATTN_F32, 4, ks, nullptr},
                        {out.data(), ATTN_F32, 4, qs, nullptr}};
  EXPECT_EQ(attn_kernel_run(kernel, args, 4, err.data(), err.size()), ATTN_OK) << err.data();
  for (float x : out)
    EXPECT_TRUE(std::isfinite(x));
  attn_library_close(lib);
  fs::remove_all(cache);
}

} // namespace
