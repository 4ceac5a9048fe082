// The leaderboard's HTML sections, shared by leaderboard.html and the site's board page.
#pragma once

#include "base/json.hpp"

#include <string>

namespace prereg::grade {

/// The body of a leaderboard's page (its table, per-cell tables, reveal, gradings) from
/// leaderboard.json, without the page around it.
[[nodiscard]] std::string board_sections_html(const json &board);

} // namespace prereg::grade
