//===- SimplifyCorrelatedDifferences.cpp - Halide 14's pass, without its quadratic work ===//
//
// Halide 14's `simplify_correlated_differences` cancels, in every loop, the
// differences and comparisons of two terms that move together with the loop
// variable (allocation extents, loop bounds, partition boundaries). For each
// such term it wraps the term in every let around it, in the whole loop nest,
// then runs CSE, the solver and the simplifier on the result. attnc's kernels
// have long let chains (the bounds of a dozen stages); most lets are unused
// by the term, yet each was simplified again for every term. With run-time
// sizes this pass took a third of Halide's lowering: 0.35 of 0.92 s for the
// spec's sliding-window example.
//
// This file is Halide v14.0.0's src/SimplifyCorrelatedDifferences.cpp (MIT
// licence, below) with two changes that keep its result:
//  * the free variables are tracked as lets are added (upstream's fix of
//    2023, "Fix quadratic algorithm in simplify_correlated_differences");
//  * a let that the term does not use, directly or through an inner let, is
//    not wrapped around it. CSE starts by substituting every let away and the
//    simplifier drops unused ones, so such a let only cost time. Where 14
//    stops wrapping is kept: at the first let it may not substitute that the
//    term or any let wrapped so far, used or not, names. (Stopping later
//    cancels more, which is right, but changed the code of a kernel of 4097
//    channels enough to meet Halide 14's lost guard of 16k+1-wide rows.)
// Its `simplify_correlated_differences` takes the place of libHalide14's,
// which the library calls through its PLT (see HalideFixes.h).
//
// Copyright (c) 2012-2020 MIT CSAIL, Google, Facebook, Adobe, NVIDIA
// CORPORATION, and other contributors. Developed by the Halide team,
// http://halide-lang.org
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this software and associated documentation files (the "Software"), to
// deal in the Software without restriction, including without limitation the
// rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
// sell copies of the Software, and to permit persons to whom the Software is
// furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in
// all copies or substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
// IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
// FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
// AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
// FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
// IN THE SOFTWARE.
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"

#include <Halide.h>

#include <set>
#include <string>
#include <vector>

namespace attnc::halide_backend::fixes {
void anchorSimplifyCorrelatedDifferences() {}
} // namespace attnc::halide_backend::fixes

namespace Halide {
namespace Internal {
namespace {

using std::string;
using std::vector;

class PartiallyCancelDifferences : public IRMutator {
  using IRMutator::visit;

  IRMatcher::Wild<0> x;
  IRMatcher::Wild<1> y;
  IRMatcher::Wild<2> z;
  IRMatcher::WildConst<0> c0;
  IRMatcher::WildConst<1> c1;

  Expr visit(const Sub *op) override {
    Expr a = mutate(op->a), b = mutate(op->b);

    if (op->type == Int(32)) {
      auto rewrite = IRMatcher::rewriter(IRMatcher::sub(a, b), op->type);
      if (
          // Differences of quasi-affine functions
          rewrite((x + y) / c0 - (x + z) / c0, ((x % c0) + y) / c0 - ((x % c0) + z) / c0) ||
          rewrite(x / c0 - (x + z) / c0, 0 - ((x % c0) + z) / c0) ||
          rewrite((x + y) / c0 - x / c0, ((x % c0) + y) / c0) ||

          // Truncated cones have a constant upper or lower bound that isn't
          // apparent when expressed in the form in the LHS below
          rewrite(min(x, c0) - max(x, c1), min(min(c0 - x, x - c1), fold(min(0, c0 - c1)))) ||
          rewrite(max(x, c0) - min(x, c1), max(max(c0 - x, x - c1), fold(max(0, c0 - c1)))) ||
          rewrite(min(x, y) - max(x, z), min(min(x, y) - max(x, z), 0)) ||
          rewrite(max(x, y) - min(x, z), max(max(x, y) - min(x, z), 0)) ||

          rewrite(min(x + c0, y) - select(z, min(x, y) + c1, x),
                  select(z, (max(min(y - x, c0), 0) - c1), min(y - x, c0)), c0 > 0) ||
          rewrite(min(y, x + c0) - select(z, min(y, x) + c1, x),
                  select(z, (max(min(y - x, c0), 0) - c1), min(y - x, c0)), c0 > 0) ||

          false) {
        return rewrite.result;
      }
    }
    return a - b;
  }
};

/// Adds the free variables of e to vars.
void trackFreeVars(const Expr &e, std::set<string> *vars) {
  class TrackFreeVars : public IRVisitor {
    using IRVisitor::visit;
    void visit(const Variable *op) override {
      if (!scope.contains(op->name))
        vars->insert(op->name);
    }
    void visit(const Let *op) override {
      op->value.accept(this);
      ScopedBinding<> bind(scope, op->name);
      op->body.accept(this);
    }

  public:
    std::set<string> *vars;
    Scope<> scope;
    explicit TrackFreeVars(std::set<string> *vars) : vars(vars) {}
  } tracker(vars);
  e.accept(&tracker);
}

class SimplifyCorrelatedDifferences : public IRMutator {
  using IRMutator::visit;

  string loop_var;

  Scope<ConstantInterval> monotonic;

  struct OuterLet {
    string name;
    Expr value;
    bool may_substitute;
  };
  vector<OuterLet> lets;

