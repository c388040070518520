//===- ArgCheckTest.cpp - Caller tensors against a decoded signature ------===//
//
// Each check of attn_kernel_run's argument checker, with its exact message,
// against signatures decoded from the text generated kernels embed; no
// kernel library is involved.
//
//===----------------------------------------------------------------------===//
#include "runtime/ArgCheck.h"

#include <gtest/gtest.h>

#include <vector>

using namespace attnc;
using namespace attnc::runtime;

namespace {

// bhsd MHA with H = 2 and D = Dv = 4 fixed, B, Lq, Lk dynamic.
const char *kAttention = "q in f32 B,H=2,Lq,D=4\n"
                         "k in f32 B,H=2,Lk,D=4\n"
                         "v in f32 B,H=2,Lk,Dv=4\n"
                         "valid_len in i32 B\n"
                         "mask in u8 B,Lq,Lk\n"
                         "out out f32 B,H=2,Lq,Dv=4\n";

/// Owns the shapes and storage of one call's tensors.
struct Call {
  std::vector<ArgSpec> args;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> storage;
  std::vector<attn_tensor> tensors;

  explicit Call(const char *signature, int64_t B = 2, int64_t Lq = 3,
                int64_t Lk = 5) {
    EXPECT_TRUE(decodeSignature(signature, args));
    std::map<std::string, int64_t> sizes = {{"B", B}, {"Lq", Lq}, {"Lk", Lk}};
    for (const ArgSpec &a : args) {
      std::vector<int64_t> shape;
      int64_t n = 1;
      for (const ArgDim &d : a.shape) {
        shape.push_back(d.value ? d.value : sizes[d.name]);
        n *= shape.back();
      }
      shapes.push_back(shape);
      storage.emplace_back(size_t(n) + 1);
    }
    for (size_t i = 0; i < args.size(); ++i)
      tensors.push_back({storage[i].data(), toDtype(args[i].type),
                         int32_t(shapes[i].size()), shapes[i].data(), nullptr});
  }
  size_t index(const std::string &name) const {
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].name == name)
        return i;
    ADD_FAILURE() << "no argument " << name;
    return 0;
  }
  attn_tensor &operator[](const std::string &name) { return tensors[index(name)]; }
  std::vector<int64_t> &shape(const std::string &name) {
    return shapes[index(name)];
  }
  std::string check(const CheckOptions &options = {}) {
    SizeBindings sizes;
    std::string error;
    bool ok = checkArguments("attn", args, tensors.data(), tensors.size(),
                             sizes, error, options);
    EXPECT_EQ(ok, error.empty());
    return error;
  }
};

} // namespace

TEST(ArgCheck, AcceptsMatchingTensorsAndBindsSizes) {
  Call call(kAttention, 2, 3, 5);
  SizeBindings sizes;
  std::string error;
  ASSERT_TRUE(checkArguments("attn", call.args, call.tensors.data(),
                             call.tensors.size(), sizes, error))
      << error;
  EXPECT_EQ(sizes["B"].value, 2);
  EXPECT_EQ(sizes["Lq"].value, 3);
  EXPECT_EQ(sizes["Lk"].value, 5);
  EXPECT_EQ(sizes["Lk"].argument, "k");
  EXPECT_EQ(sizes["H"].value, 2);
}

TEST(ArgCheck, Count) {
  Call call(kAttention);
  call.tensors.pop_back();
  EXPECT_EQ(call.check(), "kernel 'attn' takes 6 arguments (q, k, v, "
                          "valid_len, mask, out) but 5 were given");
  call.tensors.resize(1);
  EXPECT_EQ(call.check(), "kernel 'attn' takes 6 arguments (q, k, v, "
                          "valid_len, mask, out) but 1 was given");
}

TEST(ArgCheck, NullArrayAndData) {
  Call call(kAttention);
  SizeBindings sizes;
  std::string error;
  EXPECT_FALSE(checkArguments("attn", call.args, nullptr, 6, sizes, error));
  EXPECT_EQ(error, "the argument array is NULL");
  call["v"].data = nullptr;
  EXPECT_EQ(call.check(), "argument 'v': data is NULL");
}

