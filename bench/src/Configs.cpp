//===- Configs.cpp - The benchmarked configurations and their inputs ------===//
//
// The configurations of the benchmark issue: multi-head self-attention at
// four lengths with and without a causal mask, GQA/MHA decode, d2l's additive
// (Bahdanau) attention, self-attention with projections (nn.MultiheadAttention)
// and a sliding window, plus bf16 / f16 storage variants of N=2048 prefill and
// Lk=32768 decode, and KV caches (decode from contiguous and paged caches,
// sequences of unequal lengths, chunked prefill). FLOPs count 2 per multiply-add and only visible pairs,
// so a kernel that skips masked keys is not credited with work it did not do.
//
//===----------------------------------------------------------------------===//
#include "bench/src/Configs.h"

#include "runtime/HalfFloat.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnc_bench {

static Config sdpa(int64_t n, bool causal, bool quick) {
  Config c;
  c.kind = Kind::Sdpa;
  c.H = c.G = 8;
  c.Lq = c.Lk = n;
  c.D = c.Dv = 64;
  c.mask = causal ? Mask::Causal : Mask::None;
  c.id = "mha_n" + std::to_string(n) + (causal ? "_causal" : "");
  c.kernel = c.id;
  c.label = "MHA B=1 H=8 D=64 N=" + std::to_string(n) + (causal ? " causal" : "");
  c.quick = quick;
  return c;
}

static Config decode(int64_t lk, int64_t g, bool quick) {
  Config c;
  c.kind = Kind::Sdpa;
  c.H = 32;
  c.G = g;
  c.Lq = 1;
  c.Lk = lk;
  c.D = c.Dv = 128;
  c.memoryBound = true;
  c.id = "decode_lk" + std::to_string(lk) + "_g" + std::to_string(g);
  c.kernel = c.id;
  c.label = "decode H=32 G=" + std::to_string(g) + " D=128 Lk=" + std::to_string(lk);
  c.quick = quick;
  return c;
}

// Unused blocks at the end of a paged pool (NaN: never read).
static constexpr int64_t kSpareBlocks = 8;

// Decode (Lq = 1, H=32, G=8, D=128) of one new token per sequence onto caches
// holding `lens` tokens.
static Config cacheDecode(const std::string &id, CacheKind kind, std::vector<int64_t> lens) {
  Config c = decode(32768, 8, false);
  c.id = c.kernel = id;
  c.cache = kind;
  c.block = kind == CacheKind::Paged ? 16 : 0;
  c.cacheLens = std::move(lens);
  c.B = int64_t(c.cacheLens.size());
  c.Lk = *std::max_element(c.cacheLens.begin(), c.cacheLens.end()) + c.Lq;
  c.label = "decode B=" + std::to_string(c.B) + " H=32 G=8 D=128, cache " + c.cacheName();
  return c;
}

