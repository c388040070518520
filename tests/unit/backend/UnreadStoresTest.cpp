//===- UnreadStoresTest.cpp - The pass that drops stores no load reads ----===//
//
// compiler/HalideBackend/UnreadStores.h on hand-built statements: the
// softmax state's row values stored per vector of columns and read at the
// last column, and the cases where nothing may be dropped (a gather, a
// handle in use, a buffer not named, the same let name bound to other
// values in unrolled copies).
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/UnreadStores.h"

#include <gtest/gtest.h>

#include <memory>

using namespace Halide;
using namespace Halide::Internal;

namespace {

const char *const kBuffer = "softmax_state.0";

/// The first element of each store to `name` that is left, in order.
class StoredOffsets : public IRVisitor {
public:
  explicit StoredOffsets(std::string name) : name(std::move(name)) {}
  std::vector<std::string> stores;

private:
  std::string name;
  using IRVisitor::visit;
  void visit(const Store *op) override {
    if (op->name != name)
      return;
    std::ostringstream s;
    s << op->index;
    stores.push_back(s.str());
  }
};

std::vector<std::string> storesLeft(const Stmt &s, std::set<std::string> buffers = {kBuffer}) {
  std::unique_ptr<IRMutator> pass(attnc::halide_backend::newUnreadStoresPass(std::move(buffers)));
  StoredOffsets left(kBuffer);
  pass->mutate(s).accept(&left);
  return left.stores;
}

Stmt storeColumns(const Expr &rowBase) {
  // Four vectors of 16 columns of one row of 64, each the row's value.
  std::vector<Stmt> stores;
  for (int k = 0; k < 4; ++k)
    stores.push_back(Store::make(kBuffer, Broadcast::make(1.0f, 16),
                                 Ramp::make(simplify(rowBase + 16 * k), 1, 16), Parameter(),
                                 const_true(16), ModulusRemainder()));
  return Block::make(stores);
}

Expr loadAt(const Expr &index) {
  int lanes = index.type().lanes();
  return Load::make(Float(32, lanes), kBuffer, index, Buffer<>(), Parameter(), const_true(lanes),
                    ModulusRemainder());
}

Stmt inRows(const Stmt &body) {
  return Allocate::make(kBuffer, Float(32), MemoryType::Auto, {64, 4}, const_true(),
                        For::make("io", 0, 4, ForType::Serial, DeviceAPI::None, body));
}

TEST(UnreadStores, RowValuesAreStoredAtTheColumnThatIsRead) {
  Expr io = Variable::make(Int(32), "io");
  Stmt body = Block::make(Evaluate::make(loadAt(io * 64 + 63)), storeColumns(io * 64));
  EXPECT_EQ(storesLeft(inRows(body)), std::vector<std::string>{"ramp((io*64) + 48, 1, 16)"});
  // Through a let, as lowering leaves the row's base.
  Expr t = Variable::make(Int(32), "t");
  Stmt viaLet = LetStmt::make(
      "t", io * 64, Block::make(Evaluate::make(loadAt(t + 63)), storeColumns(t)));
  EXPECT_EQ(storesLeft(inRows(viaLet)), std::vector<std::string>{"ramp(t + 48, 1, 16)"});
}

TEST(UnreadStores, NothingIsDroppedWhenAReadIsUnknown) {
  Expr io = Variable::make(Int(32), "io");
  Stmt stores = storeColumns(io * 64);
  // A gather, a load at an index of unknown residue, the buffer's address.
  Expr gather = loadAt(Shuffle::make_interleave({Ramp::make(io * 64, 2, 8), Ramp::make(io * 64 + 1, 2, 8)}));
  Expr unknown = loadAt(Variable::make(Int(32), "n") + 63);
  Expr handle = Variable::make(Handle(), kBuffer);
  for (const Expr &read : {gather, unknown})
    EXPECT_EQ(storesLeft(inRows(Block::make(Evaluate::make(read), stores))).size(), 4u) << read;
  Stmt withHandle = Block::make({Evaluate::make(loadAt(io * 64 + 63)), Evaluate::make(handle), stores});
  EXPECT_EQ(storesLeft(inRows(withHandle)).size(), 4u);
  // Not a named buffer.
  Stmt body = Block::make(Evaluate::make(loadAt(io * 64 + 63)), stores);
  EXPECT_EQ(storesLeft(inRows(body), {"softmax_state.1"}).size(), 4u);
}

TEST(UnreadStores, EveryBindingOfASharedLoadCounts) {
  // Unrolled copies share the nodes that do not name the unrolled variable:
  // one Load reads column 15 in one copy and 63 in the other.
  Expr t = Variable::make(Int(32), "t");
  Stmt read = Evaluate::make(loadAt(t + 15));
  Stmt body = Block::make({LetStmt::make("t", 0, read), LetStmt::make("t", 48, read),
                           storeColumns(0)});
  EXPECT_EQ(storesLeft(inRows(body)), (std::vector<std::string>{"ramp(0, 1, 16)", "ramp(48, 1, 16)"}));
}

TEST(UnreadStores, EachRunAnalysesItsOwnStatement) {
  // One pass object run on two statements: the second's loads read column
  // 15, not the first's 63.
  std::unique_ptr<IRMutator> pass(attnc::halide_backend::newUnreadStoresPass({kBuffer}));
  Expr io = Variable::make(Int(32), "io");
  for (int column : {63, 15}) {
    Stmt body = Block::make(Evaluate::make(loadAt(io * 64 + column)), storeColumns(io * 64));
    StoredOffsets left(kBuffer);
    pass->mutate(inRows(body)).accept(&left);
    std::string kept = column == 63 ? "ramp((io*64) + 48, 1, 16)" : "ramp(io*64, 1, 16)";
    EXPECT_EQ(left.stores, std::vector<std::string>{kept}) << "column " << column;
  }
}

TEST(UnreadStores, ALoopVariableShadowsALetOfItsName) {
  // Inside the loop t is the loop's, not the let's 48: the load may read
  // any column, so every store stays.
  Expr t = Variable::make(Int(32), "t");
  Stmt loop = For::make("t", 0, 64, ForType::Serial, DeviceAPI::None,
                        Evaluate::make(loadAt(t + 15)));
  Stmt body = LetStmt::make("t", 48, Block::make(loop, storeColumns(0)));
  EXPECT_EQ(storesLeft(inRows(body)).size(), 4u);
}

} // namespace
