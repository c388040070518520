//===- SemaExpr.cpp - Type checking and constant folding of expressions ---===//
//
// A recursive checker over Expr trees (their depth is bounded by the parser's
// node limit). Each function of the language is a row in kFunctions; each
// rule reports at the location of the operand that breaks it and returns
// Unknown so that enclosing nodes do not repeat the error.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/SemaExpr.h"

#include "compiler/Frontend/Suggest.h"

#include <algorithm>
#include <cmath>

namespace attnc {

const char *toString(ExprType type) {
  switch (type) {
  case ExprType::Int: return "int";
  case ExprType::Float: return "float";
  case ExprType::Bool: return "bool";
  case ExprType::Unknown: return "unknown";
  }
  return "?";
}

namespace {

const std::vector<std::string> kIndexNames = {"b", "h", "i", "j", "g", "ip"};

enum class FnKind {
  Math,   // float(number)
  Abs,    // T(T)
  MinMax, // promote(a, b [, c])
  Select, // T(bool, T, T)
  Dot,    // dot(q, k), score only
  ToInt,  // int(x): truncation toward zero; the identity on integers
};

struct FunctionInfo {
  const char *name;
  unsigned arity;
  FnKind kind;
};

const FunctionInfo kFunctions[] = {
    {"exp", 1, FnKind::Math},      {"log", 1, FnKind::Math},
    {"sqrt", 1, FnKind::Math},     {"rsqrt", 1, FnKind::Math},
    {"tanh", 1, FnKind::Math},     {"abs", 1, FnKind::Abs},
    {"min", 2, FnKind::MinMax},    {"max", 2, FnKind::MinMax},
    {"clamp", 3, FnKind::MinMax},  {"select", 3, FnKind::Select},
    {"dot", 2, FnKind::Dot},
    // Version 2 (docs/language.md, version 2): enough for T5's relative-position buckets.
    {"floor", 1, FnKind::Math},    {"ceil", 1, FnKind::Math},
    {"log2", 1, FnKind::Math},     {"int", 1, FnKind::ToInt},
    {"float", 1, FnKind::Math},
};

const FunctionInfo *findFunction(const std::string &name) {
  for (const FunctionInfo &fn : kFunctions)
    if (name == fn.name)
      return &fn;
  return nullptr;
}

std::vector<std::string> functionNames() {
  std::vector<std::string> names;
  for (const FunctionInfo &fn : kFunctions)
    names.push_back(fn.name);
  return names;
}

const InputAST *findInput(const std::string &name, const ExprScope &scope) {
  if (!scope.inputs)
    return nullptr;
  for (const InputAST &input : *scope.inputs)
    if (input.name == name)
      return &input;
  return nullptr;
}

bool isNumeric(ExprType t) { return t == ExprType::Int || t == ExprType::Float; }

ExprType promote(ExprType a, ExprType b) {
  return a == ExprType::Int && b == ExprType::Int ? ExprType::Int : ExprType::Float;
}

const char *describeType(ExprType t) {
  switch (t) {
  case ExprType::Int: return "an integer";
  case ExprType::Float: return "a float";
  case ExprType::Bool: return "a boolean";
  default: return "unknown";
  }
}

std::string shapeText(const InputAST &input) {
  std::string text = std::string(toString(input.type)) + "[";
  for (size_t d = 0; d < input.dims.size(); ++d) {
    if (d)
      text += ", ";
    const DimAST &dim = input.dims[d];
    text += dim.sizeName.empty() ? std::to_string(dim.value) : dim.sizeName;
  }
  return text + "]";
}

bool isZeroLiteral(const Expr &e) {
  return (e.kind == ExprKind::IntLit && e.intValue == 0) ||
         (e.kind == ExprKind::FloatLit && e.floatValue == 0);
}

/// The checker proper: one method per node kind.
class Checker {
public:
  Checker(const ExprScope &scope, DiagnosticEngine &diag) : scope_(scope), diag_(diag) {}

  ExprType check(Expr &e) {
    ExprType t = visit(e);
    e.type = t;
    return t;
  }

private:
  ExprType fail(SourceLoc loc, const std::string &message) {
    diag_.error(loc, message);
    return ExprType::Unknown;
  }

