//===- LibraryTest.cpp - Loading and running a kernel library -------------===//
//
// Drives the C API and the C++ layer over FakeKernelLibrary.cpp, a
// hand-written library with the exports of attnc's output: introspection,
// numerics against a float64 reference (which proves the logical-to-Halide
// dimension mapping), argument errors, Halide errors routed to the caller,
// thread control, concurrent runs and every load-time refusal.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.h"
#include "attn/runtime.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string fakeLib(const char *variant) {
  return std::string(ATTN_FAKE_LIB_DIR) + "/libfake_" + variant + ".so";
}

/// Inputs of naive_attn (q[B,2,Lq,3], k[B,2,Lk,3], v[B,2,Lk,2]) and a
/// float64 reference of its output.
struct AttentionCase {
  int64_t B, Lq, Lk;
  std::vector<float> q, k, v, out;
  std::vector<int64_t> qShape, kShape, vShape, outShape;

  AttentionCase(int64_t B, int64_t Lq, int64_t Lk, unsigned seed = 1)
      : B(B), Lq(Lq), Lk(Lk), qShape{B, 2, Lq, 3}, kShape{B, 2, Lk, 3},
        vShape{B, 2, Lk, 2}, outShape{B, 2, Lq, 2} {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (auto *vec : {&q, &k, &v})
      vec->resize(size_t(B * 2 * (vec == &q ? Lq : Lk) * (vec == &v ? 2 : 3)));
    for (auto *vec : {&q, &k, &v})
      for (float &x : *vec)
        x = dist(rng);
    out.assign(size_t(B * 2 * Lq * 2), -7.0f);
  }
  std::vector<attn_tensor> tensors() {
    return {{q.data(), ATTN_F32, 4, qShape.data(), nullptr},
            {k.data(), ATTN_F32, 4, kShape.data(), nullptr},
            {v.data(), ATTN_F32, 4, vShape.data(), nullptr},
            {out.data(), ATTN_F32, 4, outShape.data(), nullptr}};
  }
  double maxError() const {
    double worst = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < Lq; ++i) {
          std::vector<double> s(static_cast<size_t>(Lk));
          double m = -INFINITY, sum = 0;
          for (int64_t j = 0; j < Lk; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < 3; ++d)
              dot += double(q[size_t(((b * 2 + h) * Lq + i) * 3 + d)]) *
                     double(k[size_t(((b * 2 + h) * Lk + j) * 3 + d)]);
            s[size_t(j)] = dot / std::sqrt(3.0);
            m = std::max(m, s[size_t(j)]);
          }
          for (double &x : s)
            sum += (x = std::exp(x - m));
          for (int64_t e = 0; e < 2; ++e) {
            double ref = 0;
            for (int64_t j = 0; j < Lk; ++j)
              ref += s[size_t(j)] / sum *
                     double(v[size_t(((b * 2 + h) * Lk + j) * 2 + e)]);
            double got = out[size_t(((b * 2 + h) * Lq + i) * 2 + e)];
            worst = std::max(worst, std::fabs(got - ref));
          }
        }
    return worst;
  }
};

class Library : public testing::Test {
protected:
  void SetUp() override {
    char err[512];
    ASSERT_EQ(attn_library_open(fakeLib("good").c_str(), &lib, err, sizeof err),
              ATTN_OK)
        << err;
    attn = attn_kernel_find(lib, "naive_attn");
    ASSERT_NE(attn, nullptr);
  }
  void TearDown() override { attn_library_close(lib); }

  std::string run(const attn_kernel *kernel, std::vector<attn_tensor> args,
                  attn_status expected) {
    char err[512] = "unchanged";
    EXPECT_EQ(attn_kernel_run(kernel, args.data(), args.size(), err, sizeof err),
              expected);
    return err;
  }

  attn_library *lib = nullptr;
  const attn_kernel *attn = nullptr;
};

} // namespace