static std::vector<Config> buildConfigs() {
  std::vector<Config> all;
  for (int64_t n : {128, 512, 2048, 8192})
    for (bool causal : {false, true})
      all.push_back(sdpa(n, causal, n == 512));
  for (int64_t lk : {4096, 32768})
    for (int64_t g : {8, 32})
      all.push_back(decode(lk, g, lk == 4096 && g == 8));

  Config add;
  add.kind = Kind::Additive;
  add.id = add.kernel = "additive_d2l";
  add.label = "additive (d2l) B=64 Lq=1 Lk=512 hidden=256";
  add.B = 64;
  add.H = add.G = 1;
  add.Lq = 1;
  add.Lk = 512;
  add.D = add.Dv = 256;
  add.hidden = 256;
  add.quick = true;
  all.push_back(add);

  Config proj;
  proj.kind = Kind::Projection;
  proj.id = proj.kernel = "mha_proj_n512";
  proj.label = "MHA+proj model=512 H=8 N=512";
  proj.H = proj.G = 8;
  proj.Lq = proj.Lk = 512;
  proj.D = proj.Dv = 64;
  proj.modelDim = 512;
  proj.quick = true;
  all.push_back(proj);

  Config win = sdpa(8192, false, false);
  win.mask = Mask::Window;
  win.window = 256;
  win.id = win.kernel = "window256_n8192";
  win.label = "MHA H=8 D=64 N=8192 window 256";
  all.push_back(win);

  // Language version 2 (docs/language.md §9): StreamingLLM's window with
  // attention sinks, and rotary embeddings against the same kernel without.
  Config sinks = sdpa(8192, true, false);
  sinks.mask = Mask::WindowSink;
  sinks.window = 256;
  sinks.sink = 4;
  sinks.id = sinks.kernel = "window256_sink4_n8192";
  sinks.label = "MHA H=8 D=64 N=8192 causal & (window 256 | sink 4)";
  all.push_back(sinks);
  for (int64_t n : {512, 2048}) {
    Config rope = sdpa(n, true, n == 512);
    rope.rotary = true;
    rope.id = rope.kernel = "mha_n" + std::to_string(n) + "_causal_rotary";
    rope.label += " rotary";
    if (n == 2048)
      rope.alternateWith = {"mha_n2048_causal"}; // issue 13: rotary adds at most 5%
    all.push_back(rope);
  }

  // A packed batch (FlashAttention's varlen) of 8 causal prompts of 64 to 2048
  // tokens, against one sequence of the same visible work (2922^2 / 2 ~ the
  // sum of L^2 / 2), both with dynamic sizes (docs/language.md, packed batches).
  Config packed = sdpa(1, true, false);
  packed.kind = Kind::Packed;
  packed.seqLens = {64, 2048, 128, 1024, 256, 512, 1536, 768};
  packed.Lq = packed.Lk = cuSeqlens(packed).back(); // 6336 tokens
  packed.id = packed.kernel = "packed8_causal";
  packed.label = "packed 8 seqs 64..2048 H=8 D=64 causal";
  // Issue 13: at least 90% of one sequence's GFLOP/s (of the dense kernel, and
  // of the packed kernel's own).
  packed.alternateWith = {"mha_dyn_causal_n2922", "packed1_causal_n2922"};
  all.push_back(packed);
  Config equal = sdpa(2922, true, false);
  equal.id = equal.kernel = "mha_dyn_causal_n2922";
  equal.label = "MHA H=8 D=64 N=2922 causal, dynamic sizes (packed8's work)";
  all.push_back(equal);
  // The same one sequence through the packed kernel: its token-major rows and
  // their copies, without the batch's eight sequences (what packing itself costs).
  Config single = packed;
  single.seqLens = {2922};
  single.Lq = single.Lk = 2922;
  single.id = "packed1_causal_n2922";
  single.label = "packed 1 seq of 2922 H=8 D=64 causal (packed8's work)";
  all.push_back(single);

  // The fixed-size N=2048 kernels again with every size dynamic (issue 20:
  // within 5% of the fixed ones).
  for (bool causal : {false, true}) {
    Config dynamic = sdpa(2048, causal, false);
    dynamic.kernel = causal ? "mha_dyn_causal" : "mha_dyn";
    dynamic.id = "mha_dyn_n2048" + std::string(causal ? "_causal" : "");
    dynamic.label += ", dynamic sizes";
    dynamic.alternateWith = {causal ? "mha_n2048_causal" : "mha_n2048"}; // issue 20: within 5%
    all.push_back(dynamic);
  }

  // The head_dim most models use: a Llama-3-8B layer's prefill (GQA, causal).
  Config llama = sdpa(2048, true, false);
  llama.H = 32;
  llama.G = 8;
  llama.D = llama.Dv = 128;
  llama.id = llama.kernel = "gqa_d128_n2048_causal";
  llama.label = "GQA H=32 G=8 D=128 N=2048 causal (Llama-3 8B prefill)";
  all.push_back(llama);

  // The portable object (docs/targets.md) against the host one, same kernel:
  // dispatch happens once per call, so they should run alike.
  for (int64_t n : {512, 2048}) {
    Config portable = sdpa(n, false, n == 512);
    portable.id += "_portable";
    portable.label += ", --target=portable";
    portable.target = "portable";
    all.push_back(portable);
  }

  // 16-bit storage (docs/language.md, storage types), against the f32 rows of
  // the same shape:
  // bf16 prefill (q, k, v, out) next to mha_n2048[_causal], one f16 prefill,
  // and f32 queries over a bf16 or f16 KV cache next to decode_lk32768_g8.
  for (bool causal : {false, true}) {
    Config half = sdpa(2048, causal, false);
    half.dtype = half.kvDtype = Dtype::Bf16;
    half.id = half.kernel = half.id + "_bf16";
    half.label += ", bf16";
    half.alternateWith = {causal ? "mha_n2048_causal" : "mha_n2048"}; // issue 14: 1.6x
    all.push_back(half);
  }
  Config f16 = sdpa(2048, false, false);
  f16.dtype = f16.kvDtype = Dtype::F16;
  f16.id = f16.kernel = f16.id + "_f16";
  f16.label += ", f16";
  all.push_back(f16);
  for (Dtype kv : {Dtype::Bf16, Dtype::F16}) {
    Config cache = decode(32768, 8, false);
    cache.kvDtype = kv;
    cache.id = cache.kernel = cache.id + "_kv" + dtypeName(kv);
    cache.label += ", " + dtypeName(kv) + " K/V";
    cache.alternateWith = {"decode_lk32768_g8"}; // issue 14: 1.8x
    all.push_back(cache);
  }

  // KV caches (docs/language.md, KV caches): the kernel appends the new rows
  // in place and attends the whole sequence. Decode of 4 sequences of 32767
  // cached tokens (32768 keys with the new one) from a contiguous and a paged
  // cache (f32, and bf16 against the f32 paged row); 8 sequences of 1k to
  // 32k tokens in one batch, whose time the paged row's bandwidth predicts;
  // a chunk of 512 prompt tokens onto 4096 cached ones.
  const std::vector<int64_t> four(4, 32767);
  Config contig = cacheDecode("decode_cache_contig_b4", CacheKind::Contiguous, four);
  contig.label += ", 32767 cached + 1";
  all.push_back(contig);
  Config paged = cacheDecode("decode_cache_paged16_b4", CacheKind::Paged, four);
  paged.label += ", 32767 cached + 1";
  all.push_back(paged);
  Config pagedBf16 = paged;
  pagedBf16.id = pagedBf16.kernel = paged.id + "_bf16";
  pagedBf16.kvDtype = Dtype::Bf16;
  pagedBf16.label += ", bf16 K/V";
  pagedBf16.compareTo = paged.id;
  all.push_back(pagedBf16);
  // The paged row through a kernel with a run-time seq_q, which serves prefill
  // too (examples/generate): its decode variant is picked at Lq = 1.
  Config pagedDyn = paged;
  pagedDyn.id = pagedDyn.kernel = "decode_cache_paged16_b4_dyn";
  pagedDyn.label += ", seq_q dynamic";
  pagedDyn.compareTo = paged.id;
  all.push_back(pagedDyn);
  Config unequal = cacheDecode("decode_cache_unequal", CacheKind::Paged,
                               {1024, 2048, 4096, 8192, 12288, 16384, 24576, 32767});
  unequal.label += ", 1k..32k cached + 1";
  unequal.compareTo = paged.id;
  all.push_back(unequal);
  Config chunk = sdpa(4096 + 512, true, false);
  chunk.Lq = 512;
  chunk.cache = CacheKind::Contiguous;
  chunk.cacheLens = {4096};
  chunk.id = chunk.kernel = "prefill_chunk512_on4096";
  chunk.label = "chunked prefill H=8 D=64 causal, 512 new onto 4096 cached, cache contiguous";
  all.push_back(chunk);
  return all;
}

