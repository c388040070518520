//===- HalideFixesTest.cpp - The corrected libHalide14 functions ----------===//
//
// compiler/HalideBackend/HalideFixes replaces libHalide14's solve_expression,
// whose (f(x) - a) / b -> f(x) / b - a / b was wrong for floor division. The
// tests call it directly and through a pass that calls it (so they fail if
// the library's own definition is the one that runs). The faster
// simplify_correlated_differences must give what libHalide14's gives.
//
//===----------------------------------------------------------------------===//
#include <Halide.h>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <map>
#include <regex>

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

/// s printed, with the numbered names that CSE makes up renumbered in order.
std::string withoutCseNumbers(const Stmt &s) {
  std::ostringstream printed;
  printed << s;
  std::string text = printed.str(), out;
  std::map<std::string, std::string> renamed;
  std::regex name("\\bt[0-9]+\\b");
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
    out.append(last, text.cbegin() + it->position());
    auto [at, fresh] = renamed.try_emplace(it->str(), "t" + std::to_string(renamed.size()));
    out += at->second;
    last = text.cbegin() + it->position() + it->length();
  }
  out.append(last, text.cend());
  return out;
}

TEST(HalideFixes, CorrelatedDifferencesAsLibHalideSimplifiesThem) {
  // attnc's simplify_correlated_differences wraps a term only in the lets it
  // uses; libHalide14's wraps it in all of them, and stops at the first one
  // it may not substitute that the term or any wrapped let names. Where it
  // stops, here before m, changes the result.
  using Scd = Stmt (*)(const Stmt &);
  auto library = reinterpret_cast<Scd>(
      dlsym(RTLD_NEXT, "_ZN6Halide8Internal31simplify_correlated_differencesERKNS0_4StmtE"));
  ASSERT_NE(library, nullptr);
  Expr x = Variable::make(Int(32), "x"), n = Variable::make(Int(32), "n");
  Expr m = Variable::make(Int(32), "m"), a = Variable::make(Int(32), "a");
  Expr u = Variable::make(Float(32), "u"), f = Variable::make(Float(32), "f");
  Expr difference = (x * 2 + 1) - m, comparison = a + 3 < max(x * 2, n);
  auto loop = [&](Stmt body) { return For::make("x", 0, n, ForType::Serial, DeviceAPI::None, body); };
  std::vector<Stmt> cases = {
      // m substituted, a unused.
      loop(LetStmt::make("m", x * 2, LetStmt::make("a", x * 3, Evaluate::make(difference)))),
      // u, a float, is unused but names f, a float let: no further.
      loop(LetStmt::make("m", x * 2,
                         LetStmt::make("f", cast<float>(x), LetStmt::make("u", f * 2.0f, Evaluate::make(difference))))),
      // The same without u: m substituted past f.
      loop(LetStmt::make("m", x * 2, LetStmt::make("f", cast<float>(x), Evaluate::make(difference)))),
      // A chain of used and unused lets, and a comparison.
      loop(LetStmt::make("a", x * 2 - 5,
                         LetStmt::make("m", a + x,
                                       LetStmt::make("f", cast<float>(m),
                                                     Block::make(Evaluate::make(difference),
                                                                 Evaluate::make(comparison)))))),
  };
  for (const Stmt &s : cases)
    EXPECT_EQ(withoutCseNumbers(simplify_correlated_differences(s)), withoutCseNumbers(library(s))) << s;
}

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

bool hasStoreTo(const Stmt &s, const std::string &buffer) {
  struct Finder : IRVisitor {
    std::string buffer;
    bool found = false;
    using IRVisitor::visit;
    void visit(const Store *op) override {
      found |= op->name == buffer;
      IRVisitor::visit(op);
    }
  } finder;
  finder.buffer = buffer;
  s.accept(&finder);
  return finder.found;
}