  template <typename LetStmtOrLet, typename StmtOrExpr> StmtOrExpr visit_let(const LetStmtOrLet *op) {
    // Visit an entire chain of lets in a single method to conserve stack space.
    struct Frame {
      const LetStmtOrLet *op;
      ScopedBinding<ConstantInterval> binding;
      Expr new_value;
      Frame(const LetStmtOrLet *op, const string &loop_var, Scope<ConstantInterval> &scope)
          : op(op), binding(scope, op->name, derivative_bounds(op->value, loop_var, scope)) {}
      explicit Frame(const LetStmtOrLet *op) : op(op) {}
    };
    std::vector<Frame> frames;
    StmtOrExpr result;

    // Note that we must add *everything* that depends on the loop var to the
    // monotonic scope and the list of lets, even things which we can never
    // substitute in (e.g. impure things). This is for two reasons. First this
    // pass could be used at a time when we still have nested lets under the
    // same name. If we decide not to add an inner let, but do add the outer
    // one, then later references to it will be incorrect. Second, if we don't
    // add something that happens to be non-monotonic, then derivative_bounds
    // finds a variable that references it in a later let, it will think it's
    // a constant, not an unknown.
    do {
      result = op->body;
      if (loop_var.empty()) {
        frames.emplace_back(op);
        continue;
      }

      bool pure = is_pure(op->value);
      if (!pure || expr_uses_vars(op->value, monotonic) || monotonic.contains(op->name)) {
        frames.emplace_back(op, loop_var, monotonic);
        Expr new_value = mutate(op->value);
        bool may_substitute_in = new_value.type() == Int(32) && pure;
        lets.emplace_back(OuterLet{op->name, new_value, may_substitute_in});
        frames.back().new_value = std::move(new_value);
      } else {
        // Pure and constant w.r.t the loop var. Doesn't shadow any outer
        // thing already in the monotonic scope.
        frames.emplace_back(op);
      }
    } while ((op = result.template as<LetStmtOrLet>()));

    result = mutate(result);

    for (auto it = frames.rbegin(); it != frames.rend(); it++) {
      if (it->new_value.defined())
        result = LetStmtOrLet::make(it->op->name, it->new_value, result);
      else
        result = LetStmtOrLet::make(it->op->name, it->op->value, result);
      if (it->binding.bound())
        lets.pop_back();
    }

    return result;
  }

  Expr visit(const Let *op) override { return visit_let<Let, Expr>(op); }

  Stmt visit(const LetStmt *op) override { return visit_let<LetStmt, Stmt>(op); }

  Stmt visit(const For *op) override {
    Stmt s = op;
    // This is unfortunately quadratic in maximum loop nesting depth
    if (loop_var.empty()) {
      decltype(monotonic) tmp_monotonic;
      decltype(lets) tmp_lets;
      tmp_monotonic.swap(monotonic);
      tmp_lets.swap(lets);
      loop_var = op->name;
      {
        ScopedBinding<ConstantInterval> bind(monotonic, loop_var, ConstantInterval::single_point(1));
        s = IRMutator::visit(op);
      }
      loop_var.clear();
      tmp_monotonic.swap(monotonic);
      tmp_lets.swap(lets);
    }
    s = IRMutator::visit(s.as<For>());
    return s;
  }

  Expr cancel_correlated_subexpression(Expr e, const Expr &a, const Expr &b, bool correlated) {
    auto ma = is_monotonic(a, loop_var, monotonic);
    auto mb = is_monotonic(b, loop_var, monotonic);

    if ((ma == Monotonic::Increasing && mb == Monotonic::Increasing && correlated) ||
        (ma == Monotonic::Decreasing && mb == Monotonic::Decreasing && correlated) ||
        (ma == Monotonic::Increasing && mb == Monotonic::Decreasing && !correlated) ||
        (ma == Monotonic::Decreasing && mb == Monotonic::Increasing && !correlated)) {

      // `vars`: the free variables of e wrapped in every let so far, as
      // Halide 14 wraps them; `used`: those of e and the lets it uses.
      std::set<string> vars, used;
      trackFreeVars(e, &vars);
      used = vars;
      for (auto it = lets.rbegin(); it != lets.rend(); it++) {
        if (!it->may_substitute && vars.count(it->name)) {
          // We have to stop here. Can't continue because there might be an
          // outer let with the same name that we *can* substitute in, and
          // then inner uses will get the wrong value.
          break;
        }
        trackFreeVars(it->value, &vars);
        if (!used.count(it->name))
          continue; // attnc: unused, so not wrapped (see the top of this file).
        trackFreeVars(it->value, &used);
        e = Let::make(it->name, it->value, e);
      }
      e = common_subexpression_elimination(e);
      e = solve_expression(e, loop_var).result;
      e = PartiallyCancelDifferences().mutate(e);
      e = simplify(e);
    }
    return e;
  }

  template <typename T> Expr visit_binop(const T *op, bool correlated) {
    Expr e = IRMutator::visit(op);
    op = e.as<T>();
    if (op == nullptr || op->a.type() != Int(32) || loop_var.empty())
      return e;
    return cancel_correlated_subexpression(e, op->a, op->b, correlated);
  }

  Expr visit(const Sub *op) override { return visit_binop(op, true); }
  Expr visit(const LT *op) override { return visit_binop(op, true); }
  Expr visit(const LE *op) override { return visit_binop(op, true); }
  Expr visit(const GT *op) override { return visit_binop(op, true); }
  Expr visit(const GE *op) override { return visit_binop(op, true); }
  Expr visit(const EQ *op) override { return visit_binop(op, true); }
  Expr visit(const NE *op) override { return visit_binop(op, true); }
  Expr visit(const Add *op) override { return visit_binop(op, false); }
};

} // namespace

Stmt simplify_correlated_differences(const Stmt &stmt) {
  return SimplifyCorrelatedDifferences().mutate(stmt);
}

} // namespace Internal
} // namespace Halide
