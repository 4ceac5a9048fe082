// The site's data: each protocol's attempts from the ledger and each report folder's facts
// (audited once, then cached by the bytes of its files).
#pragma once

#include "base/json.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace prereg {
class store;
struct trust_root;
} // namespace prereg

namespace prereg::site {

/// One prediction's verdict in a report, with its claim as frozen.
struct verdict_fact {
  std::string id;
  std::string verdict; ///< "confirmed" | "refuted" | "inconclusive"
  std::string claim;
  friend bool operator==(const verdict_fact &, const verdict_fact &) = default;
};

/// One measured cell of an audited report: its median and interquartile range [ms].
struct cell_fact {
  std::string label; ///< "ARM PASS SHAPE"
  double median_ms = 0;
  double q1_ms = 0;
  double q3_ms = 0;
  friend bool operator==(const cell_fact &, const cell_fact &) = default;
};

/// One report folder under REPORTS, as the site shows it.
struct report_facts {
  std::string rel;    ///< the folder relative to REPORTS ("ID/RUN_ID")
  std::string status; ///< "audited" | "audit failed" | "unreadable"
  std::string why;    ///< failed checks, or why it could not be read
  std::string protocol_hash;
  std::string run_id;
  std::string started_at;
  std::string commit;
  std::string device;
  std::int64_t attempt = 0;
  bool merged = false;
  std::vector<verdict_fact> verdicts;
  std::vector<cell_fact> medians;
  /// The page the site links to, relative to the folder ("report.html", else "report.md", else
  /// ""): looked up on every build, not cached.
  std::string page;
};

/// One run-start of a protocol in the ledger and how it ended.
struct attempt_facts {
  std::int64_t attempt = 0;
  std::string run_id;
  std::string started_at;
  std::string device;
  std::string outcome; ///< "completed" | "aborted" | "merged" | "no end recorded"
  std::string reason;  ///< an abort's reason
};

/// One frozen protocol and everything the site knows of it.
struct protocol_facts {
  std::string hash;
  std::string id;
  std::string title;
  std::string frozen_at;
  std::int64_t revision = 1; ///< the body's `revision` (absent: 1)
  std::vector<std::pair<std::string, std::string>> predictions; ///< id, claim, as frozen
  std::string problem; ///< why the stored copy does not load ("" when it does)
  std::vector<attempt_facts> attempts;
  std::vector<const report_facts *> reports; ///< in run order (started_at, then folder)
};

/// The report folders under `reports_root` (two levels: ID/RUN_ID, each holding report.json or
/// report.dsse.json), sorted.
[[nodiscard]] std::vector<std::filesystem::path>
find_report_dirs(const std::filesystem::path &reports_root);

/// The facts of each report folder in `dirs` (under `reports_root`), in `dirs` order: from
/// `cache_dir` when a previous build recorded them for the same bytes, else by auditing it now
/// (a merged report by audit_merged_report, one at a time; the others by audit_report against
/// one prepared_ledger read once, on host_threads() threads: the facts do not depend on the
/// thread count) and reading it. `audited_now` counts the folders audited now. Each folder's
/// `page` is looked up now.
[[nodiscard]] std::vector<report_facts>
all_report_facts(const std::vector<std::filesystem::path> &dirs,
                 const std::filesystem::path &reports_root, const store &s, const trust_root &trust,
                 const std::filesystem::path &cache_dir, std::size_t &audited_now);

/// Every stored protocol with its attempts (ledger order); `ledger_problem` is set when the
/// ledger does not verify (the attempts are still read from it).
[[nodiscard]] std::map<std::string, protocol_facts> protocols_of(const store &s,
                                                                 std::string &ledger_problem);

/// The facts as the cache stores them, and back (nullopt for a cache entry of another format).
[[nodiscard]] json to_json(const report_facts &f);
[[nodiscard]] std::optional<report_facts> facts_from_json(const json &j);

} // namespace prereg::site
