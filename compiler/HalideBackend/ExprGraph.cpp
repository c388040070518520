//===- ExprGraph.cpp - Custom expressions to Halide -----------------------===//
//
// One case per node kind. Integer semantics are the IR's: Rem truncates, so
// it is rebuilt from Halide's Euclidean `%`; Mod is Halide's `%` itself.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/ExprGraph.h"
#include "compiler/HalideBackend/BackendError.h"

namespace attnc::halide_backend {

using Halide::Expr;

static Expr variable(const std::string &name, const ExprEnv &env) {
  const std::pair<const char *, const Expr *> table[] = {
      {"b", &env.b}, {"h", &env.h}, {"i", &env.i},   {"j", &env.j},
      {"g", &env.g}, {"ip", &env.ip}, {"dot", &env.dot}};
  for (const auto &row : table)
    if (name == row.first)
      return *row.second;
  throw BackendError("expression reads unknown variable '" + name + "'");
}

static Expr size(const std::string &name, const ExprEnv &env) {
  const std::pair<const char *, const Expr *> table[] = {
      {"B", &env.B},   {"H", &env.H},   {"G", &env.G}, {"Lq", &env.Lq},
      {"Lk", &env.Lk}, {"D", &env.D},   {"Dv", &env.Dv}};
  for (const auto &row : table)
    if (name == row.first)
      return *row.second;
  throw BackendError("expression reads unknown size '" + name + "'");
}

/// log2(x) exact on powers of two, so `floor(log2(n))` buckets (T5) never
/// land one low: the exponent field plus log2 of the mantissa in [1, 2),
/// which is 0 for a power of two. Zero, negative, subnormal, inf and NaN
/// inputs take log(x) / ln 2 (-inf, NaN, ...), as libm's log2 gives them.
static Expr exactLog2(const Expr &x) {
  Expr bits = Halide::reinterpret<int32_t>(x);
  Expr exponent = ((bits >> 23) & 0xff) - 127;
  Expr mantissa = Halide::reinterpret<float>((bits & 0x7fffff) | 0x3f800000);
  const float invLn2 = 1.4426950408889634f;
  Expr normal = Halide::cast<float>(exponent) + Halide::log(mantissa) * invLn2;
  return Halide::select(x >= 1.17549435e-38f && x <= 3.40282347e38f, normal,
                        Halide::log(x) * invLn2);
}

static Expr node(const ExprNode &n, const std::vector<Expr> &built, const ExprEnv &env) {
  auto x = [&](size_t k) { return built.at(n.operands.at(k)); };
  using N = ExprNode;
  switch (n.op) {
  case N::FloatConst: return Expr(n.floatValue);
  case N::IntConst: return Expr(n.intValue);
  case N::BoolConst:
    return n.boolValue ? Halide::Internal::const_true() : Halide::Internal::const_false();
  case N::Var: return variable(n.name, env);
  case N::Size: return size(n.name, env);
  case N::Read: {
    auto input = env.inputs.find(n.name);
    if (input == env.inputs.end())
      throw BackendError("expression reads '" + n.name + "', which is not a declared input");
    std::vector<Expr> indices;
    for (size_t k = 0; k < n.operands.size(); ++k)
      indices.push_back(x(k));
    Expr e = input->second(indices);
    return n.readsFloat ? Halide::cast<float>(e) : Halide::cast<int32_t>(e);
  }
  case N::Add: return x(0) + x(1);
  case N::Sub: return x(0) - x(1);
  case N::Mul: return x(0) * x(1);
  case N::Div: return x(0) / x(1);
  case N::Neg: return -x(0);
  case N::Mod: return x(0) % x(1);
  case N::Rem: {
    // Truncated remainder from Halide's Euclidean one.
    Expr a = x(0), b = x(1), r = a % b;
    return Halide::select(r != 0 && a < 0, r - Halide::abs(b), r);
  }
  case N::Min: return Halide::min(x(0), x(1));
  case N::Max: return Halide::max(x(0), x(1));
  case N::Eq: return x(0) == x(1);
  case N::Ne: return x(0) != x(1);
  case N::Lt: return x(0) < x(1);
  case N::Le: return x(0) <= x(1);
  case N::Gt: return x(0) > x(1);
  case N::Ge: return x(0) >= x(1);
  case N::And: return x(0) && x(1);
  case N::Or: return x(0) || x(1);
  case N::Xor: return x(0) != x(1); // on booleans only
  case N::ToFloat: return Halide::cast<float>(x(0));
  case N::Exp: return Halide::exp(x(0));
  case N::Log: return Halide::log(x(0));
  case N::Sqrt: return Halide::sqrt(x(0));
  case N::Rsqrt: return 1.0f / Halide::sqrt(x(0));
  case N::Tanh: return Halide::tanh(x(0));
  case N::Abs: return Halide::abs(x(0));
  case N::ToInt: return Halide::cast<int32_t>(x(0));
  case N::Floor: return Halide::floor(x(0));
  case N::Ceil: return Halide::ceil(x(0));
  case N::Log2: return exactLog2(x(0));
  case N::Select: return Halide::select(x(0), x(1), x(2));
  }
  throw BackendError("expression node of unknown kind");
}

/// Nodes are in operand-before-user order, so one pass builds them all;
/// node n may only read the `built` nodes before it.
static void checkOperands(const ExprNode &n, size_t built) {
  for (int operand : n.operands)
    if (operand < 0 || (size_t)operand >= built)
      throw BackendError("malformed custom expression (operand after its user)");
}

Expr buildExpr(const ExprGraph &graph, const ExprEnv &env) {
  if (!graph.defined())
    throw BackendError("custom expression without a body");
  std::vector<Expr> built;
  built.reserve(graph.nodes.size());
  for (const ExprNode &n : graph.nodes) {
    checkOperands(n, built.size());
    built.push_back(node(n, built, env));
  }
  return built.at(graph.root);
}

/// d(node) from its operands' values `x` and derivatives `dx` (undefined =
/// 0). `value` is the node's own value.
static Expr derivative(const ExprNode &n, const std::vector<Expr> &x,
                       const std::vector<Expr> &dx, const Expr &value, const std::string &wrt) {
  auto d = [&](size_t k) { return dx.at(n.operands.at(k)); };
  auto v = [&](size_t k) { return x.at(n.operands.at(k)); };
  auto orZero = [](const Expr &e) { return e.defined() ? e : Expr(0.0f); };
  using N = ExprNode;
  switch (n.op) {
  case N::Var:
    return n.name == wrt ? Expr(1.0f) : Expr();
  case N::Add:
  case N::Sub: {
    if (!d(0).defined() && !d(1).defined())
      return Expr();
    return n.op == N::Add ? orZero(d(0)) + orZero(d(1)) : orZero(d(0)) - orZero(d(1));
  }
  case N::Mul:
    if (!d(0).defined() && !d(1).defined())
      return Expr();
    return orZero(d(0)) * v(1) + v(0) * orZero(d(1));
  case N::Div:
    if (!d(0).defined() && !d(1).defined())
      return Expr();
    return (orZero(d(0)) - value * orZero(d(1))) / v(1);
  case N::Neg: return d(0).defined() ? -d(0) : Expr();
  case N::Min:
  case N::Max: {
    if (!d(0).defined() && !d(1).defined())
      return Expr();
    Expr first = n.op == N::Min ? v(0) <= v(1) : v(0) >= v(1);
    return Halide::select(first, orZero(d(0)), orZero(d(1)));
  }
  case N::Select:
    if (!d(1).defined() && !d(2).defined())
      return Expr();
    return Halide::select(v(0), orZero(d(1)), orZero(d(2)));
  case N::Exp: return d(0).defined() ? value * d(0) : Expr();
  case N::Log: return d(0).defined() ? d(0) / v(0) : Expr();
  case N::Log2: return d(0).defined() ? d(0) / (v(0) * 0.6931471805599453f) : Expr();
  case N::Sqrt: return d(0).defined() ? d(0) * 0.5f / value : Expr();
  case N::Rsqrt: return d(0).defined() ? d(0) * -0.5f * value * value * value : Expr();
  case N::Tanh: return d(0).defined() ? d(0) * (1.0f - value * value) : Expr();
  case N::Abs: return d(0).defined() ? Halide::select(v(0) < 0.0f, -d(0), d(0)) : Expr();
  default:
    return Expr(); // constants, sizes, reads, integers, comparisons, rounding
  }
}

/// Forward mode over the DAG, seeded at the variable `wrt` or, when
/// seedNode >= 0, at that node: every node's value and derivative.
static std::pair<std::vector<Expr>, std::vector<Expr>>
forwardMode(const ExprGraph &graph, const ExprEnv &env, const std::string &wrt, int seedNode) {
  if (!graph.defined())
    throw BackendError("custom expression without a body");
  std::vector<Expr> built, slopes;
  built.reserve(graph.nodes.size());
  slopes.reserve(graph.nodes.size());
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    const ExprNode &n = graph.nodes[k];
    checkOperands(n, built.size());
    built.push_back(node(n, built, env));
    slopes.push_back((int)k == seedNode ? Expr(1.0f)
                                        : derivative(n, built, slopes, built.back(), wrt));
  }
  return {built, slopes};
}

static Expr rootSlope(const ExprGraph &graph, const std::vector<Expr> &slopes) {
  Expr slope = slopes.at(graph.root);
  return slope.defined() ? Halide::cast<float>(slope) : Expr(0.0f);
}

std::pair<Expr, Expr> buildExprWithDerivative(const ExprGraph &graph, const ExprEnv &env,
                                              const std::string &wrt) {
  auto [built, slopes] = forwardMode(graph, env, wrt, -1);
  return {built.at(graph.root), rootSlope(graph, slopes)};
}

std::vector<InputRead> inputReads(const ExprGraph &graph, const ExprEnv &env) {
  std::vector<InputRead> reads;
  if (!graph.defined())
    return reads;
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    const ExprNode &n = graph.nodes[k];
    if (n.op != ExprNode::Read || !n.readsFloat)
      continue;
    auto [built, slopes] = forwardMode(graph, env, "", (int)k);
    InputRead read{n.name, {}, rootSlope(graph, slopes)};
    for (int operand : n.operands)
      read.indices.push_back(built.at(operand));
    reads.push_back(std::move(read));
  }
  return reads;
}

} // namespace attnc::halide_backend
