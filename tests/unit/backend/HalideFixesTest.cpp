//===- HalideFixesTest.cpp - The corrected libHalide14 functions ----------===//
//
// compiler/HalideBackend/HalideFixes replaces libHalide14's solve_expression,
// whose (f(x) - a) / b -> f(x) / b - a / b was wrong for floor division. The
// tests call it directly and through a libHalide pass that calls it (so they
// fail if the library's own definition is the one that runs).
//
//===----------------------------------------------------------------------===//
#include <Halide.h>

#include <gtest/gtest.h>

#include <map>

using namespace Halide;
using namespace Halide::Internal;

namespace {

/// e with every named variable replaced by its value, folded to an integer
/// (or a bool as 0/1).
int64_t evaluate(const Expr &e, const std::map<std::string, Expr> &values) {
  Expr folded = simplify(substitute(values, e));
  if (const int64_t *i = as_const_int(folded))
    return *i;
  if (is_const_one(folded))
    return 1;
  if (is_const_zero(folded))
    return 0;
  ADD_FAILURE() << "not a constant: " << folded;
  return -1;
}

TEST(HalideFixes, SolvedDivisionOfADifferenceRoundsDown) {
  Expr kb = Variable::make(Int(32), "kb"), lk = Variable::make(Int(32), "lk");
  // The first query tile of key block kb in a GQA kernel of 3 heads per KV
  // head (bounds inference's form), and simpler ones of the same shape.
  for (const Expr &e : {((kb * 64 - lk) * 3) / 32, (kb * 64 - lk) / 32, (kb * 64 - lk * 3) / 32,
                        (kb * 64 + lk) / 32, (kb * 6 - lk) / 3}) {
    SolverResult solved = solve_expression(e, "kb");
    for (int k = -3; k <= 3; ++k)
      for (int l = -70; l <= 70; ++l) {
        std::map<std::string, Expr> at{{"kb", k}, {"lk", l}};
        ASSERT_EQ(evaluate(solved.result, at), evaluate(e, at))
            << e << " solved as " << solved.result << " at kb = " << k << ", lk = " << l;
      }
  }
}

TEST(HalideFixes, LibHalidePassesUseTheCorrectedSolver) {
  // simplify_correlated_differences substitutes t into t < kb * 6 - 1 (both
  // sides grow with kb) and solves it for kb. At kb = 0, lk = 17, t is
  // floor(-51 / 32) = -2, so the condition holds; the old rule made t -1.
  Expr kb = Variable::make(Int(32), "kb"), lk = Variable::make(Int(32), "lk");
  Expr t = Variable::make(Int(32), "t");
  Stmt body = Evaluate::make(t < kb * 6 - 1);
  Stmt loop = For::make("kb", 0, 4, ForType::Serial, DeviceAPI::None,
                        LetStmt::make("t", ((kb * 64 - lk) * 3) / 32, body));
  Stmt result = simplify_correlated_differences(loop);
  const For *f = result.as<For>();
  ASSERT_NE(f, nullptr) << result;
  const LetStmt *let = f->body.as<LetStmt>();
  ASSERT_NE(let, nullptr) << result;
  const Evaluate *condition = let->body.as<Evaluate>();
  ASSERT_NE(condition, nullptr) << result;
  for (int l : {17, 1, 33, 100})
    for (int k = 0; k < 4; ++k) {
      std::map<std::string, Expr> at{{"kb", k}, {"lk", l}, {"t", ((Expr(k) * 64 - l) * 3) / 32}};
      EXPECT_EQ(evaluate(condition->value, at), evaluate(body.as<Evaluate>()->value, at))
          << condition->value << " at kb = " << k << ", lk = " << l;
    }
}

} // namespace

namespace {

TEST(HalideFixes, SimplifiedIfWhoseBranchIsUnreachableIsANoOp) {
  // `let t = y * 2 in if (0 < t) { unreachable }` with no else: Halide 14's
  // simplifier returned the missing else branch, an undefined Stmt, as the
  // body of the LetStmt, which it then dereferenced (a segmentation fault).
  Expr y = Variable::make(Int(32), "y"), t = Variable::make(Int(32), "t");
  Expr unreachable = Call::make(Int(32), Call::unreachable, {}, Call::Intrinsic);
  Stmt body = IfThenElse::make(0 < t, Evaluate::make(unreachable));
  Stmt result = simplify(LetStmt::make("t", y * 2, body));
  ASSERT_TRUE(result.defined());
  EXPECT_TRUE(is_no_op(result)) << result;
}

} // namespace
