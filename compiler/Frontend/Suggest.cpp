//===- Suggest.cpp - "did you mean" for misspelt names --------------------===//
//
// Optimal-string-alignment distance over short words; long words (which no
// known name is close to) are rejected before any quadratic work.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Suggest.h"

#include <algorithm>

namespace attnc {

unsigned editDistance(std::string_view a, std::string_view b) {
  size_t n = a.size(), m = b.size();
  std::vector<std::vector<unsigned>> d(n + 1, std::vector<unsigned>(m + 1));
  for (size_t i = 0; i <= n; ++i)
    d[i][0] = unsigned(i);
  for (size_t j = 0; j <= m; ++j)
    d[0][j] = unsigned(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      unsigned cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::string closestMatch(std::string_view word, const std::vector<std::string> &candidates) {
  constexpr size_t kMaxWord = 64;
  if (word.empty() || word.size() > kMaxWord)
    return "";
  unsigned limit = std::max(1u, unsigned(word.size() / 3));
  std::string best;
  unsigned bestDistance = limit + 1;
  for (const std::string &candidate : candidates) {
    if (candidate == word || candidate.size() > kMaxWord)
      continue;
    unsigned distance = editDistance(word, candidate);
    // A truncated spelling (`scaled` for `scaled_dot`) is a likely typo too.
    bool prefix = word.size() >= 3 && candidate.compare(0, word.size(), word) == 0;
    if (prefix && distance > limit)
      distance = limit;
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string didYouMean(std::string_view word, const std::vector<std::string> &candidates) {
  std::string best = closestMatch(word, candidates);
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

std::string joinList(const std::vector<std::string> &items) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i)
    text += (i ? ", " : "") + items[i];
  return text;
}

} // namespace attnc