TEST_F(Library, ListsKernelsAndArguments) {
  ASSERT_EQ(attn_library_kernel_count(lib), 2u);
  EXPECT_STREQ(attn_library_kernel_name(lib, 0), "naive_attn");
  EXPECT_STREQ(attn_library_kernel_name(lib, 1), "masked_sum");
  EXPECT_EQ(attn_library_kernel_name(lib, 2), nullptr);
  EXPECT_EQ(attn_kernel_find(lib, "nope"), nullptr);
  EXPECT_STREQ(attn_kernel_name(attn), "naive_attn");
  EXPECT_STREQ(attn_kernel_target(attn), "x86-64-linux-fake");
  ASSERT_EQ(attn_kernel_arg_count(attn), 4u);
  const attn_arg_info *k = attn_kernel_arg(attn, 1);
  EXPECT_STREQ(k->name, "k");
  EXPECT_EQ(k->is_output, 0);
  EXPECT_EQ(k->dtype, ATTN_F32);
  ASSERT_EQ(k->rank, 4);
  EXPECT_STREQ(k->dims[1].name, "H");
  EXPECT_EQ(k->dims[1].value, 2);
  EXPECT_STREQ(k->dims[2].name, "Lk");
  EXPECT_EQ(k->dims[2].value, 0);
  EXPECT_STREQ(k->shape_text, "f32[B, H=2, Lk, D=3]");
  EXPECT_EQ(attn_kernel_arg(attn, 3)->is_output, 1);
  EXPECT_EQ(attn_kernel_arg(attn, 4), nullptr);
  EXPECT_EQ(attn_kernel_arg_index(attn, "v"), 2);
  EXPECT_EQ(attn_kernel_arg_index(attn, "w"), -1);
  const attn_kernel *masked = attn_kernel_find(lib, "masked_sum");
  EXPECT_STREQ(attn_kernel_arg(masked, 1)->shape_text, "u8[B, L]");
}

TEST_F(Library, RunsAgainstFloat64Reference) {
  for (auto [B, Lq, Lk] : {std::tuple{1, 1, 1}, {2, 3, 5}, {3, 17, 9}}) {
    AttentionCase c(B, Lq, Lk);
    EXPECT_EQ(run(attn, c.tensors(), ATTN_OK), "");
    EXPECT_LE(c.maxError(), 1e-5) << B << " " << Lq << " " << Lk;
  }
}

TEST_F(Library, SizeQueries) {
  AttentionCase c(2, 3, 5);
  std::vector<attn_tensor> args = c.tensors();
  int64_t value = 0;
  ASSERT_EQ(attn_kernel_size(attn, args.data(), 4, "Lk", &value), ATTN_OK);
  EXPECT_EQ(value, 5);
  ASSERT_EQ(attn_kernel_size(attn, args.data(), 4, "Dv", &value), ATTN_OK);
  EXPECT_EQ(value, 2);
  EXPECT_EQ(attn_kernel_size(attn, args.data(), 4, "Z", &value),
            ATTN_ERROR_ARGUMENT);
  args[3] = attn_tensor{};
  int64_t shape[4] = {};
  char err[256];
  ASSERT_EQ(attn_kernel_output_shape(attn, args.data(), 4, 3, shape, err, sizeof err),
            ATTN_OK)
      << err;
  EXPECT_EQ(std::vector<int64_t>(shape, shape + 4),
            (std::vector<int64_t>{2, 2, 3, 2}));
}

TEST_F(Library, ArgumentErrorsNeverReachTheKernel) {
  AttentionCase c(2, 3, 5);
  c.vShape[2] = 7;
  EXPECT_EQ(run(attn, c.tensors(), ATTN_ERROR_ARGUMENT),
            "argument 'v': dimension 2 (Lk) is 7 but 'k' has Lk = 5");
  EXPECT_EQ(c.out[0], -7.0f);
  AttentionCase d(2, 3, 5);
  std::vector<attn_tensor> args = d.tensors();
  args[0].dtype = ATTN_I32;
  EXPECT_EQ(run(attn, args, ATTN_ERROR_ARGUMENT),
            "argument 'q': dtype is i32 but the kernel expects f32");
  args.pop_back();
  EXPECT_EQ(run(attn, args, ATTN_ERROR_ARGUMENT),
            "kernel 'naive_attn' takes 4 arguments (q, k, v, out) but 3 were given");
  EXPECT_EQ(run(nullptr, args, ATTN_ERROR_INVALID), "attn_kernel_run: NULL kernel");
}

TEST_F(Library, HalideErrorsComeBackAsMessages) {
  AttentionCase c(4, 2, 2);
  testing::internal::CaptureStderr();
  EXPECT_EQ(run(attn, c.tensors(), ATTN_ERROR_KERNEL),
            "kernel 'naive_attn' failed: Input buffer q is accessed at 3, "
            "which is beyond the max (2) in dimension 3");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  // The next successful run carries no stale message.
  AttentionCase ok(1, 2, 2);
  EXPECT_EQ(run(attn, ok.tensors(), ATTN_OK), "");
}