TEST(ArgCheck, Dtype) {
  Call call(kAttention);
  call["valid_len"].dtype = ATTN_F32;
  EXPECT_EQ(call.check(), "argument 'valid_len': dtype is f32 but the kernel expects i32");
  call["valid_len"].dtype = attn_dtype(7);
  EXPECT_EQ(call.check(), "argument 'valid_len': dtype 7 is not an attn_dtype; "
                          "the kernel expects i32");
}

TEST(ArgCheck, Rank) {
  Call call(kAttention);
  call["q"].rank = 3;
  EXPECT_EQ(call.check(), "argument 'q': rank is 3 but the kernel expects 4 "
                          "(f32[B, H=2, Lq, D=4])");
  call["q"].rank = 4;
  call["q"].shape = nullptr;
  EXPECT_EQ(call.check(), "argument 'q': shape is NULL");
}

TEST(ArgCheck, FixedSizes) {
  Call call(kAttention);
  call.shape("k")[1] = 3;
  EXPECT_EQ(call.check(), "argument 'k': dimension 1 (H) is 3 but the kernel "
                          "was compiled for H = 2");
  Call anon("w in f32 8\nout out f32 -\n");
  anon.shape("w")[0] = 9;
  EXPECT_EQ(anon.check(), "argument 'w': dimension 0 is 9 but the kernel expects 8");
}

TEST(ArgCheck, SizeNamesAgreeAcrossArguments) {
  Call call(kAttention, 2, 3, 5);
  call.shape("v")[2] = 7;
  EXPECT_EQ(call.check(), "argument 'v': dimension 2 (Lk) is 7 but 'k' has Lk = 5");
  Call batch(kAttention, 2, 3, 5);
  batch.shape("valid_len")[0] = 4;
  EXPECT_EQ(batch.check(),
            "argument 'valid_len': dimension 0 (B) is 4 but 'q' has B = 2");
  Call mask(kAttention, 2, 3, 5);
  mask.shape("mask")[1] = 5;
  EXPECT_EQ(mask.check(), "argument 'mask': dimension 1 (Lq) is 5 but 'q' has Lq = 3");
  Call out(kAttention, 2, 3, 5);
  out.shape("out")[2] = 4;
  EXPECT_EQ(out.check(), "argument 'out': dimension 2 (Lq) is 4 but 'q' has Lq = 3");
}

TEST(ArgCheck, SelfAttentionTieUsesOneName) {
  // seq_k = seq_q shows up as one size name wherever the signature uses it.
  Call call("x in f32 B,Lq,M=8\nw in f32 M=8,8\nmask in u8 B,Lq,Lq\n"
            "out out f32 B,Lq,M=8\n",
            1, 6, 6);
  call.shape("mask")[2] = 5;
  EXPECT_EQ(call.check(), "argument 'mask': dimension 2 (Lq) is 5 but 'x' has Lq = 6");
}

TEST(ArgCheck, SizesAtLeastOne) {
  Call call(kAttention);
  call.shape("q")[2] = 0;
  EXPECT_EQ(call.check(), "argument 'q': dimension 2 (Lq) is 0; sizes must be at least 1");
  call.shape("q")[2] = -3;
  EXPECT_EQ(call.check(), "argument 'q': dimension 2 (Lq) is -3; sizes must be at least 1");
}

TEST(ArgCheck, HalideInt32Limits) {
  Call call("x in f32 N\nout out f32 N\n", 1, 1, 1);
  call.shape("x")[0] = int64_t(1) << 31;
  EXPECT_EQ(call.check(), "argument 'x': dimension 0 (N) is 2147483648, above "
                          "the 2147483647 limit of a Halide buffer dimension");
  Call two("x in f32 A,C\nout out f32 -\n");
  two.shape("x") = {65536, 65536};
  EXPECT_EQ(two.check(), "argument 'x': shape [65536, 65536] has more than "
                         "2147483647 elements, the limit of a Halide buffer");
}

