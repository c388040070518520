//===- AttnKinds.cpp - The dialect's kinds and their table rows -----------===//
#include "dialects/Attn/IR/AttnKinds.h"

#include <iterator>

namespace mlir::attn {

const attnc::ScoreKindInfo &kindInfo(ScoreKind kind) {
  return attnc::kindInfo(*attnc::parseScoreKind(stringifyScoreKind(kind).str()));
}

const attnc::MaskKindInfo &kindInfo(MaskKind kind) {
  return attnc::kindInfo(*attnc::parseMaskKind(stringifyMaskKind(kind).str()));
}

bool kindTablesMatch() {
  // Generated stringify functions return "" past the last case.
  size_t scores = 0, masks = 0;
  for (; !stringifyScoreKind((ScoreKind)scores).empty(); ++scores)
    if (!attnc::parseScoreKind(stringifyScoreKind((ScoreKind)scores).str()))
      return false;
  for (; !stringifyMaskKind((MaskKind)masks).empty(); ++masks)
    if (!attnc::parseMaskKind(stringifyMaskKind((MaskKind)masks).str()))
      return false;
  return scores == std::size(attnc::kScoreKinds) && masks == std::size(attnc::kMaskKinds);
}

} // namespace mlir::attn