TEST_F(Library, ShortErrorBufferIsTruncatedAndTerminated) {
  AttentionCase c(2, 3, 5);
  std::vector<attn_tensor> args = c.tensors();
  args[0].data = nullptr;
  char err[8];
  EXPECT_EQ(attn_kernel_run(attn, args.data(), 4, err, sizeof err),
            ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(err, "argumen");
  EXPECT_EQ(attn_kernel_run(attn, args.data(), 4, nullptr, 0), ATTN_ERROR_ARGUMENT);
}

TEST_F(Library, ThreadCountReachesTheHalideRuntime) {
  void *handle = dlopen(fakeLib("good").c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  auto probe = reinterpret_cast<int (*)()>(dlsym(handle, "fake_num_threads"));
  ASSERT_NE(probe, nullptr);
  int before = attn_set_num_threads(3);
  EXPECT_EQ(probe(), 3);
  EXPECT_EQ(attn_get_num_threads(), 3);
  EXPECT_EQ(attn_set_num_threads(0), 3);
  EXPECT_EQ(probe(), 0);
  attn_set_num_threads(before);
  dlclose(handle);
}

TEST_F(Library, ConcurrentRunsKeepTheirOwnResultsAndErrors) {
  std::vector<std::thread> threads;
  std::vector<double> errors(4, 0.0);
  std::vector<std::string> messages(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) {
        AttentionCase c(t == 3 ? 4 : 2, 3 + t, 5, unsigned(t * 100 + r));
        std::vector<attn_tensor> args = c.tensors();
        char err[512];
        attn_status s = attn_kernel_run(attn, args.data(), 4, err, sizeof err);
        if (t == 3) {
          messages[3] = s == ATTN_ERROR_KERNEL ? err : "wrong status";
        } else {
          if (s != ATTN_OK)
            messages[size_t(t)] = err;
          errors[size_t(t)] = std::max(errors[size_t(t)], c.maxError());
        }
      }
    });
  for (std::thread &th : threads)
    th.join();
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(messages[size_t(t)], "") << t;
    EXPECT_LE(errors[size_t(t)], 1e-5) << t;
  }
  EXPECT_EQ(messages[3], "kernel 'naive_attn' failed: Input buffer q is "
                         "accessed at 3, which is beyond the max (2) in "
                         "dimension 3");
}

TEST_F(Library, IntegerAndByteArguments) {
  const attn_kernel *masked = attn_kernel_find(lib, "masked_sum");
  std::vector<float> x = {1, 2, 3, 4, 10, 20, 30, 40};
  std::vector<uint8_t> keep = {1, 0, 1, 1, 1, 1, 0, 1};
  std::vector<int32_t> lens = {3, 4};
  std::vector<float> out(2);
  int64_t xs[] = {2, 4}, bs[] = {2};
  std::vector<attn_tensor> args = {{x.data(), ATTN_F32, 2, xs, nullptr},
                                   {keep.data(), ATTN_U8, 2, xs, nullptr},
                                   {lens.data(), ATTN_I32, 1, bs, nullptr},
                                   {out.data(), ATTN_F32, 1, bs, nullptr}};
  EXPECT_EQ(run(masked, args, ATTN_OK), "");
  EXPECT_EQ(out, (std::vector<float>{4, 70}));
  args[2].dtype = ATTN_U8;
  EXPECT_EQ(run(masked, args, ATTN_ERROR_ARGUMENT),
            "argument 'lens': dtype is u8 but the kernel expects i32");
}