const std::vector<Config> &allConfigs() {
  static const std::vector<Config> all = buildConfigs();
  return all;
}

float Config::scale() const {
  // additive scores carry no default scale (docs/language.md §4).
  return kind == Kind::Additive ? 1.0f : 1.0f / std::sqrt(float(keyDim()));
}

void Config::visibleRange(int64_t i, int64_t &lo, int64_t &hi) const {
  int64_t ip = i + (Lk - Lq);
  lo = 0;
  hi = Lk;
  if (mask != Mask::None)
    hi = std::min(ip + 1, Lk);
  if (mask == Mask::Window || mask == Mask::WindowSink)
    lo = std::max<int64_t>(0, ip - window + 1);
  hi = std::max(hi, lo);
}

int64_t Config::sinkEnd(int64_t i) const {
  if (mask != Mask::WindowSink)
    return 0;
  int64_t lo, hi;
  visibleRange(i, lo, hi);
  return std::max<int64_t>(0, std::min({sink, lo, hi}));
}

Config Config::sequence(int64_t b) const {
  Config one = *this;
  one.cache = CacheKind::None;
  one.cacheLens.clear();
  one.B = 1;
  one.Lk = cacheLens[size_t(b)] + Lq;
  return one;
}

int64_t Config::blocksOf(int64_t b) const {
  return (cacheLens[size_t(b)] + Lq + block - 1) / block;
}