  /// Checks that an operand is a number; reports at the operand otherwise.
  bool expectNumber(const Expr &operand, ExprType t, const std::string &what) {
    if (t == ExprType::Unknown)
      return false;
    if (isNumeric(t))
      return true;
    diag_.error(operand.loc, what + " expects a number, but this operand is a boolean");
    return false;
  }
  bool expectBool(const Expr &operand, ExprType t, const std::string &what) {
    if (t == ExprType::Unknown)
      return false;
    if (t == ExprType::Bool)
      return true;
    diag_.error(operand.loc, what + " expects a boolean (a comparison such as 'j <= ip'), "
                                    "but this operand is " + describeType(t));
    return false;
  }

  ExprType visit(Expr &e) {
    switch (e.kind) {
    case ExprKind::IntLit:
      if (scope_.context != ExprContext::Constant && e.intValue > INT32_MAX)
        return fail(e.loc, "integer " + std::to_string(e.intValue) +
                               " does not fit in 32 bits; integers in expressions are "
                               "int32 (write a float such as " +
                               std::to_string(e.intValue) + ".0 instead)");
      return ExprType::Int;
    case ExprKind::FloatLit:
      return ExprType::Float;
    case ExprKind::BoolLit:
      return ExprType::Bool;
    case ExprKind::Name:
      return visitName(e);
    case ExprKind::Index:
      return visitIndex(e);
    case ExprKind::Call:
      return visitCall(e);
    case ExprKind::Unary:
      return visitUnary(e);
    case ExprKind::Binary:
      return visitBinary(e);
    }
    return ExprType::Unknown;
  }

  ExprType visitName(Expr &e) {
    const std::string &name = e.name;
    bool constant = scope_.context == ExprContext::Constant;
    if (std::find(kIndexNames.begin(), kIndexNames.end(), name) != kIndexNames.end()) {
      if (constant)
        return fail(e.loc, quote(name) + " is an index variable; '" + scope_.field +
                               "' must be a constant expression");
      return ExprType::Int;
    }
    const std::vector<std::string> &sizes = sizeNames();
    if (std::find(sizes.begin(), sizes.end(), name) != sizes.end()) {
      if (name == "M" && scope_.spec && scope_.spec->project == ProjectKind::None)
        return fail(e.loc, "size 'M' (model_dim) only exists with 'project'");
      if (constant && constantSize(name) == 0)
        return fail(e.loc, "size " + quote(name) + " is dynamic; '" + scope_.field +
                               "' must be a constant expression (fix the size or "
                               "write the value)");
      return ExprType::Int;
    }
    if (const InputAST *input = findInput(name, scope_)) {
      if (constant)
        return fail(e.loc, "input " + quote(name) + " is a tensor; '" + scope_.field +
                               "' must be a constant expression");
      if (!input->dims.empty())
        return fail(e.loc, "input " + quote(name) + " has " +
                               std::to_string(input->dims.size()) + " dimension" +
                               (input->dims.size() == 1 ? "" : "s") + " (" +
                               shapeText(*input) + "); index it as " + name + "[...]");
      return input->type == ElemType::F32 ? ExprType::Float : ExprType::Int;
    }
    if (name == "s")
      return fail(e.loc, std::string("the score 's' is not available in '") + scope_.field +
                             "'" +
                             (scope_.context == ExprContext::Bias
                                  ? ": bias is added to the score, not composed with it"
                                  : ""));
    if (name == "q" || name == "k")
      return fail(e.loc, quote(name) + " can only be used as 'dot(q, k)' in 'score'");
    if (parseMaskKind(name) && name != "custom")
      return fail(e.loc, "built-in mask " + quote(name) +
                             " cannot be used inside an expression; join masks with '&' "
                             "(e.g. 'mask = causal & j < lens[b]')");
    if (name == "alibi" || name == "none")
      return fail(e.loc, quote(name) + " cannot be used inside an expression");
    if (findFunction(name))
      return fail(e.loc, "function " + quote(name) + " must be called, e.g. " + name + "(x)");

    std::vector<std::string> candidates = kIndexNames;
    candidates.insert(candidates.end(), sizes.begin(), sizes.end());
    if (scope_.inputs)
      for (const InputAST &input : *scope_.inputs)
        candidates.push_back(input.name);
    std::string message = "unknown name " + quote(name);
    std::string suggestion = closestMatch(name, candidates);
    if (!suggestion.empty())
      message += "; did you mean '" + suggestion + "'?";
    else if (!constant)
      message += " (expressions may use b, h, i, j, g, ip, the sizes B, H, G, Lq, Lk, D, "
                 "Dk, Dv, and inputs declared with 'input NAME : TYPE[DIMS]')";
    return fail(e.loc, message);
  }

