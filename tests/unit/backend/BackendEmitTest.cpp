//===- BackendEmitTest.cpp - Artifacts of emitArtifact, loaded and run ----===//
//
// Emits a two-kernel shared library, loads it with dlopen and checks what the
// runtime relies on: attnc_kernels, NAME_attnc_signature, NAME_run's numbers
// against the float64 reference and its size / NULL checks, NAME_argv and
// NAME_metadata. Also checks the header text, the lowered statement (parallel,
// vectorized, no Lq x Lk buffer) and that bad requests become BackendErrors.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AttentionAlgorithm.h"
#include "compiler/HalideBackend/EmitKernel.h"
#include "compiler/HalideBackend/RunWrapper.h"
#include "tests/unit/backend/JitKernel.h"
#include "tests/unit/backend/LowerForTest.h"
#include "tests/unit/backend/ReferenceAttention.h"

#include <gtest/gtest.h>

#include <HalideRuntime.h>

#include <cmath>
#include <dlfcn.h>
#include <fstream>
#include <random>
#include <sstream>

using namespace attnc;
using namespace attnc::halide_backend;

namespace {

KernelSpec spec(const std::string &name, bool causal, int H, int G, int D) {
  KernelSpec s;
  s.name = name;
  s.heads = H;
  s.kvHeads = G;
  s.headDim = s.keyDim = s.valueDim = D;
  s.scale = 1.0 / std::sqrt((double)D);
  if (causal)
    s.masks.push_back({MaskKind::Causal, {}, 0, nullptr});
  return s;
}

std::vector<AttentionConfig> twoKernels() {
  std::vector<AttentionConfig> configs;
  configs.push_back(test::lowerSpec(spec("mha_causal", true, 2, 2, 32), "mha_causal"));
  configs.push_back(test::lowerSpec(spec("gqa_full", false, 4, 2, 16), "gqa_full"));
  return configs;
}

std::string tmpPath(const std::string &name) {
  return std::string(ATTNC_TEST_TMPDIR) + "/" + name;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

using RunFn = int (*)(const float *, const float *, const float *, float *, int64_t, int64_t,
                      int64_t);

TEST(BackendEmit, SharedLibraryRunsAndCarriesMetadata) {
  std::vector<AttentionConfig> configs = twoKernels();
  std::string so = tmpPath("libemit_test.so");
  emitArtifact(configs, EmitOptions{}, Artifact::SharedLibrary, so);

  void *lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto kernels = (const char *const *)dlsym(lib, "attnc_kernels");
  ASSERT_NE(kernels, nullptr);
  EXPECT_STREQ(kernels[0], "mha_causal");
  EXPECT_STREQ(kernels[1], "gqa_full");
  EXPECT_EQ(kernels[2], nullptr);
  auto signature = (const char *)dlsym(lib, "mha_causal_attnc_signature");
  ASSERT_NE(signature, nullptr);
  EXPECT_STREQ(signature, "q in f32 B,H=2,Lq,D=32\nk in f32 B,G=2,Lk,Dk=32\n"
                          "v in f32 B,G=2,Lk,Dv=32\nout out f32 B,H=2,Lq,Dv=32\n");
  auto metadata = (const halide_filter_metadata_t *(*)())dlsym(lib, "gqa_full_metadata");
  ASSERT_NE(metadata, nullptr);
  EXPECT_EQ(metadata()->num_arguments, 4);
  EXPECT_STREQ(metadata()->arguments[0].name, "q");
  EXPECT_STREQ(metadata()->arguments[3].name, "out");
  EXPECT_NE(dlsym(lib, "gqa_full_argv"), nullptr);

  auto run = (RunFn)dlsym(lib, "mha_causal_run");
  ASSERT_NE(run, nullptr);
  const int B = 2, H = 2, Lq = 19, Lk = 70, D = 32;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> q(B * H * Lq * D), k(B * H * Lk * D), v(B * H * Lk * D), out(B * H * Lq * D);
  for (auto *t : {&q, &k, &v})
    for (float &x : *t)
      x = dist(rng);
  ASSERT_EQ(run(q.data(), k.data(), v.data(), out.data(), B, Lq, Lk), 0);
  test::RefOutputs ref = test::referenceAttention(configs[0].kernel, configs[0].scale,
                                                  {B, H, H, Lq, Lk, D, D},
                                                  {q.data(), k.data(), v.data()});
  EXPECT_LE(test::maxDiff(out, ref.out), 1e-4);

  EXPECT_EQ(run(q.data(), k.data(), v.data(), out.data(), 0, Lq, Lk), kRunBadSize);
  EXPECT_EQ(run(q.data(), k.data(), v.data(), out.data(), B, -3, Lk), kRunBadSize);
  EXPECT_EQ(run(q.data(), k.data(), v.data(), out.data(), B, Lq, int64_t(1) << 33), kRunBadSize);
  EXPECT_EQ(run(q.data(), k.data(), v.data(), out.data(), 70000, 70000, 1), kRunBadSize);
  EXPECT_EQ(run(q.data(), nullptr, v.data(), out.data(), B, Lq, Lk), kRunNullPointer);
  dlclose(lib);
}

TEST(BackendEmit, HeaderDeclaresEntryPointsInContractOrder) {
  std::vector<AttentionConfig> configs = twoKernels();
  std::string h = tmpPath("emit_test.h");
  emitArtifact(configs, EmitOptions{}, Artifact::Header, h);
  std::string text = slurp(h);
  EXPECT_NE(text.find("#ifndef ATTNC_EMIT_TEST_H"), std::string::npos) << text;
  EXPECT_NE(text.find("struct halide_buffer_t;"), std::string::npos);
  EXPECT_NE(text.find("#include <stdint.h>"), std::string::npos);
  EXPECT_NE(text.find("int mha_causal(struct halide_buffer_t *q, struct halide_buffer_t *k, "
                      "struct halide_buffer_t *v, struct halide_buffer_t *out);"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("int mha_causal_run(const float *q, const float *k, const float *v, "
                      "float *out, int64_t B, int64_t Lq, int64_t Lk);"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("in  q : f32[B, H=2, Lq, D=32]  (layout bhsd)"), std::string::npos) << text;
  EXPECT_NE(text.find("const struct halide_filter_metadata_t *gqa_full_metadata(void);"),
            std::string::npos);
  EXPECT_NE(text.find("extern const char *const attnc_kernels[];"), std::string::npos);
}

TEST(BackendEmit, StmtIsFusedParallelAndVectorized) {
  std::vector<AttentionConfig> configs;
  configs.push_back(test::lowerSpec(spec("fused", true, 8, 8, 64), "fused"));
  std::string stmt = tmpPath("fused.stmt");
  emitArtifact(configs, EmitOptions{}, Artifact::Stmt, stmt);
  std::string text = slurp(stmt);
  EXPECT_NE(text.find("parallel"), std::string::npos);
  // Vectors of the target's natural float width (x16 on AVX-512, x8 on AVX2).
  int lanes = parseTarget(EmitOptions{}.target, true).natural_vector_size<float>();
  EXPECT_NE(text.find("float32x" + std::to_string(lanes)), std::string::npos) << "x" << lanes;
  // Every allocation is bounded by tile sizes, never by Lk.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find("allocate ") != std::string::npos)
      EXPECT_EQ(line.find("k.extent"), std::string::npos) << line;
}

TEST(BackendEmit, OtherArtifacts) {
  std::vector<AttentionConfig> configs = twoKernels();
  EmitOptions noRuntime;
  noRuntime.withRuntime = false;
  for (auto [artifact, name] : {std::pair{Artifact::Object, "k.o"},
                                {Artifact::StaticLibrary, "libk.a"},
                                {Artifact::Assembly, "k.s"},
                                {Artifact::LLVMIR, "k.ll"},
                                {Artifact::HalideText, "k.halide"},
                                {Artifact::RuntimeObject, "rt.o"}}) {
    std::string path = tmpPath(name);
    std::remove(path.c_str());
    emitArtifact(configs, noRuntime, artifact, path);
    EXPECT_FALSE(slurp(path).empty()) << name;
  }
  std::string ir = slurp(tmpPath("k.ll"));
  EXPECT_NE(ir.find("define i32 @mha_causal_run("), std::string::npos);
  EXPECT_NE(ir.find("@attnc_kernels = constant"), std::string::npos);
  std::string halide = slurp(tmpPath("k.halide"));
  EXPECT_NE(halide.find("func block_pv"), std::string::npos) << halide;
  EXPECT_NE(halide.find("// schedule: tuned"), std::string::npos);
  EXPECT_NE(halide.find("vectorized"), std::string::npos);
}

TEST(BackendEmit, FailuresAreBackendErrors) {
  std::vector<AttentionConfig> configs = twoKernels();
  EmitOptions bad;
  bad.target = "x86-64-nonsense";
  try {
    emitArtifact(configs, bad, Artifact::Object, tmpPath("bad.o"));
    FAIL() << "expected a BackendError";
  } catch (const BackendError &e) {
    EXPECT_NE(std::string(e.what()).find("invalid target 'x86-64-nonsense'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(emitArtifact(configs, EmitOptions{}, Artifact::Object, "-"), BackendError);
  EXPECT_THROW(emitArtifact(configs, EmitOptions{}, Artifact::Object, "/nonexistent/dir/x.o"),
               BackendError);
  std::vector<AttentionConfig> dup = twoKernels();
  dup[1].name = dup[0].name;
  EXPECT_THROW(emitArtifact(dup, EmitOptions{}, Artifact::Object, tmpPath("dup.o")), BackendError);
}

TEST(BackendEmit, CrossTargetObject) {
  std::vector<AttentionConfig> configs = twoKernels();
  EmitOptions arm;
  arm.target = "arm-64-linux";
  std::string path = tmpPath("arm.o");
  emitArtifact(configs, arm, Artifact::Object, path);
  std::string bytes = slurp(path);
  ASSERT_GT(bytes.size(), 20u);
  EXPECT_EQ(bytes.substr(1, 3), "ELF");
  EXPECT_EQ((unsigned char)bytes[18], 183); // EM_AARCH64
}

} // namespace
