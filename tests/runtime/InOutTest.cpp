//===- InOutTest.cpp - In-out arguments (KV caches) in the runtime --------===//
//
// Arguments a kernel reads and updates in place (docs/tools.md §4, a KV
// cache's k_cache and v_cache): the signature's `inout` joined with Halide's
// output buffer of the same name at load time, attn_arg_info.is_written,
// the checker's rules (given, checked like an input, its sizes binding, no
// memory shared with any other argument), a run that updates the caller's
// array, and a failed capacity check reaching the caller as the kernel's
// own words with nothing written. The kernel is FakeKernelLibrary.cpp's
// `append`; compiled KV-cache kernels are tests/lit/Runtime/kv-cache.test
// and tests/python/test_cache.py.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.h"
#include "attn/runtime.hpp"

#include "runtime/ArgCheck.h"
#include "runtime/KernelLibrary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

std::string fakeLib(const char *variant) {
  return std::string(ATTN_FAKE_LIB_DIR) + "/libfake_" + variant + ".so";
}

/// One call of append: x [B, N], cache [B, Lmax] (NaN past each length),
/// len [B], out [B].
struct AppendCall {
  int64_t B, N, Lmax;
  std::vector<float> x, cache, out;
  std::vector<int32_t> len;
  std::vector<int64_t> xShape, cacheShape, lenShape, outShape;

  AppendCall(std::vector<int32_t> lengths, int64_t N, int64_t Lmax)
      : B(int64_t(lengths.size())), N(N), Lmax(Lmax), len(std::move(lengths)),
        xShape{B, N}, cacheShape{B, Lmax}, lenShape{B}, outShape{B} {
    for (int64_t i = 0; i < B * N; ++i)
      x.push_back(float(i + 1) * 0.5f);
    cache.assign(size_t(B * Lmax), NAN);
    for (int64_t b = 0; b < B; ++b)
      for (int32_t t = 0; t < len[size_t(b)] && t < Lmax; ++t)
        cache[size_t(b * Lmax + t)] = float(b * 100 + t);
    out.assign(size_t(B), -1.0f);
  }
  std::vector<attn_tensor> tensors() {
    return {{x.data(), ATTN_F32, 2, xShape.data(), nullptr},
            {cache.data(), ATTN_F32, 2, cacheShape.data(), nullptr},
            {len.data(), ATTN_I32, 1, lenShape.data(), nullptr},
            {out.data(), ATTN_F32, 1, outShape.data(), nullptr}};
  }
};

struct Library {
  attn_library *lib = nullptr;
  explicit Library(const char *variant) {
    char err[512];
    EXPECT_EQ(attn_library_open(fakeLib(variant).c_str(), &lib, err, sizeof err), ATTN_OK)
        << err;
  }
  ~Library() { attn_library_close(lib); }
  const attn_kernel *kernel() const { return attn_kernel_find(lib, "append"); }
};

} // namespace

TEST(InOut, MetadataMarksTheCacheWritten) {
  Library lib("cache");
  const attn_kernel *k = lib.kernel();
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(attn_kernel_arg_count(k), 4u);
  const char *names[] = {"x", "cache", "len", "out"};
  int written[] = {0, 1, 0, 0}, output[] = {0, 0, 0, 1};
  for (size_t i = 0; i < 4; ++i) {
    const attn_arg_info *info = attn_kernel_arg(k, i);
    EXPECT_STREQ(info->name, names[i]);
    EXPECT_EQ(info->is_written, written[i]) << names[i];
    EXPECT_EQ(info->is_output, output[i]) << names[i];
  }
  EXPECT_STREQ(attn_kernel_arg(k, 1)->shape_text, "f32[B, Lmax]");

  attn::Library cpp = attn::Library::open(fakeLib("cache"));
  std::vector<attn::Argument> args = cpp.kernel("append").arguments();
  EXPECT_TRUE(args[1].isWritten);
  EXPECT_FALSE(args[1].isOutput);
  EXPECT_STREQ(args[0].direction(), "in");
  EXPECT_STREQ(args[1].direction(), "inout");
  EXPECT_STREQ(args[3].direction(), "out");
}