  int64_t constantSize(const std::string &name) const {
    if (!scope_.spec)
      return 0;
    const KernelSpec &s = *scope_.spec;
    if (name == "H") return s.heads;
    if (name == "G") return s.kvHeads;
    if (name == "D") return s.headDim;
    if (name == "Dk") return s.keyDim;
    if (name == "Dv") return s.valueDim;
    if (name == "M") return s.modelDim;
    if (name == "B") return s.batch.isFixed() ? s.batch.value : 0;
    if (name == "Lq") return s.seqQ.isFixed() ? s.seqQ.value : 0;
    if (name == "Lk") {
      if (s.seqK.kind == SizeSpec::SameAsSeqQ)
        return s.seqQ.isFixed() ? s.seqQ.value : 0;
      return s.seqK.isFixed() ? s.seqK.value : 0;
    }
    return 0;
  }

  ExprType visitIndex(Expr &e) {
    const InputAST *input = findInput(e.name, scope_);
    bool ok = true;
    if (!input) {
      std::vector<std::string> names;
      if (scope_.inputs)
        for (const InputAST &in : *scope_.inputs)
          names.push_back(in.name);
      std::string message = "unknown input " + quote(e.name);
      std::string suggestion = closestMatch(e.name, names);
      message += suggestion.empty() ? "; declare it in the kernel with 'input " + e.name +
                                          " : TYPE[DIMS]'"
                                    : "; did you mean '" + suggestion + "'?";
      diag_.error(e.loc, message);
      ok = false;
    } else if (scope_.context == ExprContext::Constant) {
      diag_.error(e.loc, "input " + quote(e.name) + " is a tensor; '" + scope_.field +
                             "' must be a constant expression");
      ok = false;
    } else if (input->dims.size() != e.operands.size()) {
      size_t rank = input->dims.size();
      diag_.error(e.loc, "input " + quote(e.name) + " has " + std::to_string(rank) +
                             " dimension" + (rank == 1 ? "" : "s") + " (" +
                             shapeText(*input) + ") but is indexed with " +
                             std::to_string(e.operands.size()) + " index" +
                             (e.operands.size() == 1 ? "" : "es"));
      ok = false;
    }
    for (ExprPtr &index : e.operands) {
      ExprType t = check(*index);
      if (t == ExprType::Unknown) {
        ok = false;
      } else if (t != ExprType::Int) {
        diag_.error(index->loc, std::string("an index must be an integer, but this one is ") +
                                    describeType(t));
        ok = false;
      }
    }
    if (!ok)
      return ExprType::Unknown;
    return input->type == ElemType::F32 ? ExprType::Float : ExprType::Int;
  }

