//===- ReadContract.cpp - A kernel function's argument contract -----------===//
//
// `attn.arguments = [{name = "q", role = "data", shape = ["B", "H=8", "Lq",
// "D=64"]}, ...]`: one entry per argument, then per result. A dimension is
// a size name (dynamic), `NAME=VALUE` (fixed) or a constant, as in the
// signature text of abi/KernelAbi.h. The element type is the tensor's.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/AttnToHalide/ReadContract.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cctype>

using namespace mlir;

namespace attnc {

static Optional<ElemType> elemType(Type type) {
  auto tensor = type.dyn_cast<RankedTensorType>();
  if (!tensor)
    return llvm::None;
  Type e = tensor.getElementType();
  if (e.isF32())
    return ElemType::F32;
  if (e.isSignlessInteger(32) || e.isSignedInteger(32))
    return ElemType::I32;
  if (e.isUnsignedInteger(8))
    return ElemType::U8;
  if (e.isF16())
    return ElemType::F16;
  if (e.isBF16())
    return ElemType::BF16;
  return llvm::None;
}

/// `B`, `H=8` or `4`.
static bool parseDim(StringRef text, ArgDim &dim) {
  auto [name, value] = text.split('=');
  if (text.empty())
    return false;
  if (std::isdigit((unsigned char)text.front())) {
    dim.name.clear();
    return !text.getAsInteger(10, dim.value) && dim.value > 0;
  }
  dim.name = name.str();
  dim.value = 0;
  if (text.contains('='))
    return !value.getAsInteger(10, dim.value) && dim.value > 0;
  return true;
}

LogicalResult readContract(FuncOp func, KernelContract &contract) {
  auto entries = func->getAttrOfType<ArrayAttr>("attn.arguments");
  if (!entries)
    return func.emitError("kernel '") << func.getName()
                                      << "' has no 'attn.arguments' (its argument contract)";
  unsigned inputs = func.getNumArguments(), outputs = func.getNumResults();
  if (entries.size() != inputs + outputs)
    return func.emitError("kernel '")
           << func.getName() << "': 'attn.arguments' has " << entries.size()
           << " entries for " << inputs << " arguments and " << outputs << " results";
  const char *roles[] = {"data", "weight", "mask", "declared", "cache", "output"};
  for (auto it : llvm::enumerate(entries)) {
    unsigned n = it.index();
    bool isOutput = n >= inputs;
    auto error = [&]() {
      return func.emitError("kernel '")
             << func.getName() << "': 'attn.arguments' entry " << n << " ";
    };
    auto entry = it.value().dyn_cast<DictionaryAttr>();
    auto name = entry ? entry.getAs<StringAttr>("name") : StringAttr();
    auto role = entry ? entry.getAs<StringAttr>("role") : StringAttr();
    auto shape = entry ? entry.getAs<ArrayAttr>("shape") : ArrayAttr();
    if (!name || !role || !shape)
      return error() << "must be {name = \"...\", role = \"...\", shape = [...]}";
    if (!llvm::is_contained(roles, role.getValue()))
      return error() << "has unknown role '" << role.getValue() << "'";
    if ((role.getValue() == "output") != isOutput)
      return error() << "('" << name.getValue() << "') has role '" << role.getValue()
                     << "' but is " << (isOutput ? "a result" : "an argument");
    Type type = isOutput ? func.getType().getResult(n - inputs) : func.getType().getInput(n);
    Optional<ElemType> elem = elemType(type);
    if (!elem)
      return error() << "('" << name.getValue() << "') has type " << type
                     << "; expected a ranked tensor of f32, f16, bf16, i32 or ui8";
    ArgSpec arg{name.getValue().str(), *elem, isOutput, {}, role.getValue() == "cache"};
    for (Attribute d : shape) {
      auto text = d.dyn_cast<StringAttr>();
      ArgDim dim;
      if (!text || !parseDim(text.getValue(), dim))
        return error() << "('" << name.getValue() << "') has a malformed dimension " << d
                       << "; expected \"NAME\", \"NAME=VALUE\" or \"VALUE\"";
      arg.shape.push_back(dim);
    }
    if ((int64_t)arg.shape.size() != type.cast<RankedTensorType>().getRank())
      return error() << "('" << name.getValue() << "') has " << arg.shape.size()
                     << " dimensions but its type " << type << " has rank "
                     << type.cast<RankedTensorType>().getRank();
    contract.arguments.push_back(std::move(arg));
    contract.roles.push_back(role.getValue().str());
  }
  return success();
}

} // namespace attnc
