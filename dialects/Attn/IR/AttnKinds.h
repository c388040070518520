//===- AttnKinds.h - The dialect's kinds and their table rows -*- C++ -*-===//
//
// The dialect's ScoreKind / MaskKind (generated from AttnBase.td) joined to
// their rows in compiler/Kinds/AttentionKinds.h (weights, inputs, whether a
// scale commutes with q, ...). Verifiers and passes ask these rows instead
// of testing kind names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Kinds/AttentionKinds.h"
#include "dialects/Attn/IR/AttnOps.h"

namespace mlir::attn {

/// The table row of a kind; the join is the spelling, which the tablegen
/// enum and the table share (checked when the dialect loads).
const attnc::ScoreKindInfo &kindInfo(ScoreKind kind);
const attnc::MaskKindInfo &kindInfo(MaskKind kind);

/// True when every dialect kind has a table row of the same spelling.
bool kindTablesMatch();

} // namespace mlir::attn