TEST(InOut, RunUpdatesTheCallersCacheInPlace) {
  Library lib("cache");
  AppendCall call({2, 0, 5}, 3, 8);
  std::vector<attn_tensor> t = call.tensors();
  float *before = call.cache.data();
  char err[512];
  ASSERT_EQ(attn_kernel_run(lib.kernel(), t.data(), t.size(), err, sizeof err), ATTN_OK) << err;
  EXPECT_EQ(call.cache.data(), before);
  for (int64_t b = 0; b < call.B; ++b) {
    int32_t len = call.len[size_t(b)];
    float sum = 0;
    for (int64_t r = 0; r < call.Lmax; ++r) {
      float got = call.cache[size_t(b * call.Lmax + r)];
      if (r < len)
        EXPECT_EQ(got, float(b * 100 + r)) << b << "," << r;
      else if (r < len + call.N)
        EXPECT_EQ(got, call.x[size_t(b * call.N + r - len)]) << b << "," << r;
      else
        EXPECT_TRUE(std::isnan(got)) << b << "," << r; // never written
      if (r < len + call.N)
        sum += got;
    }
    EXPECT_EQ(call.out[size_t(b)], sum);
  }
}

TEST(InOut, CapacityErrorNamesTheSequenceAndWritesNothing) {
  Library lib("cache");
  AppendCall call({2, 6, 0}, 3, 8); // sequence 1 needs 9 rows of 8
  std::vector<float> before = call.cache;
  std::vector<attn_tensor> t = call.tensors();
  char err[512];
  ASSERT_EQ(attn_kernel_run(lib.kernel(), t.data(), t.size(), err, sizeof err),
            ATTN_ERROR_KERNEL);
  // Halide's "Requirement Failed: (CONDITION) VALUE" prefix is gone.
  EXPECT_STREQ(err, "kernel 'append' failed: KV cache: sequence 1 has cache_len 6 and 3 new "
                    "tokens, more than its cache's 8 rows; nothing was written");
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_TRUE(call.cache[i] == before[i] || (std::isnan(call.cache[i]) && std::isnan(before[i])))
        << i;

  attn::Library cpp = attn::Library::open(fakeLib("cache"));
  try {
    cpp.kernel("append").run({attn::Tensor(call.x.data(), ATTN_F32, call.xShape),
                              attn::Tensor(call.cache.data(), ATTN_F32, call.cacheShape),
                              attn::Tensor(call.len.data(), ATTN_I32, call.lenShape),
                              attn::Tensor(call.out.data(), ATTN_F32, call.outShape)});
    FAIL() << "the overflow was not reported";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_KERNEL);
    EXPECT_NE(std::string(e.what()).find("sequence 1 has cache_len 6"), std::string::npos)
        << e.what();
  }
}

