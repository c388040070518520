//===- ASTDump.cpp - Stable text dumps of the frontend's data -------------===//
//
// Prints resolved kernels field by field in the order of docs/language.md §4's table,
// then declared inputs; each line ends with the value's location or
// `(default)`. Expression trees follow the field they belong to.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/ASTDump.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace attnc {

std::string formatLoc(SourceLoc loc) {
  if (loc.buffer != 0)
    return "@<command line>:" + std::to_string(loc.col);
  return "@" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

std::string formatDouble(double value) {
  char buffer[64];
  // Shortest round-trip text; integers of up to 17 digits print in full.
  int first = 1;
  for (double magnitude = std::fabs(value); magnitude >= 10 && first < 17; magnitude /= 10)
    ++first;
  for (int precision = first; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text = buffer;
  if (std::isfinite(value) && text.find_first_of(".einn") == std::string::npos)
    text += ".0";
  return text;
}

static const char *typeName(ExprType type) {
  switch (type) {
  case ExprType::Int: return "int";
  case ExprType::Float: return "float";
  case ExprType::Bool: return "bool";
  case ExprType::Unknown: return "?";
  }
  return "?";
}

void dumpExpr(const Expr &e, unsigned indent, std::ostream &os) {
  os << std::string(indent, ' ');
  if (!e.argName.empty())
    os << e.argName << " = ";
  switch (e.kind) {
  case ExprKind::IntLit: os << "int " << e.intValue; break;
  case ExprKind::FloatLit: os << "float " << formatDouble(e.floatValue); break;
  case ExprKind::BoolLit: os << "bool " << (e.boolValue ? "true" : "false"); break;
  case ExprKind::Name: os << "name " << e.name; break;
  case ExprKind::Index: os << "index " << e.name; break;
  case ExprKind::Call: os << "call " << e.name; break;
  case ExprKind::Unary: os << "unary " << toString(e.unaryOp); break;
  case ExprKind::Binary: os << "binary " << toString(e.binaryOp); break;
  }
  os << " : " << typeName(e.type) << " " << formatLoc(e.loc) << "\n";
  for (const ExprPtr &operand : e.operands)
    dumpExpr(*operand, indent + 2, os);
}

namespace {
/// Prints `  name = value @L:C` or `  name = value (default)`.
struct FieldPrinter {
  const KernelSpec &spec;
  std::ostream &os;

  void operator()(const char *field, const std::string &value) const {
    os << "  " << field << " = " << value << " ";
    for (const auto &given : spec.givenFields) {
      if (given.first == field) {
        os << formatLoc(given.second) << "\n";
        return;
      }
    }
    os << "(default)\n";
  }
};

std::string sizeText(const SizeSpec &size) {
  switch (size.kind) {
  case SizeSpec::Dynamic: return "dynamic";
  case SizeSpec::Fixed: return std::to_string(size.value);
  case SizeSpec::SameAsSeqQ: return "seq_q";
  }
  return "?";
}

std::string dimsText(const InputAST &input) {
  std::string text = std::string(toString(input.type));
  if (input.dims.empty())
    return text;
  text += "[";
  for (size_t d = 0; d < input.dims.size(); ++d) {
    const DimAST &dim = input.dims[d];
    text += (d ? ", " : "") +
            (dim.sizeName.empty() ? std::to_string(dim.value) : dim.sizeName);
  }
  return text + "]";
}
} // namespace

void dumpKernelSpec(const KernelSpec &spec, std::ostream &os) {
  FieldPrinter field{spec, os};
  os << "kernel " << spec.name << " " << formatLoc(spec.loc) << "\n";
  field("heads", std::to_string(spec.heads));
  field("kv_heads", std::to_string(spec.kvHeads));
  field("head_dim", std::to_string(spec.headDim));
  field("key_dim", std::to_string(spec.keyDim));
  field("value_dim", std::to_string(spec.valueDim));
  field("batch", spec.packed ? "packed" : sizeText(spec.batch));
  field("seq_q", sizeText(spec.seqQ));
  field("seq_k", sizeText(spec.seqK));
  std::string score = toString(spec.score);
  if (spec.score == ScoreKind::Additive)
    score = "additive(hidden = " + std::to_string(spec.additiveHidden) + ")";
  field("score", score);
  if (spec.scoreExpr)
    dumpExpr(*spec.scoreExpr, 4, os);
  field("scale", formatDouble(spec.scale));
  field("softcap", spec.softcap ? formatDouble(*spec.softcap) : "none");
  field("bias", toString(spec.bias));
  if (spec.biasExpr)
    dumpExpr(*spec.biasExpr, 4, os);
  std::vector<std::string> terms;
  for (const MaskTerm &term : spec.masks)
    terms.push_back(builtinMaskText(term.kind, term.width));
  field("mask", maskFormulaText(terms, spec.maskGroups));
  for (const MaskTerm &term : spec.masks) {
    os << "    term " << toString(term.kind) << " " << formatLoc(term.loc) << "\n";
    if (term.expr)
      dumpExpr(*term.expr, 6, os);
  }
  field("project", toString(spec.project));
  field("model_dim", spec.modelDim ? std::to_string(spec.modelDim) : "none");
  if (spec.kvModelDim)
    field("kv_model_dim", std::to_string(spec.kvModelDim));
  field("proj_bias", spec.projBias.text(hasOutputProjection(spec.project)));
  field("positional", spec.positional == PositionalKind::Rotary ? spec.rotary.text()
                                                                : toString(spec.positional));
  field("layout", toString(spec.layout));
  field("cache", spec.cache.text());
  field("dtype", toString(spec.dtype));
  field("kv_dtype", toString(spec.kvDtype));
  std::string outputs = "out";
  if (spec.outputWeights)
    outputs += ", weights";
  if (spec.outputLse)
    outputs += ", lse";
  field("outputs", outputs);
  if (spec.backward)
    field("backward", "true");
  for (const InputAST &input : spec.inputs)
    os << "  input " << input.name << " : " << dimsText(input) << " " << formatLoc(input.loc)
       << "\n";
}

void dumpKernelAST(const KernelAST &kernel, std::ostream &os) {
  os << "kernel " << kernel.name << " " << formatLoc(kernel.loc) << " (not analyzed)\n";
  for (const FieldAST &field : kernel.fields) {
    os << "  field " << field.name << " = " << field.text << " " << formatLoc(field.valueLoc)
       << "\n";
  }
  for (const InputAST &input : kernel.inputs)
    os << "  input " << input.name << " : " << dimsText(input) << " " << formatLoc(input.loc)
       << "\n";
}

} // namespace attnc