  ExprType visitCall(Expr &e) {
    const FunctionInfo *fn = findFunction(e.name);
    if (!fn) {
      std::string message = "unknown function " + quote(e.name);
      std::string suggestion = closestMatch(e.name, functionNames());
      message += suggestion.empty() ? " (functions: " + joinList(functionNames()) + ")"
                                    : "; did you mean '" + suggestion + "'?";
      if (e.name == "window" || e.name == "sink" || e.name == "additive")
        message = quote(e.name) + " cannot be used inside an expression";
      return fail(e.loc, message);
    }
    if (e.operands.size() != fn->arity)
      return fail(e.loc, quote(e.name) + " takes " + std::to_string(fn->arity) +
                             " argument" + (fn->arity == 1 ? "" : "s") + ", but " +
                             std::to_string(e.operands.size()) + (e.operands.size() == 1 ? " was" : " were") +
                             " given");
    for (const ExprPtr &arg : e.operands)
      if (!arg->argName.empty())
        return fail(arg->loc, quote(e.name) + " takes no named arguments");

    if (fn->kind == FnKind::Dot) {
      if (scope_.context != ExprContext::Score)
        return fail(e.loc, "'dot(q, k)' is only available in 'score'");
      const Expr &a = *e.operands[0], &b = *e.operands[1];
      if (a.kind != ExprKind::Name || a.name != "q" || b.kind != ExprKind::Name ||
          b.name != "k")
        return fail(e.loc, "'dot' only computes 'dot(q, k)', the dot product of the "
                           "current query and key rows");
      e.operands[0]->type = ExprType::Float;
      e.operands[1]->type = ExprType::Float;
      return ExprType::Float;
    }

    std::vector<ExprType> types;
    for (ExprPtr &arg : e.operands)
      types.push_back(check(*arg));
    for (ExprType t : types)
      if (t == ExprType::Unknown)
        return ExprType::Unknown;
    std::string what = "'" + e.name + "'";
    switch (fn->kind) {
    case FnKind::Math:
      if (!expectNumber(*e.operands[0], types[0], what))
        return ExprType::Unknown;
      return ExprType::Float;
    case FnKind::Abs:
      if (!expectNumber(*e.operands[0], types[0], what))
        return ExprType::Unknown;
      return types[0];
    case FnKind::MinMax: {
      ExprType result = ExprType::Int;
      for (size_t a = 0; a < types.size(); ++a) {
        if (!expectNumber(*e.operands[a], types[a], what))
          return ExprType::Unknown;
        result = promote(result, types[a]);
      }
      return result;
    }
    case FnKind::Select:
      if (!expectBool(*e.operands[0], types[0], "the condition of 'select'"))
        return ExprType::Unknown;
      if (types[1] == ExprType::Bool && types[2] == ExprType::Bool)
        return ExprType::Bool;
      if (!expectNumber(*e.operands[1], types[1], what) ||
          !expectNumber(*e.operands[2], types[2], what))
        return ExprType::Unknown;
      return promote(types[1], types[2]);
    case FnKind::ToInt:
      if (!expectNumber(*e.operands[0], types[0], what))
        return ExprType::Unknown;
      return ExprType::Int;
    case FnKind::Dot:
      break;
    }
    return ExprType::Unknown;
  }

  ExprType visitUnary(Expr &e) {
    ExprType t = check(*e.operands[0]);
    if (e.unaryOp == UnaryOp::Neg)
      return expectNumber(*e.operands[0], t, "'-'") ? t : ExprType::Unknown;
    return expectBool(*e.operands[0], t, "'not'") ? ExprType::Bool : ExprType::Unknown;
  }

  ExprType visitBinary(Expr &e) {
    if (e.binaryOp == BinaryOp::MaskAnd || e.binaryOp == BinaryOp::MaskOr)
      return fail(e.loc, std::string("'") + toString(e.binaryOp) +
                             "' joins mask terms and cannot be used inside an expression; use '" +
                             (e.binaryOp == BinaryOp::MaskAnd ? "and" : "or") + "'");
    Expr &lhs = *e.operands[0], &rhs = *e.operands[1];
    ExprType a = check(lhs), b = check(rhs);
    if (a == ExprType::Unknown || b == ExprType::Unknown)
      return ExprType::Unknown;
    std::string what = std::string("'") + toString(e.binaryOp) + "'";
    switch (e.binaryOp) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
      if (!expectNumber(lhs, a, what) || !expectNumber(rhs, b, what))
        return ExprType::Unknown;
      return promote(a, b);
    case BinaryOp::Div:
      if (!expectNumber(lhs, a, what) || !expectNumber(rhs, b, what))
        return ExprType::Unknown;
      if (isZeroLiteral(rhs))
        return fail(rhs.loc, "division by zero");
      return ExprType::Float; // '/' is true division, as in Python and PyTorch
    case BinaryOp::Mod:
      if (!expectNumber(lhs, a, what) || !expectNumber(rhs, b, what))
        return ExprType::Unknown;
      if (a != ExprType::Int)
        return fail(lhs.loc, "'%' needs integer operands, but this one is a float");
      if (b != ExprType::Int)
        return fail(rhs.loc, "'%' needs integer operands, but this one is a float");
      if (isZeroLiteral(rhs))
        return fail(rhs.loc, "division by zero in '%'");
      return ExprType::Int;
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
      if (!expectNumber(lhs, a, what) || !expectNumber(rhs, b, what))
        return ExprType::Unknown;
      return ExprType::Bool;
    case BinaryOp::Eq:
    case BinaryOp::Ne:
      if ((a == ExprType::Bool) != (b == ExprType::Bool))
        return fail(e.loc, what + " compares a boolean with a number");
      return ExprType::Bool;
    case BinaryOp::And:
    case BinaryOp::Or:
      if (!expectBool(lhs, a, what) || !expectBool(rhs, b, what))
        return ExprType::Unknown;
      return ExprType::Bool;
    }
    return ExprType::Unknown;
  }

