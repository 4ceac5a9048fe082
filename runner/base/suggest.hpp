// "Did you mean ...?": the candidate closest to a misspelt name (Levenshtein distance).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// The number of single-character insertions, deletions and substitutions from `a` to `b`.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The first of `candidates` nearest to `name`, if it is at most max(`max_distance`, a third of
/// `name`'s length) edits away and at most half as many edits as `name` has characters (so
/// that "x" and "abs" suggest nothing far from them); nullopt otherwise.
[[nodiscard]] std::optional<std::string> closest_match(std::string_view name,
                                                       const std::vector<std::string> &candidates,
                                                       std::size_t max_distance = 2);

/// "; did you mean 'X'?" for closest_match, or "".
[[nodiscard]] std::string did_you_mean(std::string_view name,
                                       const std::vector<std::string> &candidates);

} // namespace prereg