int64_t Config::numBlocks() const {
  int64_t n = kSpareBlocks;
  for (size_t b = 0; b < cacheLens.size(); ++b)
    n += blocksOf(int64_t(b));
  return n;
}

int64_t Config::maxBlocks() const {
  int64_t most = 0;
  for (size_t b = 0; b < cacheLens.size(); ++b)
    most = std::max(most, blocksOf(int64_t(b)));
  return most;
}

double Config::visiblePairs() const {
  double pairs = 0;
  if (cache != CacheKind::None) { // each sequence over its own keys
    for (size_t b = 0; b < cacheLens.size(); ++b)
      pairs += sequence(int64_t(b)).visiblePairs();
    return pairs;
  }
  if (kind == Kind::Packed) { // causal (or none) within each sequence
    for (int64_t L : seqLens)
      pairs += mask == Mask::Causal ? double(L) * double(L + 1) / 2 : double(L) * double(L);
    return pairs * double(H);
  }
  for (int64_t i = 0; i < Lq; ++i) {
    int64_t lo, hi;
    visibleRange(i, lo, hi);
    pairs += double(hi - lo + sinkEnd(i));
  }
  return pairs * double(B) * double(H);
}

double Config::flops() const {
  double pairs = visiblePairs();
  switch (kind) {
  case Kind::Sdpa:
  case Kind::Packed:
    return pairs * 2.0 * double(D + Dv);
  case Kind::Additive:
    // W_k k per key and W_q q per query, then per pair: add + w_v dot over the
    // hidden units (3 per unit; tanh not counted) and the P.V product.
    return double(B) * (2.0 * Lk * hidden * keyDim() + 2.0 * Lq * hidden * D) +
           pairs * (3.0 * hidden + 2.0 * Dv);
  case Kind::Projection:
    return 2.0 * B * Lq * modelDim * double(H * D) +
           2.0 * B * Lk * modelDim * double(G * D + G * Dv) +
           pairs * 2.0 * double(D + Dv) + 2.0 * B * Lq * double(H * Dv) * modelDim;
  }
  return 0;
}

