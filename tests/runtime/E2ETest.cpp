//===- E2ETest.cpp - libattnrt over a library compiled by attnc -----------===//
//
// Inputs/e2e.attn is compiled by `attnc -o libe2e.so` at build time. The test
// loads it, checks the listed kernels and argument shapes, runs each kernel
// against a float64 reference (MHA, GQA with a causal mask, fixed
// sizes with valid_len) at odd sizes, and checks the messages for wrong
// shapes and dtypes.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.hpp"
#include "tests/runtime/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using attn_test::Problem;

class E2E : public testing::Test {
protected:
  static void SetUpTestSuite() {
    lib = new attn::Library(attn::Library::open(ATTN_E2E_LIB));
  }
  static void TearDownTestSuite() {
    delete lib;
    lib = nullptr;
  }
  static attn::Library *lib;
};
attn::Library *E2E::lib = nullptr;

std::string runError(const attn::Kernel &k, const std::vector<attn::Tensor> &args) {
  try {
    k.run(args);
  } catch (const attn::Error &e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_F(E2E, ListsKernelsAndArguments) {
  std::vector<std::string> names;
  for (const attn::Kernel &k : lib->kernels())
    names.push_back(k.name());
  EXPECT_EQ(names, (std::vector<std::string>{"mha", "gqa_causal", "fixed_valid", "tied"}));

  std::vector<std::string> shapes;
  for (const attn::Argument &a : lib->kernel("gqa_causal").arguments())
    shapes.push_back(a.name + (a.isOutput ? " out " : " in ") + a.shapeText);
  EXPECT_EQ(shapes, (std::vector<std::string>{
                        "q in f32[B, H=4, Lq, D=16]", "k in f32[B, G=2, Lk, Dk=16]",
                        "v in f32[B, G=2, Lk, Dv=8]", "out out f32[B, H=4, Lq, Dv=8]"}));
  shapes.clear();
  for (const attn::Argument &a : lib->kernel("fixed_valid").arguments())
    shapes.push_back(a.name + " " + a.shapeText);
  EXPECT_EQ(shapes, (std::vector<std::string>{
                        "q f32[B=2, H=1, Lq=5, D=4]", "k f32[B=2, G=1, Lk=5, Dk=4]",
                        "v f32[B=2, G=1, Lk=5, Dv=4]", "valid_len i32[B=2]",
                        "out f32[B=2, H=1, Lq=5, Dv=4]"}));
}

TEST_F(E2E, MhaMatchesFloat64Reference) {
  attn::Kernel k = lib->kernel("mha");
  for (auto [B, Lq, Lk] : {std::tuple{1, 1, 1}, {2, 3, 17}, {1, 17, 3}, {3, 33, 100}}) {
    Problem p(B, 2, 2, Lq, Lk, 8, 8);
    k.run({{p.q.data(), p.qShape()},
           {p.k.data(), p.kShape()},
           {p.v.data(), p.vShape()},
           {p.out.data(), p.outShape()}});
    EXPECT_LE(p.maxError(false), 1e-4) << B << "x" << Lq << "x" << Lk;
  }
}

TEST_F(E2E, GqaCausalMatchesReference) {
  attn::Kernel k = lib->kernel("gqa_causal");
  // Lq > Lk leaves the first rows with no visible key: out 0, lse -inf.
  for (auto [B, Lq, Lk] : {std::tuple{1, 7, 7}, {2, 5, 19}, {1, 9, 4}}) {
    Problem p(B, 4, 2, Lq, Lk, 16, 8);
    p.causal = true;
    k.run({{p.q.data(), p.qShape()},
           {p.k.data(), p.kShape()},
           {p.v.data(), p.vShape()},
           {p.out.data(), p.outShape()}});
    EXPECT_LE(p.maxError(false), 1e-4) << B << "x" << Lq << "x" << Lk;
  }
}

TEST_F(E2E, FixedSizesWithValidLen) {
  attn::Kernel k = lib->kernel("fixed_valid");
  Problem p(2, 1, 1, 5, 5, 4, 4);
  p.validLen = {3, 5};
  std::vector<int32_t> lens = p.validLen;
  std::vector<attn::Tensor> args = {{p.q.data(), p.qShape()},
                                    {p.k.data(), p.kShape()},
                                    {p.v.data(), p.vShape()},
                                    {lens.data(), std::vector<int64_t>{2}},
                                    {p.out.data(), p.outShape()}};
  k.run(args);
  EXPECT_LE(p.maxError(false), 1e-4);
  // Same result with one thread.
  std::vector<float> first = p.out;
  int before = attn::setNumThreads(1);
  k.run(args);
  attn::setNumThreads(before);
  EXPECT_EQ(p.out, first);
}

TEST_F(E2E, WrongShapesAndDtypesAreRefusedWithMessages) {
  attn::Kernel mha = lib->kernel("mha");
  Problem p(2, 2, 2, 3, 5, 8, 8);
  std::vector<float> v7(size_t(2 * 2 * 7 * 8));
  EXPECT_EQ(runError(mha, {{p.q.data(), p.qShape()},
                           {p.k.data(), p.kShape()},
                           {v7.data(), {2, 2, 7, 8}},
                           {p.out.data(), p.outShape()}}),
            "argument 'v': dimension 2 (Lk) is 7 but 'k' has Lk = 5");
  EXPECT_EQ(runError(mha, {{p.q.data(), {2, 3, 3, 8}},
                           {p.k.data(), p.kShape()},
                           {p.v.data(), p.vShape()},
                           {p.out.data(), p.outShape()}}),
            "argument 'q': dimension 1 (H) is 3 but the kernel was compiled for H = 2");
  std::vector<int32_t> qi(p.q.size());
  EXPECT_EQ(runError(mha, {{qi.data(), p.qShape()},
                           {p.k.data(), p.kShape()},
                           {p.v.data(), p.vShape()},
                           {p.out.data(), p.outShape()}}),
            "argument 'q': dtype is i32 but the kernel expects f32");
  EXPECT_EQ(runError(mha, {{p.q.data(), p.qShape()},
                           {p.k.data(), p.kShape()},
                           {p.v.data(), p.vShape()}}),
            "kernel 'mha' takes 4 arguments (q, k, v, out) but 3 were given");
  attn::Kernel fixed = lib->kernel("fixed_valid");
  Problem b3(3, 1, 1, 5, 5, 4, 4);
  std::vector<int32_t> lens(3, 5);
  EXPECT_EQ(runError(fixed, {{b3.q.data(), b3.qShape()},
                             {b3.k.data(), b3.kShape()},
                             {b3.v.data(), b3.vShape()},
                             {lens.data(), std::vector<int64_t>{3}},
                             {b3.out.data(), b3.outShape()}}),
            "argument 'q': dimension 0 (B) is 3 but the kernel was compiled for B = 2");
}

// seq_k = seq_q with dynamic sizes: the signature names k's length Lk, not
// Lq, so the checker cannot see the tie and the generated code's own bounds
// check fails. That error must come back as a message from the real Halide
// runtime, with nothing printed. (When the signature names the tie, the
// checker reports it first; both are accepted here.)
TEST_F(E2E, HalideRuntimeErrorsAreRoutedToTheCaller) {
  attn::Kernel k = lib->kernel("tied");
  Problem p(1, 1, 1, 3, 2, 4, 4);
  testing::internal::CaptureStderr();
  attn_status status = ATTN_OK;
  std::string message;
  try {
    k.run({{p.q.data(), p.qShape()},
           {p.k.data(), p.kShape()},
           {p.v.data(), p.vShape()},
           {p.out.data(), p.outShape()}});
  } catch (const attn::Error &e) {
    status = e.status();
    message = e.what();
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  if (status == ATTN_ERROR_ARGUMENT)
    EXPECT_EQ(message, "argument 'k': dimension 2 (Lq) is 2 but 'q' has Lq = 3");
  else
    EXPECT_EQ(message, "kernel 'tied' failed: Input buffer k is accessed at 2, "
                       "which is beyond the max (1) in dimension 1");
  // The kernel still runs afterwards with matching sizes.
  Problem ok(1, 1, 1, 3, 3, 4, 4);
  k.run({{ok.q.data(), ok.qShape()},
         {ok.k.data(), ok.kShape()},
         {ok.v.data(), ok.vShape()},
         {ok.out.data(), ok.outShape()}});
  EXPECT_LE(ok.maxError(false), 1e-4);
}

// One kernel run from 8 threads at once on their own tensors: every result
// is within the float64 bound and equal, bit for bit, to the same problem
// run alone.
TEST_F(E2E, ConcurrentRunsOfOneKernel) {
  attn::Kernel k = lib->kernel("gqa_causal");
  auto makeProblem = [](int t, int r) {
    Problem p(1 + t % 2, 4, 2, 3 + t, 5 + r * 7, 16, 8, unsigned(t * 31 + r));
    p.causal = true;
    return p;
  };
  auto run = [&](Problem &p) {
    k.run({{p.q.data(), p.qShape()},
           {p.k.data(), p.kShape()},
           {p.v.data(), p.vShape()},
           {p.out.data(), p.outShape()}});
  };
  constexpr int kThreads = 8, kRounds = 10;
  std::vector<std::vector<std::vector<float>>> alone(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int r = 0; r < kRounds; ++r) {
      Problem p = makeProblem(t, r);
      run(p);
      alone[size_t(t)].push_back(p.out);
    }
  std::vector<double> worst(kThreads, 0.0);
  std::vector<int> differ(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Problem p = makeProblem(t, r);
        run(p);
        worst[size_t(t)] = std::max(worst[size_t(t)], p.maxError(false));
        differ[size_t(t)] += p.out != alone[size_t(t)][size_t(r)];
      }
    });
  for (std::thread &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_LE(worst[size_t(t)], 1e-4) << "thread " << t;
    EXPECT_EQ(differ[size_t(t)], 0) << "thread " << t;
  }
}

// Extents and element counts beyond what a halide_buffer_t can describe
// (int32 extents and strides) are refused before the call, naming the
// argument; no memory of that size is needed to find out.
TEST_F(E2E, HalideBufferLimitsNameTheArgument) {
  attn::Kernel k = lib->kernel("mha");
  Problem p(1, 2, 2, 3, 5, 8, 8);
  int64_t big = int64_t(1) << 31;
  EXPECT_EQ(runError(k, {{p.q.data(), p.qShape()},
                         {p.k.data(), {1, 2, big, 8}},
                         {p.v.data(), {1, 2, big, 8}},
                         {p.out.data(), p.outShape()}}),
            "argument 'k': dimension 2 (Lk) is 2147483648, above the 2147483647 limit of a "
            "Halide buffer dimension");
  // Each extent fits, the product does not (it would need a stride > int32).
  int64_t lk = int64_t(1) << 28;
  EXPECT_EQ(runError(k, {{p.q.data(), p.qShape()},
                         {p.k.data(), {1, 2, lk, 8}},
                         {p.v.data(), {1, 2, lk, 8}},
                         {p.out.data(), p.outShape()}}),
            "argument 'k': shape [1, 2, 268435456, 8] has more than 2147483647 elements, the "
            "limit of a Halide buffer");
  // Products that overflow int64 are caught the same way.
  int64_t huge = int64_t(INT32_MAX);
  EXPECT_EQ(runError(k, {{p.q.data(), {huge, 2, huge, 8}},
                         {p.k.data(), p.kShape()},
                         {p.v.data(), p.vShape()},
                         {p.out.data(), p.outShape()}}),
            "argument 'q': shape [2147483647, 2, 2147483647, 8] has more than 2147483647 "
            "elements, the limit of a Halide buffer");
}