TEST(ArgCheck, DenseStridesOnly) {
  Call call(kAttention, 2, 3, 5);
  std::vector<int64_t> dense = {24, 12, 4, 1};
  call["q"].strides = dense.data();
  EXPECT_EQ(call.check(), "");
  // Extent-1 dimensions may carry any stride (PyTorch does that).
  Call one(kAttention, 1, 3, 5);
  std::vector<int64_t> loose = {999, 12, 4, 1};
  one["q"].strides = loose.data();
  EXPECT_EQ(one.check(), "");
  std::vector<int64_t> transposed = {24, 4, 8, 1};
  call["q"].strides = transposed.data();
  EXPECT_EQ(call.check(),
            "argument 'q': strides [24, 4, 8, 1] are not dense row-major "
            "(expected [24, 12, 4, 1]); this version of the runtime takes "
            "only dense row-major tensors");
}

TEST(ArgCheck, Alignment) {
  Call call(kAttention);
  call["k"].data = static_cast<char *>(call["k"].data) + 2;
  EXPECT_EQ(call.check(), "argument 'k': data pointer is not aligned to 4 "
                          "bytes (the size of f32)");
  Call bytes(kAttention); // u8 needs no alignment
  bytes["mask"].data = static_cast<char *>(bytes["mask"].data) + 1;
  EXPECT_EQ(bytes.check(), "");
}

TEST(ArgCheck, OutputsMustNotAlias) {
  Call call(kAttention);
  call["out"].data = call["q"].data;
  EXPECT_EQ(call.check(), "argument 'out': its memory overlaps argument 'q'; "
                          "an output must not share memory with another argument");
}

TEST(ArgCheck, InputsOnlyIgnoresOutputsAndGivesOutputShapes) {
  Call call(kAttention, 2, 3, 5);
  call["out"] = attn_tensor{}; // not allocated yet
  CheckOptions options;
  options.inputsOnly = true;
  SizeBindings sizes;
  std::string error;
  ASSERT_TRUE(checkArguments("attn", call.args, call.tensors.data(),
                             call.tensors.size(), sizes, error, options))
      << error;
  std::vector<int64_t> shape;
  ASSERT_TRUE(shapeFromSizes(call.args.back(), sizes, shape, error)) << error;
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 2, 3, 4}));
  ArgSpec orphan{"extra", ElemType::F32, true, {{"T", 0}}};
  EXPECT_FALSE(shapeFromSizes(orphan, sizes, shape, error));
  EXPECT_EQ(error, "argument 'extra': size T is not given by any input");
}

TEST(ArgCheck, RankZeroArguments) {
  Call call("x in f32 -\nout out f32 -\n");
  EXPECT_EQ(call.check(), "");
  EXPECT_EQ(call.tensors[0].rank, 0);
}

TEST(ArgCheck, FitsHalideBufferForOutputsBeforeAllocation) {
  ArgSpec weights{"weights", ElemType::F32, true, {{"B", 0}, {"H", 4}, {"Lq", 0}, {"Lk", 0}}};
  std::string error;
  EXPECT_TRUE(fitsHalideBuffer(weights, {1, 4, 1000, 1000}, error)) << error;
  EXPECT_FALSE(fitsHalideBuffer(weights, {1, 4, 65536, 65536}, error));
  EXPECT_EQ(error, "argument 'weights': shape [1, 4, 65536, 65536] has more than 2147483647 "
                   "elements, the limit of a Halide buffer");
  EXPECT_FALSE(fitsHalideBuffer(weights, {1, 4, int64_t(1) << 31, 1}, error));
  EXPECT_EQ(error, "argument 'weights': dimension 2 (Lq) is 2147483648, above the 2147483647 "
                   "limit of a Halide buffer dimension");
}
