//===- ExprGraph.h - Custom expressions as owned data --------*- C++ -*-===//
//
// A custom score, bias or mask expression after convert-attn-to-halide: the
// attn region's ops as a DAG of plain nodes (shared subexpressions stay
// shared), so the back end's input owns it and the MLIR module may be gone
// when the back end builds. buildExpr() turns it into a Halide Expr over the
// index variables, sizes and declared inputs of one use (ExprEnv).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnc::halide_backend {

/// Values an expression may read. Index variables are int32; `dot` is the
/// float dot product of the current query and key rows (score only).
struct ExprEnv {
  Halide::Expr b, h, i, j, g, ip;
  Halide::Expr B, H, G, Lq, Lk, D, Dv;
  Halide::Expr dot;                                // only while building `score`
  std::map<std::string, Halide::Func> inputs;      // declared inputs, clamped access
  std::map<std::string, std::vector<Halide::Expr>> inputExtents;
};

struct ExprNode {
  enum Op {
    FloatConst, IntConst, BoolConst,
    Var,      // an index variable or `dot`: `name` is b, h, i, j, g, ip or dot
    Size,     // a kernel size: `name` is B, H, G, Lq, Lk, D or Dv
    Read,     // input `name` at operands (indices); `readsFloat` or int32
    Add, Sub, Mul, Div, Neg,
    Mod,      // Euclidean remainder (the language's %)
    Rem,      // truncated remainder (arith.remsi)
    Min, Max,
    Eq, Ne, Lt, Le, Gt, Ge,
    And, Or, Xor,
    ToFloat,  // int32 -> f32
    ToInt,    // f32 -> int32, toward zero
    Exp, Log, Sqrt, Rsqrt, Tanh, Abs,
    Floor, Ceil, Log2,
    Select,   // operands: condition, then, else
  };
  Op op = IntConst;
  float floatValue = 0;
  int32_t intValue = 0;
  bool boolValue = false;
  std::string name;
  bool readsFloat = true;
  std::vector<int> operands; // indices of earlier nodes
};

struct ExprGraph {
  std::vector<ExprNode> nodes; // operands come before their users
  int root = -1;
  bool defined() const { return root >= 0; }
  /// The expression's `.attn` source text when the IR carries it (the
  /// region's attn.yield `source` attribute), for the header; else empty.
  std::string source;
};

/// The graph as one Halide Expr for `env`; shared nodes are built once.
Halide::Expr buildExpr(const ExprGraph &graph, const ExprEnv &env);

/// The graph's value and its derivative by the float variable `wrt` (`dot`),
/// in forward mode over the same DAG: the backward kernel's chain rule
/// through a custom score. Integer, comparison and rounding nodes have
/// derivative 0 (they are piecewise constant).
std::pair<Halide::Expr, Halide::Expr> buildExprWithDerivative(const ExprGraph &graph,
                                                              const ExprEnv &env,
                                                              const std::string &wrt);

/// A float read of a declared input inside a graph: the node, its indices
/// (as the expression computes them, before the input's clamp) and the
/// derivative of the graph's value by the value read there.
struct InputRead {
  std::string input;
  std::vector<Halide::Expr> indices;
  Halide::Expr slope;
};
/// Every float read of a declared input in `graph`, in node order.
std::vector<InputRead> inputReads(const ExprGraph &graph, const ExprEnv &env);

} // namespace attnc::halide_backend
