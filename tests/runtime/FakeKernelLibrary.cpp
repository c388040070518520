//===- FakeKernelLibrary.cpp - A hand-written stand-in for attnc output ---===//
//
// Exports what `attnc -o libx.so` exports (attnc_kernels, NAME_argv,
// NAME_metadata, NAME_attnc_signature) plus a minimal fake of the Halide
// runtime's error and thread hooks, so the runtime's loader, buffer building,
// error routing and thread control are tested without the compiler. Built in
// several variants (FAKE_VARIANT) that are broken in one way each, one
// (half) that holds a kernel of f16 and bf16 arguments instead, and one
// (cache) with an in-out argument, a KV cache updated in place, whose
// broken twin (cache_bad_kind) declares that argument an input to Halide.
//
//===----------------------------------------------------------------------===//
#include "runtime/HalfFloat.h"

#include <HalideRuntime.h>

#include <cmath>
#include <cstdio>

#ifndef FAKE_VARIANT
#define FAKE_VARIANT 0
#endif
#define FAKE_GOOD 0
#define FAKE_NO_LIST 1
#define FAKE_BAD_RANK 2
#define FAKE_NO_SIGNATURE 3
#define FAKE_BAD_SIGNATURE 4
#define FAKE_EMPTY_LIST 5
#define FAKE_HALF 6
#define FAKE_CACHE 7
#define FAKE_CACHE_BAD_KIND 8

namespace {
void defaultError(void *, const char *msg) { std::fprintf(stderr, "%s", msg); }
halide_error_handler_t errorHandler = defaultError;
int numThreads = 0;

float at(const halide_buffer_t *b, int i0, int i1, int i2, int i3) {
  const float *p = reinterpret_cast<const float *>(b->host);
  return p[i0 * b->dim[0].stride + i1 * b->dim[1].stride +
           i2 * b->dim[2].stride + i3 * b->dim[3].stride];
}
} // namespace

extern "C" {

// --- The fake Halide runtime --------------------------------------------------
halide_error_handler_t halide_set_error_handler(halide_error_handler_t h) {
  halide_error_handler_t old = errorHandler;
  errorHandler = h;
  return old;
}
void halide_error(void *uc, const char *msg) { errorHandler(uc, msg); }
int halide_set_num_threads(int n) {
  int old = numThreads;
  numThreads = n;
  return old;
}
/// For the tests: the last value given to halide_set_num_threads.
int fake_num_threads(void) { return numThreads; }

// --- naive_attn: q[B, H=2, Lq, D=3], k/v[B, H=2, Lk, 3|Dv=2] -------------------
// Plain softmax(q k^T / sqrt(3)) v, reading through Halide buffer strides
// (dim 0 innermost). argv[0] is __user_context, as with Halide's user_context
// feature. B > 3 makes it fail like a Halide bounds check would.
int naive_attn_argv(void **args) {
  const halide_buffer_t *q = static_cast<halide_buffer_t *>(args[1]);
  const halide_buffer_t *k = static_cast<halide_buffer_t *>(args[2]);
  const halide_buffer_t *v = static_cast<halide_buffer_t *>(args[3]);
  halide_buffer_t *out = static_cast<halide_buffer_t *>(args[4]);
  void *uc = *static_cast<void **>(args[0]);
  int B = q->dim[3].extent, H = q->dim[2].extent, Lq = q->dim[1].extent;
  int D = q->dim[0].extent, Lk = k->dim[1].extent, Dv = v->dim[0].extent;
  if (B > 3) {
    halide_error(uc, "Input buffer q is accessed at 3, which is beyond the max "
                     "(2) in dimension 3\n");
    return -4; // halide_error_code_access_out_of_bounds
  }
  float *o = reinterpret_cast<float *>(out->host);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < Lq; ++i) {
        float s[64], m = -INFINITY, sum = 0;
        for (int j = 0; j < Lk; ++j) {
          float dot = 0;
          for (int d = 0; d < D; ++d)
            dot += at(q, d, i, h, b) * at(k, d, j, h, b);
          s[j] = dot / std::sqrt(float(D));
          m = std::fmax(m, s[j]);
        }
        for (int j = 0; j < Lk; ++j)
          sum += (s[j] = std::exp(s[j] - m));
        for (int e = 0; e < Dv; ++e) {
          float acc = 0;
          for (int j = 0; j < Lk; ++j)
            acc += s[j] / sum * at(v, e, j, h, b);
          o[e * out->dim[0].stride + i * out->dim[1].stride +
            h * out->dim[2].stride + b * out->dim[3].stride] = acc;
        }
      }
  return 0;
}

static const halide_type_t kF32(halide_type_float, 32);
static const halide_type_t kI32(halide_type_int, 32);
static const halide_type_t kU8(halide_type_uint, 8);
static const halide_type_t kHandle(halide_type_handle, 64);

