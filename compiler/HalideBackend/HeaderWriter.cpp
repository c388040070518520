//===- HeaderWriter.cpp - The C header of a kernel artifact -------------===//
//
// The header needs only <stdint.h> and forward declarations of Halide's
// buffer and metadata structs, so apps that use NAME_run never include
// HalideRuntime.h. The comment block is generated from the same argument
// list (Signature.h) as the entry points, so the two cannot disagree.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HeaderWriter.h"
#include "compiler/Frontend/ASTDump.h"

#include <cctype>
#include <sstream>

namespace attnc::halide_backend {

namespace {

const char *cType(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return "float";
  case ElemType::I32:
    return "int32_t";
  case ElemType::U8:
    return "uint8_t";
  }
  return "float";
}

std::string sizeText(const SizeSpec &size, const char *tiedTo = nullptr) {
  switch (size.kind) {
  case SizeSpec::Fixed:
    return std::to_string(size.value);
  case SizeSpec::SameAsSeqQ:
    return tiedTo ? tiedTo : "seq_q";
  case SizeSpec::Dynamic:
    break;
  }
  return "dynamic";
}

/// Binding strength of a binary operator, loosest first, as the parser
/// groups them (or < and < comparisons < + - < * / %).
int precedence(BinaryOp op) {
  switch (op) {
  case BinaryOp::Or: return 1;
  case BinaryOp::And: return 2;
  case BinaryOp::Add:
  case BinaryOp::Sub: return 4;
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Mod: return 5;
  default: return 3; // comparisons
  }
}

/// A custom expression as .attn source text, parenthesized only where the
/// grouping needs it, so the header states what the kernel computes.
std::string exprText(const Expr &e, int outer = 0);

/// One operand; a keyword argument (`hidden = 128`) keeps its keyword.
std::string operandText(const Expr &e) {
  return e.argName.empty() ? exprText(e) : e.argName + " = " + exprText(e);
}

std::string exprText(const Expr &e, int outer) {
  std::string text;
  auto list = [&](const char *open, const char *close) {
    text += open;
    for (size_t i = 0; i < e.operands.size(); ++i)
      text += (i ? ", " : "") + operandText(*e.operands[i]);
    text += close;
  };
  switch (e.kind) {
  case ExprKind::IntLit: return std::to_string(e.intValue);
  case ExprKind::FloatLit: return formatDouble(e.floatValue);
  case ExprKind::BoolLit: return e.boolValue ? "true" : "false";
  case ExprKind::Name: return e.name;
  case ExprKind::Index:
    text = e.name;
    list("[", "]");
    return text;
  case ExprKind::Call:
    text = e.name;
    list("(", ")");
    return text;
  case ExprKind::Unary:
    text = std::string(toString(e.unaryOp)) + (e.unaryOp == UnaryOp::Not ? " " : "") +
           exprText(*e.operands[0], 6);
    return outer > 6 ? "(" + text + ")" : text;
  case ExprKind::Binary: {
    int p = precedence(e.binaryOp);
    // Left-associative: the right operand binds one level tighter.
    text = exprText(*e.operands[0], p) + " " + toString(e.binaryOp) + " " +
           exprText(*e.operands[1], p + 1);
    return p < outer ? "(" + text + ")" : text;
  }
  }
  return "?";
}

std::string customText(const char *kind, const SharedExpr &expr) {
  return expr ? exprText(*expr) : kind;
}

std::string masksText(const KernelSpec &spec) {
  if (spec.masks.empty())
    return "none";
  std::string text;
  for (const MaskTerm &m : spec.masks) {
    if (!text.empty())
      text += " & ";
    if (m.kind == MaskKind::Custom && m.expr) {
      // `and`/`or` bind looser than `&` would suggest to a reader.
      std::string e = exprText(*m.expr);
      text += spec.masks.size() > 1 && m.expr->kind == ExprKind::Binary &&
                      precedence(m.expr->binaryOp) < 3
                  ? "(" + e + ")"
                  : e;
      continue;
    }
    text += toString(m.kind);
    if (m.kind == MaskKind::Window)
      text += "(" + std::to_string(m.window) + ")";
  }
  return text;
}

std::string dimsText(const InputAST &input) {
  std::string text = std::string(toString(input.type)) + "[";
  for (size_t i = 0; i < input.dims.size(); ++i) {
    const DimAST &d = input.dims[i];
    text += (i ? ", " : "") + (d.sizeName.empty() ? std::to_string(d.value) : d.sizeName);
  }
  return text + "]";
}

std::string outputsText(const KernelSpec &spec) {
  std::string text = "out";
  if (spec.outputWeights)
    text += ", weights";
  if (spec.outputLse)
    text += ", lse";
  return text;
}

std::string layoutText(const ArgSpec &arg, const KernelSpec &spec) {
  if (arg.name == "q" || arg.name == "k" || arg.name == "v" ||
      (arg.name == "out" && spec.project != ProjectKind::QKVOut &&
       spec.project != ProjectKind::SelfQKVOut))
    return std::string("layout ") + toString(spec.layout);
  return "row-major";
}

void writeKernel(std::ostringstream &os, const AttentionConfig &config) {
  const KernelSpec &spec = config.spec;
  const std::string &name = config.name;
  std::vector<std::string> sizeNames = dynamicSizeNames(spec);

  os << "/* Kernel " << name << "\n";
  os << " *   heads = " << spec.heads << ", kv_heads = " << spec.kvHeads
     << ", head_dim = " << spec.headDim << ", key_dim = " << spec.keyDim
     << ", value_dim = " << spec.valueDim << "\n";
  os << " *   batch = " << sizeText(spec.batch) << ", seq_q = " << sizeText(spec.seqQ)
     << ", seq_k = " << sizeText(spec.seqK) << "\n";
  os << " *   score = "
     << (spec.score == ScoreKind::Custom ? customText("custom", spec.scoreExpr)
                                         : toString(spec.score));
  if (spec.score == ScoreKind::Additive)
    os << "(hidden = " << spec.additiveHidden << ")";
  os << ", scale = " << config.scale;
  if (spec.softcap)
    os << ", softcap = " << *spec.softcap;
  os << "\n *   bias = "
     << (spec.bias == BiasKind::Custom ? customText("custom", spec.biasExpr) : toString(spec.bias))
     << "\n *   mask = " << masksText(spec) << "\n";
  os << " *   project = " << toString(spec.project);
  if (spec.project != ProjectKind::None)
    os << ", model_dim = " << spec.modelDim << ", proj_bias = " << (spec.projBias ? "true" : "false")
       << ", positional = " << (spec.positional == PositionalKind::Sinusoidal ? "sinusoidal" : "none");
  os << ", layout = " << toString(spec.layout) << ", dtype = f32, outputs = " << outputsText(spec)
     << "\n";
  for (const InputAST &input : spec.inputs)
    os << " *   input " << input.name << " : " << dimsText(input) << "\n";
  os << " *\n * Arguments (dense, row-major, last dimension contiguous):\n";
  for (const ArgSpec &arg : config.arguments)
    os << " *   " << (arg.isOutput ? "out " : "in  ") << arg.name << " : " << formatShape(arg)
       << "  (" << layoutText(arg, spec) << ")\n";
  os << " *\n * Example:\n *   int err = " << name << "_run(";
  bool first = true;
  for (const ArgSpec &arg : config.arguments) {
    os << (first ? "" : ", ") << arg.name;
    first = false;
  }
  for (const std::string &s : sizeNames)
    os << (first ? "" : ", ") << s;
  os << ");\n *   // err == 0 on success; -1: a size < 1 or too large; -2: a NULL pointer;\n"
        " *   // -100: this CPU lacks the instruction-set features of every variant\n"
        " *   // (listed in " << name << "_attnc_targets); other negative values are\n"
        " *   // Halide error codes.\n */\n";

  os << "int " << name << "(";
  first = true;
  for (const ArgSpec &arg : config.arguments) {
    os << (first ? "" : ", ") << "struct halide_buffer_t *" << arg.name;
    first = false;
  }
  os << ");\n";
  os << "int " << name << "_argv(void **args);\n";
  os << "const struct halide_filter_metadata_t *" << name << "_metadata(void);\n";
  os << "int " << name << "_run(";
  first = true;
  for (const ArgSpec &arg : config.arguments) {
    os << (first ? "" : ", ") << (arg.isOutput ? "" : "const ") << cType(arg.type) << " *"
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