double Config::bytes() const {
  double bytes = 0;
  if (cache != CacheKind::None) {
    // The new q, k, v and out, the cache rows attended (kvBytes, which count
    // the new rows once more: they are written, then read back), cache_len
    // and the block table entries in use.
    bytes = double(B) * Lq * (double(H) * D * elementBytes(dtype) +
                              double(G) * (D + Dv) * elementBytes(kvDtype) +
                              double(H) * Dv * elementBytes(dtype));
    bytes += kvBytes() + 4.0 * B;
    if (cache == CacheKind::Paged)
      for (int64_t b = 0; b < B; ++b)
        bytes += 4.0 * blocksOf(b);
    return bytes;
  }
  for (const Tensor &t : makeInputs(*this, 0)) // shapes only matter here
    bytes += double(t.size()) * double(elementBytes(t.dtype)); // i32 tables: 4, as f32
  double out = 1;
  for (int64_t d : outputShape(*this))
    out *= double(d);
  return bytes + out * double(elementBytes(dtype));
}

double Config::kvBytes() const {
  if (cache != CacheKind::None) { // the keys and values each sequence attends
    double bytes = 0;
    for (size_t b = 0; b < cacheLens.size(); ++b)
      bytes += sequence(int64_t(b)).kvBytes();
    return bytes;
  }
  return double(elementBytes(kvDtype)) * double(B) * G * Lk * double(keyDim() + Dv);
}

Dtype Config::inputDtype(const std::string &name) const {
  return name == "k" || name == "v" || name == "k_cache" || name == "v_cache" ? kvDtype
                                                                              : dtype;
}

std::string dtypeName(Dtype d) {
  switch (d) {
  case Dtype::F32:
    return "f32";
  case Dtype::F16:
    return "f16";
  case Dtype::Bf16:
    return "bf16";
  }
  return "?";
}

void roundToStorage(Tensor &t, Dtype dtype) {
  t.dtype = dtype;
  if (dtype == Dtype::F32 || t.data.empty())
    return;
  using namespace attnc::runtime;
  t.bits.resize(t.data.size());
  if (dtype == Dtype::F16) {
    narrowToF16(t.data.data(), t.bits.data(), t.data.size());
    widenF16(t.bits.data(), t.data.data(), t.data.size());
  } else {
    narrowToBf16(t.data.data(), t.bits.data(), t.data.size());
    widenBf16(t.bits.data(), t.data.data(), t.data.size());
  }
}

std::string Config::kindName() const {
  switch (kind) {
  case Kind::Sdpa:
    return "sdpa";
  case Kind::Additive:
    return "additive";
  case Kind::Projection:
    return "projection";
  case Kind::Packed:
    return "packed";
  }
  return "?";
}

std::string Config::maskName() const {
  switch (mask) {
  case Mask::None:
    return "none";
  case Mask::Causal:
    return "causal";
  case Mask::Window:
    return "window";
  case Mask::WindowSink:
    return "causal&(window|sink)";
  }
  return "?";
}

std::string Config::cacheName() const {
  switch (cache) {
  case CacheKind::None:
    return "none";
  case CacheKind::Contiguous:
    return "contiguous";
  case CacheKind::Paged:
    return "paged(" + std::to_string(block) + ")";
  }
  return "?";
}

int64_t Tensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

// splitmix64: a counter-based generator, so a tensor's values do not depend on
// how many values came before it.
static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// FNV-1a: a name hash that is the same with every standard library.
static uint64_t nameHash(const std::string &name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : name)
    h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

static Tensor uniformTensor(const std::string &name, std::vector<int64_t> shape,
                            uint64_t seed, float scale, bool fill) {
  Tensor t{name, std::move(shape), {}};
  if (!fill)
    return t;
  t.data.resize(t.size());
  uint64_t base = splitmix(seed ^ nameHash(name));
  for (int64_t i = 0; i < t.size(); ++i) {
    uint64_t r = splitmix(base + uint64_t(i));
    float u = float(r >> 40) * (1.0f / float(1ull << 24)); // [0, 1)
    t.data[i] = scale * (2.0f * u - 1.0f);
  }
  return t;
}

