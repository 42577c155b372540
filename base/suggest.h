#pragma once
// "Did you mean ...?": the closest of a set of names to a mistyped one, for the messages that
// refuse an unknown flag (cli/cli_help.h) or key (api/peer_options.cc).

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace murmur {

// Edits (insert, delete, substitute, swap two neighbours) from a to b: the optimal string
// alignment distance.
inline size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The name of `names` closest to `unknown` ("epoch" → "epochs"), or "" when none is within
// max(2, a third of its length) edits.
template <typename Names>
std::string Closest(std::string_view unknown, const Names& names) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, unknown.size() / 3) + 1;
  for (const auto& name : names) {
    const size_t d = EditDistance(unknown, name);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(name);
    }
  }
  return best;
}

}  // namespace murmur
