//===- HalideText.cpp - A readable print of algorithm and schedule ------===//
//
// Prints Func definitions with Halide's IR printer (operator<< on Expr) and
// captures Pipeline::print_loop_nest, which writes to std::cerr, by swapping
// the stream buffer for the duration of the call.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/HalideText.h"

#include <iostream>
#include <map>
#include <sstream>

using namespace Halide;

namespace attnc::halide_backend {

// attnc::Expr is the frontend's AST node; here Expr means Halide's.
using Halide::Expr;

namespace {

void printArgs(std::ostream &os, const std::vector<Expr> &args) {
  os << "(";
  for (size_t k = 0; k < args.size(); ++k)
    os << (k ? ", " : "") << args[k];
  os << ")";
}

void printValues(std::ostream &os, const Tuple &values) {
  if (values.size() == 1) {
    os << values[0];
    return;
  }
  os << "{";
  for (size_t k = 0; k < values.size(); ++k)
    os << (k ? ", " : "") << values[k];
  os << "}";
}

/// The bounds of the algorithm's reduction variables, by name (RVars read
/// back from a Func carry no domain).
using RVarBounds = std::map<std::string, std::pair<Expr, Expr>>;

RVarBounds boundsOf(const std::vector<RDom> &domains) {
  RVarBounds bounds;
  for (const RDom &r : domains)
    if (r.defined())
      for (int k = 0; k < r.dimensions(); ++k)
        bounds[r[k].name()] = {r[k].min(), r[k].extent()};
  return bounds;
}

void printFunc(std::ostream &os, Func f, const RVarBounds &bounds) {
  if (!f.defined())
    return;
  std::vector<Expr> pure;
  for (const Var &v : f.args())
    pure.push_back(v);
  os << "func " << f.name();
  printArgs(os, pure);
  os << " = ";
  printValues(os, f.values());
  os << "\n";
  for (int k = 0; k < f.num_update_definitions(); ++k) {
    os << "  update " << f.name();
    printArgs(os, f.update_args(k));
    os << " = ";
    printValues(os, f.update_values(k));
    for (const RVar &r : f.rvars(k)) {
      auto it = bounds.find(r.name());
      os << "\n    with " << r.name();
      if (it != bounds.end())
        os << " in [" << it->second.first << ", " << it->second.first << " + "
           << it->second.second << ")";
    }
    os << "\n";
  }
}

std::string capturedLoopNest(const AlgorithmFuncs &funcs) {
  std::ostringstream captured;
  std::streambuf *old = std::cerr.rdbuf(captured.rdbuf());
  try {
    funcs.pipeline().print_loop_nest();
  } catch (...) {
    std::cerr.rdbuf(old);
    throw;
  }
  std::cerr.rdbuf(old);
  return captured.str();
}

} // namespace

/// NAME_backward's Funcs: the two passes' tiles and sums, the chain rule
/// (a custom score's derivative shows in ds), the outputs.
static void printGradients(std::ostream &os, const AlgorithmFuncs &f) {
  const AlgorithmFuncs::Gradients &g = f.grad;
  RVarBounds bounds = boundsOf({f.rd, g.rowTiles, g.keyBlocks, g.outputBlocks, g.pairs});
  os << "// tiles of " << f.tileQ << " rows x " << f.blockK << " keys\n";
  printFunc(os, g.rowLse, bounds);
  for (const Func &fn : g.products) // d_attn first: the output projection's
    if (fn.name() == "d_attn")
      printFunc(os, fn, bounds);
  for (const AlgorithmFuncs::Gradients::Tile *t : {&g.outputTile, &g.keyTile, &g.queryTile})
    for (Func fn : {t->qk, t->dp, t->p, t->ds})
      printFunc(os, fn, bounds);
  for (Func fn : {g.oRows, g.rowDot, g.sums, g.dKV, g.dQ})
    printFunc(os, fn, bounds);
  for (const Func &fn : g.chain)
    printFunc(os, fn, bounds);
  for (const Func &fn : g.products)
    if (fn.name() != "d_attn")
      printFunc(os, fn, bounds);
  for (const AlgorithmFuncs::Gradients::Scatter &s : g.scatters) {
    RVarBounds pairs = boundsOf({s.pairs});
    pairs.insert(bounds.begin(), bounds.end());
    printFunc(os, s.sum, pairs);
  }
  for (const Func &fn : f.outputs)
    printFunc(os, fn, bounds);
}

std::string printHalide(const AlgorithmFuncs &f) {
  std::ostringstream os;
  if (f.isBackward())
    os << "// kernel " << f.name << ": gradients, FlashAttention-2's backward in "
       << (f.grad.singlePass ? "one pass" : "two passes") << "\n";
  else
    os << "// kernel " << f.name << ": online softmax over key blocks of " << f.blockK
       << " keys for query tiles of " << f.tileQ << " rows\n";
  os << "// algorithm\n";
  RVarBounds bounds = boundsOf({f.rd, f.rj, f.stateDomain, f.rsk, f.rdPairs, f.rjPairs});
  for (const Func &p : f.precomputed)
    printFunc(os, p, bounds);
  for (Func fn : {f.qIn, f.kIn, f.vIn, f.qHoist, f.kHoist, f.qs, f.qPairs, f.kBf16, f.vPairs,
                  f.qk, f.blockScore, f.blockMax, f.blockExp, f.blockSum, f.pPairs, f.blockPV})
    printFunc(os, fn, bounds);
  for (const Func &fn : f.sinkFuncs())
    printFunc(os, fn, bounds);
  for (Func fn : {f.state, f.attn, f.out, f.qkWeights, f.weights, f.lse})
    printFunc(os, fn, bounds);
  const RDom &blocks = f.stateDomain;
  if (blocks.defined() && blocks.domain().predicate().defined() &&
      !is_const_one(blocks.domain().predicate()))
    os << "  where (key-block skipping) " << blocks.domain().predicate() << "\n";
  // The keys of a block that are visited (a cache's length, a causal tile's
  // last key, a packed tile's sequences).
  if (f.rj.defined() && f.rj.domain().predicate().defined() &&
      !is_const_one(f.rj.domain().predicate()))
    os << "  where (key loop) " << f.rj.domain().predicate() << "\n";
  if (f.isBackward())
    printGradients(os, f);
  os << "// schedule: " << f.policyName << "\n";
  for (const std::string &note : f.scheduleNotes)
    os << "//   " << note << "\n";
  os << "// loop nest\n" << capturedLoopNest(f);
  return os.str();
}

} // namespace attnc::halide_backend