static const halide_filter_argument_t naiveArgs[] = {
    {"__user_context", halide_argument_kind_input_scalar, 0, kHandle,
     nullptr, nullptr, nullptr, nullptr, nullptr},
    {"q", halide_argument_kind_input_buffer, FAKE_VARIANT == FAKE_BAD_RANK ? 3 : 4,
     kF32, nullptr, nullptr, nullptr, nullptr, nullptr},
    {"k", halide_argument_kind_input_buffer, 4, kF32, nullptr, nullptr, nullptr,
     nullptr, nullptr},
    {"v", halide_argument_kind_input_buffer, 4, kF32, nullptr, nullptr, nullptr,
     nullptr, nullptr},
    {"out", halide_argument_kind_output_buffer, 4, kF32, nullptr, nullptr,
     nullptr, nullptr, nullptr},
};
static const halide_filter_metadata_t naiveMetadata = {
    1, 5, naiveArgs, "x86-64-linux-fake", "naive_attn"};
const halide_filter_metadata_t *naive_attn_metadata(void) {
  return &naiveMetadata;
}

#if FAKE_VARIANT == FAKE_BAD_SIGNATURE
const char *naive_attn_attnc_signature = "q in f32\n";
#elif FAKE_VARIANT != FAKE_NO_SIGNATURE
const char *naive_attn_attnc_signature = "q in f32 B,H=2,Lq,D=3\n"
                                         "k in f32 B,H=2,Lk,D=3\n"
                                         "v in f32 B,H=2,Lk,Dv=2\n"
                                         "out out f32 B,H=2,Lq,Dv=2\n";
#endif

// --- masked_sum: x f32[B, L], keep u8[B, L], lens i32[B] -> out f32[B] ---------
// out[b] = sum of x[b, l] over l < lens[b] with keep[b, l] != 0. Its
// signature is an array (the other accepted form) and its metadata names
// the arguments in Halide's order, outputs last, without user_context.
int masked_sum_argv(void **args) {
  const halide_buffer_t *x = static_cast<halide_buffer_t *>(args[0]);
  const halide_buffer_t *keep = static_cast<halide_buffer_t *>(args[1]);
  const halide_buffer_t *lens = static_cast<halide_buffer_t *>(args[2]);
  halide_buffer_t *out = static_cast<halide_buffer_t *>(args[3]);
  int B = x->dim[1].extent, L = x->dim[0].extent;
  for (int b = 0; b < B; ++b) {
    float acc = 0;
    int len = reinterpret_cast<const int32_t *>(lens->host)[b];
    for (int l = 0; l < L && l < len; ++l)
      if (keep->host[b * keep->dim[1].stride + l])
        acc += reinterpret_cast<const float *>(x->host)[b * x->dim[1].stride + l];
    reinterpret_cast<float *>(out->host)[b] = acc;
  }
  return 0;
}
static const halide_filter_argument_t maskedArgs[] = {
    {"x", halide_argument_kind_input_buffer, 2, kF32, nullptr, nullptr, nullptr,
     nullptr, nullptr},
    {"keep", halide_argument_kind_input_buffer, 2, kU8, nullptr, nullptr,
     nullptr, nullptr, nullptr},
    {"lens", halide_argument_kind_input_buffer, 1, kI32, nullptr, nullptr,
     nullptr, nullptr, nullptr},
    {"out", halide_argument_kind_output_buffer, 1, kF32, nullptr, nullptr,
     nullptr, nullptr, nullptr},
};
static const halide_filter_metadata_t maskedMetadata = {
    1, 4, maskedArgs, "x86-64-linux-fake", "masked_sum"};
const halide_filter_metadata_t *masked_sum_metadata(void) {
  return &maskedMetadata;
}
extern const char masked_sum_attnc_signature[] = "x in f32 B,L\n"
                                          "keep in u8 B,L\n"
                                          "lens in i32 B\n"
                                          "out out f32 B\n";

// --- half_io: h f16[N], b bf16[N] -> h_out f16[N], b_out bf16[N], sum f32[N] --
// Copies h and b bit for bit and adds them in f32, so a test sees exactly
// what attnc-run made of its files and what it writes back.
int half_io_argv(void **args) {
  const halide_buffer_t *h = static_cast<halide_buffer_t *>(args[0]);
  const halide_buffer_t *b = static_cast<halide_buffer_t *>(args[1]);
  const uint16_t *hp = reinterpret_cast<const uint16_t *>(h->host);
  const uint16_t *bp = reinterpret_cast<const uint16_t *>(b->host);
  uint16_t *hOut = reinterpret_cast<uint16_t *>(static_cast<halide_buffer_t *>(args[2])->host);
  uint16_t *bOut = reinterpret_cast<uint16_t *>(static_cast<halide_buffer_t *>(args[3])->host);
  float *sum = reinterpret_cast<float *>(static_cast<halide_buffer_t *>(args[4])->host);
  for (int i = 0; i < h->dim[0].extent; ++i) {
    hOut[i] = hp[i];
    bOut[i] = bp[i];
    sum[i] = attnc::runtime::f16ToFloat(hp[i]) + attnc::runtime::bf16ToFloat(bp[i]);
  }
  return 0;
}
static const halide_type_t kF16(halide_type_float, 16);
static const halide_type_t kBF16(halide_type_bfloat, 16);
static const halide_filter_argument_t halfArgs[] = {
    {"h", halide_argument_kind_input_buffer, 1, kF16, nullptr, nullptr, nullptr,
     nullptr, nullptr},
    {"b", halide_argument_kind_input_buffer, 1, kBF16, nullptr, nullptr, nullptr,
     nullptr, nullptr},
    {"h_out", halide_argument_kind_output_buffer, 1, kF16, nullptr, nullptr,
     nullptr, nullptr, nullptr},
    {"b_out", halide_argument_kind_output_buffer, 1, kBF16, nullptr, nullptr,
     nullptr, nullptr, nullptr},
    {"sum", halide_argument_kind_output_buffer, 1, kF32, nullptr, nullptr,
     nullptr, nullptr, nullptr},
};
static const halide_filter_metadata_t halfMetadata = {
    1, 5, halfArgs, "x86-64-linux-fake", "half_io"};