  const ExprScope &scope_;
  DiagnosticEngine &diag_;
};

/// Double-precision evaluation of checked constant expressions.
class Evaluator {
public:
  Evaluator(const ExprScope &scope, DiagnosticEngine &diag) : scope_(scope), diag_(diag) {}

  bool eval(const Expr &e, double &v) {
    switch (e.kind) {
    case ExprKind::IntLit: v = double(e.intValue); return true;
    case ExprKind::FloatLit: v = e.floatValue; return true;
    case ExprKind::BoolLit: v = e.boolValue ? 1 : 0; return true;
    case ExprKind::Name: return evalName(e, v);
    case ExprKind::Unary: {
      double x;
      if (!eval(*e.operands[0], x))
        return false;
      v = e.unaryOp == UnaryOp::Neg ? -x : (x == 0 ? 1 : 0);
      return true;
    }
    case ExprKind::Binary: return evalBinary(e, v);
    case ExprKind::Call: return evalCall(e, v);
    case ExprKind::Index: break;
    }
    diag_.error(e.loc, std::string("'") + scope_.field + "' must be a constant expression");
    return false;
  }

private:
  bool evalName(const Expr &e, double &v) {
    const KernelSpec &s = *scope_.spec;
    const struct {
      const char *name;
      int64_t value;
    } table[] = {{"H", s.heads},     {"G", s.kvHeads},   {"D", s.headDim},
                 {"Dk", s.keyDim},   {"Dv", s.valueDim}, {"M", s.modelDim},
                 {"B", s.batch.value}, {"Lq", s.seqQ.value},
                 {"Lk", s.seqK.kind == SizeSpec::SameAsSeqQ ? s.seqQ.value : s.seqK.value}};
    for (const auto &row : table) {
      if (e.name == row.name) {
        v = double(row.value);
        return true;
      }
    }
    diag_.error(e.loc, "unknown name " + quote(e.name));
    return false;
  }

  bool evalBinary(const Expr &e, double &v) {
    double a, b;
    if (!eval(*e.operands[0], a) || !eval(*e.operands[1], b))
      return false;
    switch (e.binaryOp) {
    case BinaryOp::Add: v = a + b; break;
    case BinaryOp::Sub: v = a - b; break;
    case BinaryOp::Mul: v = a * b; break;
    case BinaryOp::Div:
    case BinaryOp::Mod:
      if (b == 0) {
        diag_.error(e.operands[1]->loc, "division by zero in the value of '" +
                                            std::string(scope_.field) + "'");
        return false;
      }
      if (e.binaryOp == BinaryOp::Div) {
        v = a / b;
      } else {
        v = std::fmod(a, b); // Euclidean, as Halide's '%'
        if (v < 0)
          v += std::fabs(b);
      }
      break;
    case BinaryOp::Lt: v = a < b; break;
    case BinaryOp::Le: v = a <= b; break;
    case BinaryOp::Gt: v = a > b; break;
    case BinaryOp::Ge: v = a >= b; break;
    case BinaryOp::Eq: v = a == b; break;
    case BinaryOp::Ne: v = a != b; break;
    case BinaryOp::And: v = (a != 0) && (b != 0); break;
    case BinaryOp::Or: v = (a != 0) || (b != 0); break;
    case BinaryOp::MaskAnd:
    case BinaryOp::MaskOr: return false; // rejected by the type check
    }
    return true;
  }

