// The leaderboard (docs/grading.md, "The leaderboard"): leaderboard.json as a pure function of
// the task, the reveal, the gradings' baseline reports and each entry's report (or its
// failure), so that the audit rebuilds it byte for byte; its pages.
#pragma once

#include "base/json.hpp"
#include "grade/score.hpp"
#include "grade/submission.hpp"
#include "model/report_model.hpp"
#include "spec/protocol.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace prereg::grade {

/// A report kept in the leaderboard's folder.
struct board_part {
  std::string path; ///< parts/<protocol id>/<run id>, relative to the leaderboard's folder
  std::string run_id;
  std::string report_sha256;
  report_document doc;
  [[nodiscard]] json to_json() const;
};

/// One grading whose entries the leaderboard holds: its nonce and its baseline's report.
struct board_grading {
  std::string grade_id;
  std::string nonce;
  board_part baseline;
};

/// A process that re-timed a submission (docs/grading.md, "The re-timing").
struct board_retime {
  std::string nonce;         ///< 32 hex digits drawn after the first process ended
  std::string protocol_hash; ///< its re-timing protocol's hash
  cell_key cell;             ///< the cell it measured
  std::optional<board_part> run;
  std::string failure; ///< why it left no report ("" when it did)
  int exit_code = 0;
  double wall_ms = 0;
  json confinement = nullptr;
  /// Its members as leaderboard.json's entry holds them (without the judged facts).
  [[nodiscard]] json to_json() const;
  [[nodiscard]] static board_retime from_json(const json &j);
};

/// One submission as graded: what its grading recorded about it, and its report if it left one.
struct board_entry {
  submission sub;
  std::string grade_id;
  std::string protocol_hash; ///< its grading protocol's hash ("" when none was frozen)
  protocol grading;          ///< its grading protocol (rebuilt from the task and the grading)
  std::optional<board_part> run;
  std::string failure; ///< why it left no report ("" when it did)
  int exit_code = 0;
  double wall_ms = 0;
  json confinement = nullptr;        ///< the walls of its process (confine_facts)
  json build = nullptr;              ///< C source: how it was built
  std::vector<board_retime> retimes; ///< its re-timings in the order they ran (the last decides)
};

/// Everything leaderboard.json is made from.
struct board_inputs {
  std::string task_hash;
  json task_body;
  json task_freeze;
  protocol task;
  json reveal = nullptr;               ///< the held-out secret, or null
  std::vector<board_grading> gradings; ///< the newest first
  std::vector<board_entry> entries;
};

/// leaderboard.json: every entry scored (score_entry) against its grading's baseline, ranked
/// (ranks_of), in rank order (unranked last, then by score, then by name); `meta` is
/// {grade_id, graded_at}, `tool` the writing build's.
[[nodiscard]] json build_leaderboard(const board_inputs &in, const json &meta, const json &tool);

/// leaderboard.md and leaderboard.html of a leaderboard.json object.
[[nodiscard]] std::string render_board_markdown(const json &board);
[[nodiscard]] std::string render_board_html(const json &board);

/// The part in `dir` (a report folder), its path in the leaderboard being `path`.
[[nodiscard]] board_part read_board_part(const std::filesystem::path &dir, const std::string &path);

} // namespace prereg::grade