TEST(HalideFixes, UnreachableLoopKeepsItsBoundsToItself) {
  // Loop partitioning's pattern: an empty prologue `for (y, 0, 0)`, whose
  // store to an allocation is out of bounds (y in [0, -1]) and so
  // unreachable, then a loop of the same variable whose bounds the
  // simplifier cannot tell. Halide 14 left the prologue's bounds in scope,
  // found the second loop's load out of bounds too and dropped that loop.
  Expr y = Variable::make(Int(32), "y");
  Expr m = Variable::make(Int(32), "m"), n = Variable::make(Int(32), "n");
  auto store = [&](const std::string &buffer, Expr value) {
    return Store::make(buffer, std::move(value), y, Parameter(), const_true(), ModulusRemainder());
  };
  Expr load = Load::make(Int(32), "buf", y, Buffer<>(), Parameter(), const_true(),
                         ModulusRemainder());
  Stmt prologue = For::make("y", 0, 0, ForType::Serial, DeviceAPI::None, store("buf", 1));
  Stmt steady = For::make("y", m, n, ForType::Serial, DeviceAPI::None, store("out", load));
  Stmt s = Allocate::make("buf", Int(32), MemoryType::Auto, {4}, const_true(),
                          Block::make(prologue, steady));
  Stmt result = simplify(s);
  EXPECT_TRUE(hasStoreTo(result, "out")) << result;
  EXPECT_FALSE(hasStoreTo(result, "buf")) << result;
}

TEST(HalideFixes, LoopBoundsStillReachTheBody) {
  // The fix's marker binding sits under the library's own: `y < 10` is
  // still known true in `for (y, 0, 4)`.
  Expr y = Variable::make(Int(32), "y");
  Stmt body = IfThenElse::make(y < 10, Store::make("out", 1, y, Parameter(), const_true(),
                                                   ModulusRemainder()));
  Stmt result = simplify(For::make("y", 0, 4, ForType::Serial, DeviceAPI::None, body));
  const For *loop = result.as<For>();
  ASSERT_NE(loop, nullptr) << result;
  EXPECT_NE(loop->body.as<Store>(), nullptr) << result;
}

/// `for (c, 0, 4)` over vectors of 16 floats of a 32-float allocation
/// `buffer`, vectorized GuardWithIf's way: `if (all lanes in bounds)
/// access else masked access` (the masked lanes are those past 31).
Stmt guardedVectors(const std::string &buffer, bool loads) {
  Expr c = Variable::make(Int(32), "c");
  Expr lanes = Ramp::make(c * 16, 1, 16);
  Expr inBounds = likely(lanes <= Broadcast::make(31, 16));
  auto access = [&](Expr predicate) {
    if (loads)
      return Store::make("out", Load::make(Float(32, 16), buffer, lanes, Buffer<>(), Parameter(),
                                           predicate, ModulusRemainder()),
                         lanes, Parameter(), predicate, ModulusRemainder());
    return Store::make(buffer, Broadcast::make(1.0f, 16), lanes, Parameter(), predicate,
                       ModulusRemainder());
  };
  Stmt body = IfThenElse::make(likely(c * 16 + 15 <= 31), access(const_true(16)), access(inBounds));
  Stmt loop = For::make("c", 0, 4, ForType::Serial, DeviceAPI::None, body);
  return Allocate::make(buffer, Float(32), MemoryType::Stack, {32}, const_true(), loop);
}

TEST(HalideFixes, MaskedAccessesPastTheirAllocationAreReachable) {
  // Halide 14 took the masked load (or store) of vectors 2 and 3, wholly
  // past the allocation, for unreachable: the `if` went and every vector
  // was accessed unmasked (a stacked projection's copy ran 64 columns over
  // heads of 32).
  for (bool loads : {true, false}) {
    Stmt result = simplify(guardedVectors("buf", loads));
    const Allocate *alloc = result.as<Allocate>();
    ASSERT_NE(alloc, nullptr) << result;
    const For *loop = alloc->body.as<For>();
    ASSERT_NE(loop, nullptr) << result;
    EXPECT_NE(loop->body.as<IfThenElse>(), nullptr) << (loads ? "loads: " : "stores: ") << result;
  }
}

TEST(HalideFixes, UnmaskedAccessesPastTheirAllocationAreStillUnreachable) {
  // The fix leaves the library's deduction from unmasked accesses alone.
  Expr c = Variable::make(Int(32), "c");
  Expr lanes = Ramp::make(c * 16, 1, 16);
  Stmt past = Store::make("buf", Broadcast::make(1.0f, 16), lanes, Parameter(), const_true(16),
                          ModulusRemainder());
  Stmt body = Block::make(IfThenElse::make(2 <= c, past),
                          Store::make("out", c, c, Parameter(), const_true(), ModulusRemainder()));
  Stmt loop = For::make("c", 0, 4, ForType::Serial, DeviceAPI::None, body);
  Stmt result = simplify(Allocate::make("buf", Float(32), MemoryType::Stack, {32}, const_true(), loop));
  EXPECT_TRUE(hasStoreTo(result, "out")) << result;
  EXPECT_FALSE(hasStoreTo(result, "buf")) << result;
}

} // namespace
