// "Did you mean ...?" (suggest.hpp).
#include "base/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_match(std::string_view name,
                                         const std::vector<std::string> &candidates,
                                         std::size_t max_distance) {
  std::optional<std::string> best;
  std::size_t best_d = std::max(max_distance, name.size() / 3) + 1;
  for (const auto &c : candidates) {
    if (c.size() > 256 || name.size() > 256)
      continue; // a hostile length costs no quadratic work
    const std::size_t d = edit_distance(name, c);
    if (d < best_d && 2 * d <= name.size()) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string> &candidates) {
  const auto best = closest_match(name, candidates);
  return best ? fmt::format("; did you mean '{}'?", *best) : std::string();
}

} // namespace prereg
