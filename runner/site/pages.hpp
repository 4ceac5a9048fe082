// The site's pages: the index of protocols and one page per frozen protocol (HTML, inline CSS
// and SVG, no script, no network).
#pragma once

#include "site/history.hpp"

#include <map>
#include <string>
#include <vector>

namespace prereg::site {

/// The file name of a protocol's page: "p-HASH16.html".
[[nodiscard]] std::string page_name(const std::string &hash);

/// index.html: the leaderboards' section (boards.hpp) when there is one, every protocol (grouped
/// by id), its attempts and reports, the latest verdicts, the ledger's state, and the report
/// folders that name no protocol of the store.
[[nodiscard]] std::string render_index(const std::map<std::string, protocol_facts> &protocols,
                                       const std::vector<const report_facts *> &orphans,
                                       const std::string &ledger_problem,
                                       const std::string &boards_section = {});

/// A protocol's page: attempts in order, each prediction's verdict over the runs, the steps
/// found and a trend chart per cell.
[[nodiscard]] std::string render_protocol(const protocol_facts &p);

} // namespace prereg::site