const halide_filter_metadata_t *half_io_metadata(void) { return &halfMetadata; }
extern const char half_io_attnc_signature[] = "h in f16 N\n"
                                              "b in bf16 N\n"
                                              "h_out out f16 N\n"
                                              "b_out out bf16 N\n"
                                              "sum out f32 N\n";

// --- append: x f32[B, N], cache f32[B, Lmax] (in-out), len i32[B] -> out f32[B]
// Writes x[b, :] into cache[b, len[b] .. len[b] + N - 1] and returns the sum
// of the sequence's rows 0 .. len[b] + N - 1, like a KV-cache kernel: the
// contract lists the cache after x, but Halide's metadata puts it after
// every input (it is an output buffer there), so only names join the two. A
// sequence that does not fit fails before anything is written, with the
// message of a failed Halide `require`.
int append_argv(void **args) {
  const halide_buffer_t *x = static_cast<halide_buffer_t *>(args[0]);
  const halide_buffer_t *len = static_cast<halide_buffer_t *>(args[1]);
  halide_buffer_t *cache = static_cast<halide_buffer_t *>(args[2]);
  halide_buffer_t *out = static_cast<halide_buffer_t *>(args[3]);
  int B = x->dim[1].extent, N = x->dim[0].extent, Lmax = cache->dim[0].extent;
  const int32_t *lens = reinterpret_cast<const int32_t *>(len->host);
  for (int b = 0; b < B; ++b)
    if (lens[b] < 0 || lens[b] > Lmax - N) {
      char message[256];
      std::snprintf(message, sizeof message,
                    "Requirement Failed: ((cache_overflow[0] == %d)) 0 KV cache: sequence %d "
                    "has cache_len %d and %d new tokens, more than its cache's %d rows; "
                    "nothing was written\n",
                    B, b, lens[b], N, Lmax);
      halide_error(nullptr, message);
      return -27; // halide_error_code_requirement_failed
    }
  float *c = reinterpret_cast<float *>(cache->host);
  const float *xp = reinterpret_cast<const float *>(x->host);
  for (int b = 0; b < B; ++b) {
    float sum = 0;
    for (int n = 0; n < N; ++n)
      c[b * cache->dim[1].stride + lens[b] + n] = xp[b * x->dim[1].stride + n];
    for (int t = 0; t < lens[b] + N; ++t)
      sum += c[b * cache->dim[1].stride + t];
    reinterpret_cast<float *>(out->host)[b] = sum;
  }
  return 0;
}
static const halide_filter_argument_t appendArgs[] = {
    {"x", halide_argument_kind_input_buffer, 2, kF32, nullptr, nullptr, nullptr,
     nullptr, nullptr},
    {"len", halide_argument_kind_input_buffer, 1, kI32, nullptr, nullptr, nullptr,
     nullptr, nullptr},
    {"cache",
     FAKE_VARIANT == FAKE_CACHE_BAD_KIND ? halide_argument_kind_input_buffer
                                         : halide_argument_kind_output_buffer,
     2, kF32, nullptr, nullptr, nullptr, nullptr, nullptr},
    {"out", halide_argument_kind_output_buffer, 1, kF32, nullptr, nullptr,
     nullptr, nullptr, nullptr},
};
static const halide_filter_metadata_t appendMetadata = {
    1, 4, appendArgs, "x86-64-linux-fake", "append"};
const halide_filter_metadata_t *append_metadata(void) { return &appendMetadata; }
extern const char append_attnc_signature[] = "x in f32 B,N\n"
                                             "cache inout f32 B,Lmax\n"
                                             "len in i32 B\n"
                                             "out out f32 B\n";

#if FAKE_VARIANT == FAKE_EMPTY_LIST
extern const char *const attnc_kernels[] = {nullptr};
#elif FAKE_VARIANT == FAKE_HALF
extern const char *const attnc_kernels[] = {"half_io", nullptr};
#elif FAKE_VARIANT == FAKE_CACHE || FAKE_VARIANT == FAKE_CACHE_BAD_KIND
extern const char *const attnc_kernels[] = {"append", nullptr};
#elif FAKE_VARIANT != FAKE_NO_LIST
extern const char *const attnc_kernels[] = {"naive_attn", "masked_sum", nullptr};
#endif

} // extern "C"
