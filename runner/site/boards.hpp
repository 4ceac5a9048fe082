// The site's leaderboards (docs/site.md, "Leaderboards"): every leaderboard under REPORTS
// (ID/GRADE-.../leaderboard.json), audited; a page per task with its newest one.
#pragma once

#include "base/json.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg {
class store;
struct trust_root;
} // namespace prereg

namespace prereg::site {

/// One leaderboard folder as the site shows it.
struct board_facts {
  std::string rel;       ///< the folder relative to REPORTS ("ID/GRADE-...")
  std::string task_hash; ///< "" when unreadable
  std::string task_id;
  std::string grade_id;
  std::string graded_at;
  std::string status; ///< "audited" | "audit failed" | "unreadable"
  std::string why;
  std::size_t entries = 0, ranked = 0;
  json board = nullptr; ///< leaderboard.json (null when unreadable)
};

/// Every leaderboard folder under `reports_root`, audited, sorted by folder.
[[nodiscard]] std::vector<board_facts> find_boards(const std::filesystem::path &reports_root,
                                                   const store &s, const trust_root &trust);

/// The report folders a leaderboard keeps (ID/GRADE-.../parts/PID/RUN), for the protocols'
/// pages: a grading's runs are kept there, not under REPORTS/PID.
[[nodiscard]] std::vector<std::filesystem::path>
board_part_dirs(const std::vector<board_facts> &boards, const std::filesystem::path &reports_root);

/// The file name of a task's leaderboard page: "b-HASH16.html".
[[nodiscard]] std::string board_page_name(const std::string &task_hash);

/// A task's page: its newest leaderboard (the audit's status, then the leaderboard's sections)
/// and its earlier ones.
[[nodiscard]] std::string render_board_page(const std::vector<const board_facts *> &boards);

/// The index's section of leaderboards: one row per task, its newest leaderboard.
[[nodiscard]] std::string boards_index_section(const std::vector<board_facts> &boards);

} // namespace prereg::site
