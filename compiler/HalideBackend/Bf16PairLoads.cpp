//===- Bf16PairLoads.cpp - bf16 rows widened a 32-bit word at a time -------===//
#include "compiler/HalideBackend/Bf16PairLoads.h"

#include <map>
#include <optional>

namespace attnc::halide_backend {
namespace {

using namespace Halide;
using namespace Halide::Internal;

class Bf16PairLoadsPass : public IRMutator {
public:
  explicit Bf16PairLoadsPass(std::set<std::string> buffers) : buffers(std::move(buffers)) {}

private:
  std::set<std::string> buffers;
  using IRMutator::visit;

  /// A buffer index with the buffer's mins at 0, as BufferChecks requires
  /// of every buffer before anything runs (Halide is left unaware of a KV
  /// cache's channel min).
  static Expr withZeroMins(const std::string &buffer, const Expr &index) {
    std::map<std::string, Expr> mins;
    for (int k = 0; k < 8; k++)
      mins[buffer + ".min." + std::to_string(k)] = 0;
    return simplify(substitute(mins, index));
  }

  /// The parity of a buffer index: from the load's alignment, or else from
  /// the index itself.
  static std::optional<int64_t> parityOf(const Load *load, const Expr &index) {
    ModulusRemainder known = load->alignment;
    if (known.modulus % 2 != 0)
      known = modulus_remainder(index);
    if (known.modulus % 2 != 0 || known.remainder < 0)
      return std::nullopt;
    return known.remainder % 2;
  }

  Expr visit(const Cast *op) override {
    const Load *load = op->value.as<Load>();
    const Ramp *ramp = load ? load->index.as<Ramp>() : nullptr;
    if (!ramp || !load->type.is_bfloat() || op->type != Float(32, ramp->lanes) ||
        !buffers.count(load->name) || !is_const(ramp->stride, 2) ||
        !is_const_one(load->predicate))
      return IRMutator::visit(op);
    Expr base = withZeroMins(load->name, ramp->base);
    std::optional<int64_t> parity = parityOf(load, base);
    if (!parity)
      return IRMutator::visit(op);
    const int lanes = ramp->lanes;
    const Type words = UInt(32, lanes);
    Expr first = simplify((base - (int32_t)*parity) / 2);
    // Alignment in words: what was known in channels, halved.
    ModulusRemainder alignment;
    if (load->alignment.modulus % 2 == 0 && load->alignment.remainder >= 0)
      alignment = ModulusRemainder(load->alignment.modulus / 2,
                                   (load->alignment.remainder - *parity) / 2);
    Expr pairs = Load::make(words, load->name, Ramp::make(first, 1, lanes), load->image,
                            load->param, const_true(lanes), alignment);
    Expr bits = *parity == 0 ? pairs << make_const(words, 16)
                            : pairs & make_const(words, 0xffff0000u);
    return reinterpret(op->type, bits);
  }
};

} // namespace

IRMutator *newBf16PairLoadsPass(std::set<std::string> buffers) {
  return new Bf16PairLoadsPass(std::move(buffers));
}

} // namespace attnc::halide_backend