int64_t cacheIndex(const Config &c, const std::vector<int32_t> &table, int64_t b, int64_t g,
                   int64_t t, int64_t w, int64_t W) {
  if (c.cache == CacheKind::Contiguous)
    return ((b * c.G + g) * c.Lk + t) * W + w;
  int64_t physical = table[size_t(b * c.maxBlocks() + t / c.block)];
  return ((physical * c.G + g) * c.block + t % c.block) * W + w;
}

// The block table: a shuffled pool (Fisher-Yates on splitmix), each sequence
// taking its blocks from the front in turn; unused entries -1.
static std::vector<int32_t> blockTable(const Config &c, uint64_t seed) {
  std::vector<int32_t> pool(size_t(c.numBlocks()));
  for (size_t n = 0; n < pool.size(); ++n)
    pool[n] = int32_t(n);
  for (size_t n = pool.size() - 1; n > 0; --n)
    std::swap(pool[n], pool[splitmix(seed + n) % (n + 1)]);
  const int64_t width = c.maxBlocks();
  std::vector<int32_t> table(size_t(c.B * width), -1);
  size_t next = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t s = 0; s < c.blocksOf(b); ++s)
      table[size_t(b * width + s)] = pool[next++];
  return table;
}

// k_cache or v_cache of row width W: rows below cache_len[b] uniform in
// [-1, 1) by their logical place (so contiguous and paged caches hold the same
// values), every other element NaN.
static Tensor cacheTensor(const Config &c, const std::string &name, int64_t W,
                          const std::vector<int32_t> &table, uint64_t seed, bool fill) {
  std::vector<int64_t> shape = c.cache == CacheKind::Paged
                                   ? std::vector<int64_t>{c.numBlocks(), c.G, c.block, W}
                                   : std::vector<int64_t>{c.B, c.G, c.Lk, W};
  Tensor t{name, shape, {}};
  if (!fill)
    return t;
  t.data.assign(size_t(t.size()), std::numeric_limits<float>::quiet_NaN());
  uint64_t base = splitmix(seed ^ nameHash(name));
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t g = 0; g < c.G; ++g)
      for (int64_t row = 0; row < c.cacheLens[size_t(b)]; ++row) {
        float *dst = t.data.data() + cacheIndex(c, table, b, g, row, 0, W);
        for (int64_t w = 0; w < W; ++w) {
          uint64_t r = splitmix(base + uint64_t(((b * c.G + g) * c.Lk + row) * W + w));
          float u = float(r >> 40) * (1.0f / float(1ull << 24));
          dst[w] = 2.0f * u - 1.0f;
        }
      }
  return t;
}