TEST(InOut, TheCacheMustBeGivenAndIsCheckedLikeAnInput) {
  Library lib("cache");
  AppendCall call({1, 2}, 2, 6);
  std::vector<attn_tensor> t = call.tensors();
  char err[512];
  t[1].data = nullptr;
  EXPECT_EQ(attn_kernel_check(lib.kernel(), t.data(), t.size(), err, sizeof err),
            ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(err, "argument 'cache': data is NULL");
  t = call.tensors();
  t[1].dtype = ATTN_BF16;
  EXPECT_EQ(attn_kernel_check(lib.kernel(), t.data(), t.size(), err, sizeof err),
            ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(err, "argument 'cache': dtype is bf16 but the kernel expects f32");
  // Its batch must agree with x's.
  std::vector<int64_t> wrongBatch = {3, 6};
  t = call.tensors();
  t[1].shape = wrongBatch.data();
  EXPECT_EQ(attn_kernel_check(lib.kernel(), t.data(), t.size(), err, sizeof err),
            ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(err, "argument 'cache': dimension 0 (B) is 3 but 'x' has B = 2");

  // Its sizes bind like an input's, also when outputs are not given yet.
  t = call.tensors();
  t[3] = attn_tensor{};
  int64_t Lmax = 0;
  EXPECT_EQ(attn_kernel_size(lib.kernel(), t.data(), t.size(), "Lmax", &Lmax), ATTN_OK);
  EXPECT_EQ(Lmax, 6);
  int64_t outShape[1] = {0};
  EXPECT_EQ(attn_kernel_output_shape(lib.kernel(), t.data(), t.size(), 3, outShape, err,
                                     sizeof err),
            ATTN_OK)
      << err;
  EXPECT_EQ(outShape[0], 2);
  // ...and a missing cache still stops that.
  t[1].data = nullptr;
  EXPECT_EQ(attn_kernel_output_shape(lib.kernel(), t.data(), t.size(), 3, outShape, err,
                                     sizeof err),
            ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(err, "argument 'cache': data is NULL");
}

TEST(InOut, LoadRefusesACacheThatHalideTakesAsAnInput) {
  attn_library *lib = nullptr;
  char err[512];
  EXPECT_EQ(attn_library_open(fakeLib("cache_bad_kind").c_str(), &lib, err, sizeof err),
            ATTN_ERROR_LOAD);
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(std::string(err).find("kernel 'append': argument 'cache' is in-out (a Halide "
                                  "output buffer) in the signature but not in the Halide "
                                  "metadata"),
            std::string::npos)
      << err;
}

// The aliasing rules, on the decoded signature alone.
namespace {
struct Aliasing {
  std::vector<attnc::ArgSpec> args;
  std::vector<float> memory = std::vector<float>(64, 0.0f);
  std::vector<int32_t> len = {0, 0};
  std::vector<int64_t> xShape{2, 2}, cacheShape{2, 4}, lenShape{2}, outShape{2};
  std::vector<attn_tensor> t;
  Aliasing() {
    EXPECT_TRUE(attnc::decodeSignature("x in f32 B,N\n"
                                       "k_cache inout f32 B,Lmax\n"
                                       "v_cache inout f32 B,Lmax\n"
                                       "len in i32 B\n"
                                       "out out f32 B\n",
                                       args));
    t = {{&memory[0], ATTN_F32, 2, xShape.data(), nullptr},
         {&memory[8], ATTN_F32, 2, cacheShape.data(), nullptr},
         {&memory[16], ATTN_F32, 2, cacheShape.data(), nullptr},
         {len.data(), ATTN_I32, 1, lenShape.data(), nullptr},
         {&memory[24], ATTN_F32, 1, outShape.data(), nullptr}};
  }
  std::string check() {
    attnc::runtime::SizeBindings sizes;
    std::string error;
    bool ok = attnc::runtime::checkArguments("kv", args, t.data(), t.size(), sizes, error);
    EXPECT_EQ(ok, error.empty());
    return error;
  }
};
} // namespace

TEST(InOut, DecodedSignatureMarksTheCaches) {
  Aliasing a;
  EXPECT_TRUE(a.args[1].isWritten && a.args[2].isWritten);
  EXPECT_FALSE(a.args[1].isOutput || a.args[0].isWritten || a.args[4].isWritten);
  EXPECT_EQ(a.check(), "");
}

TEST(InOut, ACacheSharesMemoryWithNoOtherArgument) {
  {
    Aliasing a; // the cache over an input
    a.t[1].data = &a.memory[2];
    EXPECT_EQ(a.check(), "argument 'k_cache': its memory overlaps argument 'x'; an in-out "
                         "argument (written in place) must not share memory with another "
                         "argument");
  }
  {
    Aliasing a; // both caches in one array
    a.t[2].data = &a.memory[12];
    EXPECT_EQ(a.check(), "argument 'k_cache': its memory overlaps argument 'v_cache'; an "
                         "in-out argument (written in place) must not share memory with "
                         "another argument");
  }
  {
    Aliasing a; // an output over a cache: the output is blamed
    a.t[4].data = &a.memory[17];
    EXPECT_EQ(a.check(), "argument 'out': its memory overlaps argument 'v_cache'; an output "
                         "must not share memory with another argument");
  }
  {
    Aliasing a; // adjacent, not overlapping
    a.t[2].data = &a.memory[16];
    a.t[1].data = &a.memory[8];
    EXPECT_EQ(a.check(), "");
  }
}

TEST(InOut, HalideRequirementMessagesAreShortened) {
  using attnc::runtime::readableHalideError;
  EXPECT_EQ(readableHalideError("Requirement Failed: ((cache_overflow[0] == (b + (1)))) 0 KV "
                                "cache: sequence 1 has cache_len 9; nothing was written"),
            "KV cache: sequence 1 has cache_len 9; nothing was written");
  // Without a message (only the value), or malformed: unchanged.
  EXPECT_EQ(readableHalideError("Requirement Failed: (x > 0) 0"),
            "Requirement Failed: (x > 0) 0");
  EXPECT_EQ(readableHalideError("Requirement Failed: (x > (0) 1 2"),
            "Requirement Failed: (x > (0) 1 2");
  // A message that does not start with a value keeps its first word.
  EXPECT_EQ(readableHalideError("Requirement Failed: (c) sequence 2 is full"),
            "sequence 2 is full");
  EXPECT_EQ(readableHalideError("Input buffer q is accessed at 3, which is beyond the max"),
            "Input buffer q is accessed at 3, which is beyond the max");
}
