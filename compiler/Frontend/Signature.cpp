//===- Signature.cpp - A kernel's arguments in their contract order -------===//
//
// Implements docs/language.md §6: attention inputs, projection weights and
// biases, score weights, mask inputs, declared inputs, then outputs.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Signature.h"

namespace attnc {

static int64_t fixedOrZero(const SizeSpec &size) {
  return size.isFixed() ? size.value : 0;
}

SizeTable sizesOf(const KernelSpec &spec) {
  SizeTable t;
  t.B = fixedOrZero(spec.batch);
  t.H = spec.heads;
  t.G = spec.kvHeads;
  t.Lq = fixedOrZero(spec.seqQ);
  bool selfAttention = spec.project == ProjectKind::SelfQKV ||
                       spec.project == ProjectKind::SelfQKVOut;
  t.keysTiedToQueries = spec.seqK.kind == SizeSpec::SameAsSeqQ || selfAttention;
  t.Lk = t.keysTiedToQueries ? t.Lq : fixedOrZero(spec.seqK);
  t.D = spec.headDim;
  t.Dk = spec.keyDim;
  t.Dv = spec.valueDim;
  t.M = spec.modelDim;
  t.Mkv = spec.kvModelDim ? spec.kvModelDim : spec.modelDim;
  if (spec.cache.any()) { // k and v hold the new tokens; seq_k is the capacity
    t.Lmax = spec.cache.paged() ? 0 : fixedOrZero(spec.seqK);
    t.block = spec.cache.block;
    t.Lk = 0;
    t.keysTiedToQueries = false;
  }
  return t;
}

bool SizeTable::lookup(const std::string &name, ArgDim &dim) const {
  const struct {
    const char *name;
    int64_t value;
  } table[] = {{"B", B},   {"H", H},   {"G", G},   {"Lq", Lq}, {"Lk", Lk},
               {"D", D},   {"Dk", Dk}, {"Dv", Dv}, {"M", M},   {"Mkv", Mkv},
               {"Tq", 0},  {"Tk", 0},  {"B+1", 0}, // packed batches
               {"Lmax", Lmax}, {"block", block}, {"num_blocks", 0}, {"max_blocks", 0}}; // caches
  for (const auto &row : table) {
    if (name == row.name) {
      dim = {row.name, row.value};
      if (name == "Lk" && keysTiedToQueries && isDynamicTie())
        dim.name = "Lq";
      return true;
    }
  }
  return false;
}

namespace {
/// Builds shapes from size names, e.g. dims({"B", "H", "Lq", "D"}).
struct ShapeBuilder {
  const SizeTable &sizes;
  std::vector<ArgDim> operator()(std::initializer_list<const char *> names) const {
    std::vector<ArgDim> shape;
    for (const char *name : names) {
      ArgDim dim;
      sizes.lookup(name, dim);
      shape.push_back(dim);
    }
    return shape;
  }
};

ArgDim product(const char *name, int64_t a, int64_t b) { return {name, a * b}; }
ArgDim constant(int64_t value) { return {"", value}; }
} // namespace

std::vector<ArgSpec> kernelArguments(const KernelSpec &spec) {
  SizeTable sizes = sizesOf(spec);
  ShapeBuilder dims{sizes};
  bool bshd = spec.layout == Layout::BSHD;
  std::vector<ArgSpec> args;
  // Storage types (docs/language.md, storage types): k and v in kv_dtype; q, x, weights,
  // biases, out and weights in dtype; lse and mask inputs keep theirs.
  const ElemType dt = spec.dtype, kvt = spec.kvDtype;
  auto add = [&](std::string name, ElemType type, std::vector<ArgDim> shape,
                 bool isOutput = false) {
    args.push_back({std::move(name), type, isOutput, std::move(shape)});
  };

  // Attention inputs. With a cache, k and v (or x_kv) hold the Lq new tokens.
  const char *keyRows = spec.cache.any() ? "Lq" : "Lk";
  switch (spec.project) {
  case ProjectKind::None:
    if (spec.packed) { // bshd without B; then the sequences' token offsets
      add("q", dt, dims({"Tq", "H", "D"}));
      add("k", kvt, dims({"Tk", "G", "Dk"}));
      add("v", kvt, dims({"Tk", "G", "Dv"}));
      add("cu_seqlens_q", ElemType::I32, dims({"B+1"}));
      add("cu_seqlens_k", ElemType::I32, dims({"B+1"}));
      break;
    }
    add("q", dt, bshd ? dims({"B", "Lq", "H", "D"}) : dims({"B", "H", "Lq", "D"}));
    add("k", kvt, bshd ? dims({"B", keyRows, "G", "Dk"}) : dims({"B", "G", keyRows, "Dk"}));
    add("v", kvt, bshd ? dims({"B", keyRows, "G", "Dv"}) : dims({"B", "G", keyRows, "Dv"}));
    break;
  case ProjectKind::SelfQKV:
  case ProjectKind::SelfQKVOut:
    add("x", dt, spec.packed ? dims({"Tq", "M"}) : dims({"B", "Lq", "M"}));
    break;
  case ProjectKind::QKV:
  case ProjectKind::QKVOut: {
    const char *kvWidth = spec.kvModelDim ? "Mkv" : "M";
    add("x_q", dt, spec.packed ? dims({"Tq", "M"}) : dims({"B", "Lq", "M"}));
    add("x_kv", dt,
        spec.packed ? dims({"Tk", kvWidth}) : dims({"B", keyRows, kvWidth}));
    break;
  }
  }
  if (spec.cache.any()) { // the caches the Lq new tokens join
    bool paged = spec.cache.paged();
    const char *outer = paged ? "num_blocks" : "B", *rows = paged ? "block" : "Lmax";
    for (auto [name, width] : {std::pair{"k_cache", "Dk"}, {"v_cache", "Dv"}}) {
      add(name, kvt, bshd ? dims({outer, rows, "G", width}) : dims({outer, "G", rows, width}));
      args.back().isWritten = true;
    }
    add("cache_len", ElemType::I32, dims({"B"}));
    if (paged)
      add("block_table", ElemType::I32, dims({"B", "max_blocks"}));
  }
  if (spec.packed && spec.project != ProjectKind::None) {
    // Self-attention's keys are its queries' tokens, which cu_seqlens_k
    // still groups (usually as cu_seqlens_q does).
    add("cu_seqlens_q", ElemType::I32, dims({"B+1"}));
    add("cu_seqlens_k", ElemType::I32, dims({"B+1"}));
  }

  // Projection weights, then biases.
  if (spec.project != ProjectKind::None) {
    bool outProj = hasOutputProjection(spec.project);
    // nn.Linear's layout, [out_features, in_features] (docs/language.md, version 2).
    ArgDim m = dims({"M"})[0], mkv = dims({spec.kvModelDim ? "Mkv" : "M"})[0];
    add("w_q", dt, {product("H*D", sizes.H, sizes.D), m});
    add("w_k", dt, {product("G*D", sizes.G, sizes.Dk), mkv});
    add("w_v", dt, {product("G*Dv", sizes.G, sizes.Dv), mkv});
    if (outProj)
      add("w_o", dt, {m, product("H*Dv", sizes.H, sizes.Dv)});
    if (spec.projBias.q)
      add("b_q", dt, {product("H*D", sizes.H, sizes.D)});
    if (spec.projBias.k)
      add("b_k", dt, {product("G*D", sizes.G, sizes.Dk)});
    if (spec.projBias.v)
      add("b_v", dt, {product("G*Dv", sizes.G, sizes.Dv)});
    if (spec.projBias.o && outProj)
      add("b_o", dt, {m});
  }

  // Score weights, then mask inputs: the kinds' tables say which.
  auto tableShape = [&](const KindTensor &t) {
    std::vector<ArgDim> shape;
    for (int d = 0; d < t.rank; ++d) {
      ArgDim dim;
      if (std::string(t.dims[d]) == "N")
        dim = {"N", spec.additiveHidden};
      else
        sizes.lookup(t.dims[d], dim);
      shape.push_back(dim);
    }
    return shape;
  };
  const ScoreKindInfo &score = kindInfo(spec.score);
  for (int w = 0; w < score.numWeights; ++w)
    add(score.weights[w].name, dt, tableShape(score.weights[w]));
  for (const MaskKindInfo &mask : kMaskKinds)
    if (mask.hasInput && spec.hasMask(mask.kind))
      add(mask.input.name,
          std::string(mask.inputType) == "u8" ? ElemType::U8 : ElemType::I32,
          tableShape(mask.input));

  // Declared inputs.
  for (const InputAST &input : spec.inputs) {
    std::vector<ArgDim> shape;
    for (const DimAST &d : input.dims) {
      ArgDim dim = constant(d.value);
      if (!d.sizeName.empty() && !sizes.lookup(d.sizeName, dim))
        dim = {d.sizeName, 0};
      shape.push_back(dim);
    }
    add(input.name, input.type, std::move(shape));
  }

  // Outputs.
  bool outProj = hasOutputProjection(spec.project);
  if (outProj)
    add("out", dt, spec.packed ? dims({"Tq", "M"}) : dims({"B", "Lq", "M"}), true);
  else if (spec.packed)
    add("out", dt, dims({"Tq", "H", "Dv"}), true);
  else
    add("out", dt,
        bshd ? dims({"B", "Lq", "H", "Dv"}) : dims({"B", "H", "Lq", "Dv"}), true);
  if (spec.outputWeights)
    add("weights", dt, dims({"B", "H", "Lq", "Lk"}), true);
  if (spec.outputLse)
    add("lse", ElemType::F32, spec.packed ? dims({"H", "Tq"}) : dims({"B", "H", "Lq"}), true);
  return args;
}

std::vector<std::string> dynamicSizeNames(const KernelSpec &spec) {
  SizeTable sizes = sizesOf(spec);
  std::vector<std::string> names;
  if (spec.packed)
    return sizes.keysTiedToQueries ? std::vector<std::string>{"B", "Tq"}
                                   : std::vector<std::string>{"B", "Tq", "Tk"};
  if (!sizes.B)
    names.push_back("B");
  if (!sizes.Lq)
    names.push_back("Lq");
  if (spec.cache.paged()) {
    names.push_back("num_blocks");
    names.push_back("max_blocks");
  } else if (spec.cache.any()) {
    if (!sizes.Lmax)
      names.push_back("Lmax");
  } else if (!sizes.Lk && !sizes.keysTiedToQueries) {
    names.push_back("Lk");
  }
  return names;
}

} // namespace attnc