  bool evalCall(const Expr &e, double &v) {
    std::vector<double> args;
    for (const ExprPtr &arg : e.operands) {
      double x;
      if (!eval(*arg, x))
        return false;
      args.push_back(x);
    }
    auto domain = [&](const char *what) {
      diag_.error(e.loc, quote(e.name) + " of " + what + " in the value of '" +
                             scope_.field + "'");
      return false;
    };
    const std::string &f = e.name;
    if (f == "exp") v = std::exp(args[0]);
    else if (f == "log") { if (args[0] <= 0) return domain("a value <= 0"); v = std::log(args[0]); }
    else if (f == "sqrt") { if (args[0] < 0) return domain("a negative value"); v = std::sqrt(args[0]); }
    else if (f == "rsqrt") { if (args[0] <= 0) return domain("a value <= 0"); v = 1 / std::sqrt(args[0]); }
    else if (f == "tanh") v = std::tanh(args[0]);
    else if (f == "floor") v = std::floor(args[0]);
    else if (f == "ceil") v = std::ceil(args[0]);
    else if (f == "log2") { if (args[0] <= 0) return domain("a value <= 0"); v = std::log2(args[0]); }
    else if (f == "int") v = std::trunc(args[0]);
    else if (f == "float") v = args[0];
    else if (f == "abs") v = std::fabs(args[0]);
    else if (f == "min") v = std::min(args[0], args[1]);
    else if (f == "max") v = std::max(args[0], args[1]);
    else if (f == "clamp") v = std::min(std::max(args[0], args[1]), args[2]);
    else if (f == "select") v = args[0] != 0 ? args[1] : args[2];
    else {
      diag_.error(e.loc, quote(f) + " cannot be used in a constant expression");
      return false;
    }
    return true;
  }

  const ExprScope &scope_;
  DiagnosticEngine &diag_;
};

} // namespace

const std::vector<std::string> &sizeNames() {
  static const std::vector<std::string> names = {"B", "H", "G", "Lq", "Lk",
                                                 "D", "Dk", "Dv", "M"};
  return names;
}

const std::vector<std::string> &reservedInputNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = kIndexNames;
    n.insert(n.end(), sizeNames().begin(), sizeNames().end());
    for (const FunctionInfo &fn : kFunctions)
      n.push_back(fn.name);
    for (const char *arg : {"s", "q", "k", "v", "out", "weights", "lse", "x", "x_q", "x_kv",
                            "w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o",
                            "score_w", "score_wq", "score_wk", "score_wv", "valid_len",
                            "mask", "input", "causal", "window", "sink", "prefix",
                            "key_padding", "prefix_len", "key_padding_mask", "alibi", "none",
                            "N"})
      n.push_back(arg);
    return n;
  }();
  return names;
}

bool isExpressionName(const std::string &name, const ExprScope &scope) {
  if (std::find(kIndexNames.begin(), kIndexNames.end(), name) != kIndexNames.end())
    return true;
  if (std::find(sizeNames().begin(), sizeNames().end(), name) != sizeNames().end())
    return true;
  return findInput(name, scope) != nullptr;
}

ExprType checkExpr(Expr &expr, const ExprScope &scope, DiagnosticEngine &diag) {
  return Checker(scope, diag).check(expr);
}

bool evaluateConstant(const Expr &expr, SourceLoc where, const ExprScope &scope,
                      DiagnosticEngine &diag, double &value) {
  if (!Evaluator(scope, diag).eval(expr, value))
    return false;
  if (!std::isfinite(value)) {
    diag.error(where, std::string("the value of '") + scope.field +
                             "' is not a finite number");
    return false;
  }
  return true;
}

} // namespace attnc