TEST(LibraryHalf, SixteenBitArgumentsAreTheirOwnDtypes) {
  // half_io: h f16[N], b bf16[N] -> h_out f16[N], b_out bf16[N], sum f32[N];
  // 16-bit data travels as uint16_t bits (1.5 in f16, -2 in bf16).
  attn::Library lib = attn::Library::open(fakeLib("half"));
  attn::Kernel k = lib.kernel("half_io");
  std::vector<attn::Argument> args = k.arguments();
  ASSERT_EQ(args.size(), 5u);
  EXPECT_EQ(args[0].dtype, ATTN_F16);
  EXPECT_EQ(args[1].dtype, ATTN_BF16);
  EXPECT_EQ(args[0].shapeText, "f16[N]");
  EXPECT_EQ(args[3].shapeText, "bf16[N]");
  std::vector<uint16_t> h = {0x3e00, 0x3e00}, b = {0xc000, 0xc000}, hOut(2), bOut(2);
  std::vector<float> sum(2);
  int64_t n[] = {2};
  std::vector<attn_tensor> t = {{h.data(), ATTN_F16, 1, n, nullptr},
                                {b.data(), ATTN_BF16, 1, n, nullptr},
                                {hOut.data(), ATTN_F16, 1, n, nullptr},
                                {bOut.data(), ATTN_BF16, 1, n, nullptr},
                                {sum.data(), ATTN_F32, 1, n, nullptr}};
  char err[256] = "";
  ASSERT_EQ(attn_kernel_run(k.c(), t.data(), t.size(), err, sizeof err), ATTN_OK) << err;
  EXPECT_EQ(sum, (std::vector<float>{-0.5f, -0.5f}));
  EXPECT_EQ(bOut, b);
  // f16 and bf16 have the same size but are not interchangeable.
  t[0].dtype = ATTN_BF16;
  EXPECT_EQ(attn_kernel_run(k.c(), t.data(), t.size(), err, sizeof err), ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(err, "argument 'h': dtype is bf16 but the kernel expects f16");
  t[0].dtype = ATTN_F32;
  EXPECT_EQ(attn_kernel_run(k.c(), t.data(), t.size(), err, sizeof err), ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(err, "argument 'h': dtype is f32 but the kernel expects f16");
}

TEST(LibraryLoad, RefusesWhatIsNotAKernelLibrary) {
  struct Case {
    std::string path;
    attn_status status;
    std::string message;
  } cases[] = {
      {"/nonexistent/libx.so", ATTN_ERROR_LOAD,
       "cannot load '/nonexistent/libx.so': No such file or directory"},
      {fakeLib("no_list"), ATTN_ERROR_LOAD,
       "'" + fakeLib("no_list") +
           "' is not an attnc kernel library (it has no 'attnc_kernels' list)"},
      {fakeLib("empty_list"), ATTN_ERROR_LOAD,
       "'" + fakeLib("empty_list") + "' lists no kernels"},
      {fakeLib("no_signature"), ATTN_ERROR_LOAD,
       "'" + fakeLib("no_signature") +
           "': kernel 'naive_attn' has no 'naive_attn_attnc_signature'"},
      {fakeLib("bad_signature"), ATTN_ERROR_LOAD,
       "'" + fakeLib("bad_signature") +
           "': kernel 'naive_attn' has a malformed 'naive_attn_attnc_signature'"},
      {fakeLib("bad_rank"), ATTN_ERROR_LOAD,
       "'" + fakeLib("bad_rank") +
           "': kernel 'naive_attn': argument 'q' has rank 4 in the signature "
           "but 3 in the Halide metadata"},
  };
  for (const Case &c : cases) {
    attn_library *lib = reinterpret_cast<attn_library *>(1);
    char err[512];
    EXPECT_EQ(attn_library_open(c.path.c_str(), &lib, err, sizeof err), c.status);
    EXPECT_EQ(err, c.message);
    EXPECT_EQ(lib, nullptr);
  }
}

TEST(LibraryLoad, RefusesNonElfFiles) {
  std::string path = testing::TempDir() + "/not_a_library.so";
  FILE *f = std::fopen(path.c_str(), "w");
  std::fputs("kernel x { head_dim = 4 }\n", f);
  std::fclose(f);
  attn_library *lib = nullptr;
  char err[512];
  EXPECT_EQ(attn_library_open(path.c_str(), &lib, err, sizeof err), ATTN_ERROR_LOAD);
  EXPECT_EQ(std::string(err), "cannot load '" + path + "': not an ELF file");
  std::remove(path.c_str());
  EXPECT_EQ(attn_library_open(nullptr, &lib, err, sizeof err), ATTN_ERROR_INVALID);
}

TEST(CxxApi, LibraryKernelTensor) {
  attn::Library lib = attn::Library::open(fakeLib("good"));
  ASSERT_EQ(lib.kernels().size(), 2u);
  attn::Kernel k = lib.kernel("naive_attn");
  EXPECT_EQ(k.argument(3).name, "out");
  EXPECT_TRUE(k.argument(3).isOutput);
  EXPECT_EQ(k.argument(0).shapeText, "f32[B, H=2, Lq, D=3]");
  AttentionCase c(2, 4, 6);
  std::vector<attn::Tensor> args = {{c.q.data(), c.qShape},
                                    {c.k.data(), c.kShape},
                                    {c.v.data(), c.vShape},
                                    {c.out.data(), c.outShape}};
  EXPECT_EQ(k.outputShape(args, 3), c.outShape);
  k.run(args);
  EXPECT_LE(c.maxError(), 1e-5);
  args[1] = attn::Tensor(c.k.data(), {2, 2, 5, 3});
  try {
    k.run(args);
    FAIL() << "no exception";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_ARGUMENT);
    EXPECT_STREQ(e.what(), "argument 'v': dimension 2 (Lk) is 6 but 'k' has Lk = 5");
  }
  try {
    lib.kernel("nope");
    FAIL() << "no exception";
  } catch (const attn::Error &e) {
    EXPECT_EQ(std::string(e.what()), "no kernel 'nope' in '" + fakeLib("good") + "'");
  }
  try {
    attn::Library::open(fakeLib("no_list"));
    FAIL() << "no exception";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_LOAD);
  }
  attn::Library moved = std::move(lib);
  EXPECT_EQ(moved.kernels().size(), 2u);
}
