// `prereg site STORE REPORTS --out DIR`: a static, self-contained history of every protocol in a
// store, its attempts, verdicts over time and per-cell trends (docs/site.md).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace prereg::site {

struct site_options {
  std::filesystem::path store_root;
  std::filesystem::path reports_root;
  std::filesystem::path out_dir;
  std::vector<std::string> trust; ///< --trust arguments, as `audit` takes them
  /// --reports-url: the URL under which the pages find REPORTS ("" = the path from `out_dir` to
  /// `reports_root`, relative, so that the two folders open from disk or one static server).
  std::string reports_url;
};

/// What one build did.
struct site_summary {
  std::size_t protocols = 0;
  std::size_t reports = 0;     ///< report folders found under REPORTS
  std::size_t audited_now = 0; ///< of them, audited in this build (the rest from the cache)
  std::size_t unreadable = 0;  ///< unreadable or failing their audit
  std::size_t pages_written = 0;
  std::size_t pages_kept = 0; ///< pages whose bytes did not change
  std::size_t boards = 0;     ///< leaderboard folders found under REPORTS
};

/// The reports folder as the pages link it, ending in "/": `o.reports_url` when given, else the
/// path from `o.out_dir` to `o.reports_root` (both resolved), percent-encoded.
[[nodiscard]] std::string reports_href(const site_options &o);

/// Builds (or brings up to date) the site in `o.out_dir`. A missing STORE or REPORTS folder is
/// exit 2; a report that cannot be read or audited is shown as such, never an error.
site_summary build_site(const site_options &o);

} // namespace prereg::site