std::vector<Tensor> makeInputs(const Config &c, uint64_t seed) {
  // seed 0 is used by bytes() to get shapes without filling.
  bool fill = seed != 0;
  std::vector<Tensor> in;
  switch (c.kind) {
  case Kind::Packed: {
    in.push_back(uniformTensor("q", {c.Lq, c.H, c.D}, seed, 1, fill));
    in.push_back(uniformTensor("k", {c.Lk, c.G, c.keyDim()}, seed, 1, fill));
    in.push_back(uniformTensor("v", {c.Lk, c.G, c.Dv}, seed, 1, fill));
    std::vector<int32_t> cu = cuSeqlens(c);
    for (const char *name : {"cu_seqlens_q", "cu_seqlens_k"})
      in.push_back(Tensor{name, {int64_t(cu.size())}, {}, cu});
    break;
  }
  case Kind::Sdpa:
    if (c.cache != CacheKind::None) { // the new tokens, then the caches
      in.push_back(uniformTensor("q", {c.B, c.H, c.Lq, c.D}, seed, 1, fill));
      in.push_back(uniformTensor("k", {c.B, c.G, c.Lq, c.keyDim()}, seed, 1, fill));
      in.push_back(uniformTensor("v", {c.B, c.G, c.Lq, c.Dv}, seed, 1, fill));
      std::vector<int32_t> table;
      if (c.cache == CacheKind::Paged)
        table = blockTable(c, seed);
      in.push_back(cacheTensor(c, "k_cache", c.keyDim(), table, seed, fill));
      in.push_back(cacheTensor(c, "v_cache", c.Dv, table, seed, fill));
      std::vector<int32_t> lens(c.cacheLens.begin(), c.cacheLens.end());
      in.push_back(Tensor{"cache_len", {c.B}, {}, lens});
      if (c.cache == CacheKind::Paged)
        in.push_back(Tensor{"block_table", {c.B, c.maxBlocks()}, {}, table});
      break;
    }
    in.push_back(uniformTensor("q", {c.B, c.H, c.Lq, c.D}, seed, 1, fill));
    in.push_back(uniformTensor("k", {c.B, c.G, c.Lk, c.keyDim()}, seed, 1, fill));
    in.push_back(uniformTensor("v", {c.B, c.G, c.Lk, c.Dv}, seed, 1, fill));
    break;
  case Kind::Additive: {
    in.push_back(uniformTensor("q", {c.B, c.H, c.Lq, c.D}, seed, 1, fill));
    in.push_back(uniformTensor("k", {c.B, c.G, c.Lk, c.keyDim()}, seed, 1, fill));
    in.push_back(uniformTensor("v", {c.B, c.G, c.Lk, c.Dv}, seed, 1, fill));
    float sq = 1.0f / std::sqrt(float(c.D)), sk = 1.0f / std::sqrt(float(c.keyDim()));
    in.push_back(uniformTensor("score_wq", {c.hidden, c.D}, seed, sq, fill));
    in.push_back(uniformTensor("score_wk", {c.hidden, c.keyDim()}, seed, sk, fill));
    in.push_back(uniformTensor("score_wv", {c.hidden}, seed,
                               1.0f / std::sqrt(float(c.hidden)), fill));
    break;
  }
  case Kind::Projection: {
    float s = 1.0f / std::sqrt(float(c.modelDim));
    in.push_back(uniformTensor("x", {c.B, c.Lq, c.modelDim}, seed, 1, fill));
    // nn.Linear's layout, [out_features, in_features] (docs/language.md, version 2).
    in.push_back(uniformTensor("w_q", {c.H * c.D, c.modelDim}, seed, s, fill));
    in.push_back(uniformTensor("w_k", {c.G * c.D, c.modelDim}, seed, s, fill));
    in.push_back(uniformTensor("w_v", {c.G * c.Dv, c.modelDim}, seed, s, fill));
    in.push_back(uniformTensor("w_o", {c.modelDim, c.H * c.Dv}, seed,
                               1.0f / std::sqrt(float(c.H * c.Dv)), fill));
    break;
  }
  }
  // 16-bit storage: attnc reads the bits, the baselines their exact widening.
  for (Tensor &t : in)
    if (t.ints.empty())
      roundToStorage(t, c.inputDtype(t.name));
  return in;
}

std::vector<int32_t> cuSeqlens(const Config &c) {
  std::vector<int32_t> cu{0};
  for (int64_t L : c.seqLens)
    cu.push_back(cu.back() + int32_t(L));
  return cu;
}

std::vector<int64_t> outputShape(const Config &c) {
  if (c.kind == Kind::Projection)
    return {c.B, c.Lq, c.modelDim};
  if (c.kind == Kind::Packed)
    return {c.Lq, c.H, c.Dv};
  return {c.B, c.H, c.Lq, c.Dv};
}

} // namespace attnc_bench

namespace attnc_bench {
uint64_t configSeed(const Config &config, uint64_t baseSeed) {
  return (splitmix(baseSeed) ^ nameHash(config.id)) | 1; // never 0 (shapes-only)
}
} // namespace attnc_bench
