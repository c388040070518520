//===- HeaderWriter.cpp - The C header of a kernel artifact -------------===//
//
// The header needs only <stdint.h> and forward declarations of Halide's
// buffer and metadata structs, so apps that use NAME_run never include
// HalideRuntime.h. The comment block is generated from the same argument
// list (AttentionConfig::arguments) as the entry points, so the two cannot
// disagree; custom expressions appear as the source text the IR carries.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HeaderWriter.h"

#include <cctype>
#include <sstream>

namespace attnc::halide_backend {

namespace {

const char *cType(ElemType type) { return info(type).cType; }

std::string sizeText(int64_t size) {
  return size ? std::to_string(size) : "dynamic";
}

/// A custom part's source text, or its kind when the IR has no text.
std::string customText(const char *kind, const ExprGraph &expr) {
  return expr.source.empty() ? kind : expr.source;
}

std::string masksText(const KernelDesc &spec) {
  std::vector<std::string> terms;
  for (const MaskTermDesc &m : spec.masks)
    terms.push_back(m.kind == MaskKind::Custom ? customText("custom", m.expr)
                                               : builtinMaskText(m.kind, m.width));
  return maskFormulaText(terms, spec.maskGroups);
}

std::string dimsText(const DeclaredInput &input) {
  std::string text = std::string(toString(input.type)) + "[";
  for (size_t i = 0; i < input.dims.size(); ++i) {
    const ArgDim &d = input.dims[i];
    text += (i ? ", " : "") + (d.name.empty() ? std::to_string(d.value) : d.name);
  }
  return text + "]";
}

std::string outputsText(const KernelDesc &spec) {
  std::string text = "out";
  if (spec.outputWeights)
    text += ", weights";
  if (spec.outputLse)
    text += ", lse";
  return text;
}

std::string layoutText(const ArgSpec &arg, const KernelDesc &spec) {
  // A gradient d_X is laid out as X (d_out as out).
  std::string name = arg.name.rfind("d_", 0) == 0 ? arg.name.substr(2) : arg.name;
  bool attentionTensor = name == "q" || name == "k" || name == "v" ||
                         (name == "out" && !spec.outputProjected());
  if (attentionTensor && spec.packed)
    return "tokens of the sequences, each row-major [heads, width]";
  if (attentionTensor)
    return std::string("layout ") + toString(spec.layout);
  return "row-major";
}

void writeKernel(std::ostringstream &os, const AttentionConfig &config) {
  const KernelDesc &spec = config.kernel;
  const std::string &name = config.name;
  std::vector<std::string> sizeNames = spec.dynamicSizeNames();

  os << "/* Kernel " << name << "\n";
  if (config.backward)
    os << " *   the gradients of kernel "
       << name.substr(0, name.size() - std::string("_backward").size())
       << " (FlashAttention-2's backward: probabilities recomputed from lse;\n"
          " *   d_out is the loss's gradient by out; each d_X is the loss's gradient by X)\n";
  os << " *   heads = " << spec.heads << ", kv_heads = " << spec.kvHeads
     << ", head_dim = " << spec.headDim << ", key_dim = " << spec.keyDim
     << ", value_dim = " << spec.valueDim << "\n";
  if (spec.packed)
    os << " *   batch = packed: B sequences of Tq query and Tk key tokens in all, "
          "sequence b at tokens cu_seqlens[b] .. cu_seqlens[b + 1] - 1\n";
  else
    os << " *   batch = " << sizeText(spec.batch) << ", seq_q = " << sizeText(spec.seqQ)
       << ", seq_k = " << (spec.seqKIsSeqQ ? "seq_q" : sizeText(spec.seqK)) << "\n";
  os << " *   score = "
     << (spec.score == ScoreKind::Custom ? customText("custom", config.customScore)
                                         : toString(spec.score));
  if (spec.score == ScoreKind::Additive)
    os << "(hidden = " << spec.additiveHidden << ")";
  os << ", scale = " << config.scale;
  if (spec.softcap)
    os << ", softcap = " << *spec.softcap;
  os << "\n *   bias = "
     << (spec.bias == BiasKind::Custom ? customText("custom", config.customBias) : toString(spec.bias))
     << "\n *   mask = " << masksText(spec) << "\n";
  os << " *   project = " << toString(spec.project);
  if (spec.project != ProjectKind::None)
    os << ", model_dim = " << spec.modelDim
       << (spec.kvModelDim && spec.kvModelDim != spec.modelDim
               ? ", kv_model_dim = " + std::to_string(spec.kvModelDim)
               : std::string())
       << ", proj_bias = "
       << spec.projBias.text(spec.outputProjected());
  if (spec.positional == PositionalKind::Rotary)
    os << ", positional = " << spec.rotary.text();
  else if (spec.project != ProjectKind::None)
    os << ", positional = " << toString(spec.positional);
  if (!spec.packed)
    os << ", layout = " << toString(spec.layout);
  os << ", dtype = " << toString(spec.dtype);
  if (spec.kvDtype != spec.dtype)
    os << ", kv_dtype = " << toString(spec.kvDtype);
  os << ", outputs = " << outputsText(spec) << "\n";
  for (const DeclaredInput &input : spec.inputs)
    os << " *   input " << input.name << " : " << dimsText(input) << "\n";
  os << " *\n * Arguments (dense, row-major, last dimension contiguous):\n";
  bool half = false;
  for (const ArgSpec &arg : config.arguments)
    half = half || isHalfFloat(arg.type);
  if (half)
    os << " * 16-bit floats are passed as uint16_t bits: f16 is IEEE 754 binary16,\n"
          " * bf16 is bfloat16 (the upper 16 bits of an IEEE f32). The kernel computes\n"
          " * in f32 and rounds each 16-bit result once, to nearest even.\n";
  for (const ArgSpec &arg : config.arguments)
    os << " *   " << (arg.isOutput ? "out " : arg.isWritten ? "io  " : "in  ") << arg.name
       << " : " << formatShape(arg)
       << "  (" << layoutText(arg, spec) << ")\n";
  os << " *\n * Example:\n *   int err = " << name << "_run(";
  bool first = true;
  for (const ArgSpec &arg : config.arguments) {
    os << (first ? "" : ", ") << arg.name;
    first = false;
  }
  for (const std::string &s : sizeNames)
    os << (first ? "" : ", ") << s;
  os << ");\n *   // err == 0 on success; -1: a size < 1 or too large; -2: a NULL pointer;\n";
  if (spec.packed)
    os << " *   // -3: cu_seqlens_q / cu_seqlens_k do not start at 0, decrease, or do\n"
          " *   // not end at Tq / Tk;\n";
  if (spec.cache.any())
    os << " *   // -4: a sequence's cache_len + Lq exceeds its cache (or its block table names a\n"
          " *   // block outside the pool); nothing was written;\n";
  os << " *   // -100: this CPU lacks the instruction-set features of every variant\n"
        " *   // (listed in " << name << "_attnc_targets); other negative values are\n"
        " *   // Halide error codes.\n */\n";

  os << "int " << name << "(";
  first = true;
  for (size_t k : config.entryOrder()) { // Halide's order: the caches after the inputs
    os << (first ? "" : ", ") << "struct halide_buffer_t *" << config.arguments[k].name;
    first = false;
  }
  os << ");\n";
  os << "int " << name << "_argv(void **args);\n";
  os << "const struct halide_filter_metadata_t *" << name << "_metadata(void);\n";
  os << "int " << name << "_run(";
  first = true;
  for (const ArgSpec &arg : config.arguments) {
    os << (first ? "" : ", ") << (arg.isOutput || arg.isWritten ? "" : "const ") << cType(arg.type) << " *"
       << arg.name;
    first = false;
  }
  for (const std::string &s : sizeNames)
    os << (first ? "" : ", ") << "int64_t " << s;
  os << ");\n";
  os << "extern const char " << name << "_attnc_signature[];\n";
  os << "/* One line per compiled variant: \"<target> <cpu features>\", best first. */\n";
  os << "extern const char " << name << "_attnc_targets[];\n\n";
}

} // namespace

std::string writeHeader(const std::vector<const AttentionConfig *> &configs,
                        const std::string &guardName) {
  std::string guard = "ATTNC_";
  for (char c : guardName)
    guard += std::isalnum((unsigned char)c) ? (char)std::toupper((unsigned char)c) : '_';
  guard += "_H";

  std::ostringstream os;
  os << "/* Generated by attnc. Do not edit. */\n";
  os << "#ifndef " << guard << "\n#define " << guard << "\n\n";
  os << "#include <stdint.h>\n\n";
  os << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  os << "struct halide_buffer_t;\nstruct halide_filter_metadata_t;\n\n";
  for (const AttentionConfig *config : configs)
    writeKernel(os, *config);
  os << "/* The kernels of this artifact, NULL-terminated (for libattnrt; a program\n"
        " * linking objects of several attnc runs keeps one of their lists). */\n";
  os << "extern const char *const attnc_kernels[];\n\n";
  os << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n";
  os << "#endif /* " << guard << " */\n";
  return os.str();
}

} // namespace attnc::halide_backend
