//===- Suggest.h - "did you mean" for misspelt names --------------*- C++ -*-===//
//
// Picks the closest known spelling to a misspelt field, keyword, function or
// value (optimal-string-alignment edit distance, so a swap of two letters
// costs one), the way clang suggests typo corrections.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attnc {

/// Edit distance with adjacent transpositions.
unsigned editDistance(std::string_view a, std::string_view b);

/// The candidate closest to `word`, or "" when none is close enough
/// (distance at most a third of the word's length, and at least 1).
std::string closestMatch(std::string_view word, const std::vector<std::string> &candidates);

/// "; did you mean 'x'?" or "".
std::string didYouMean(std::string_view word, const std::vector<std::string> &candidates);

/// "a, b, c" for messages.
std::string joinList(const std::vector<std::string> &items);

} // namespace attnc
