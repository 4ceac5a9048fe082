// The site's pages: the index of protocols and one page per frozen protocol (HTML, inline CSS
// and SVG, no script, no network).
#pragma once

#include "site/history.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace prereg::site {

/// The file name of a protocol's page: "p-HASH16.html".
[[nodiscard]] std::string page_name(const std::string &hash);

/// The frozen versions of each protocol id (ascending by revision, then frozen_at, then hash).
[[nodiscard]] std::map<std::string, std::vector<const protocol_facts *>>
versions_by_id(const std::map<std::string, protocol_facts> &protocols);

/// How a version is named among `versions` (those of its id): "revision R", with its freeze
/// time added when another version of the id has the same revision number.
[[nodiscard]] std::string revision_label(const protocol_facts &p,
                                         const std::vector<const protocol_facts *> &versions);

/// index.html: the leaderboards' section (boards.hpp) when there is one, every protocol id with its
/// versions grouped and labelled by revision, their attempts and reports, the latest verdicts
/// (linked to their report), the ledger's state, and the report folders that name no protocol of
/// the store. `reports_href` is the reports folder as a URL relative to the site's folder, ending
/// in "/".
[[nodiscard]] std::string render_index(const std::map<std::string, protocol_facts> &protocols,
                                       const std::vector<const report_facts *> &orphans,
                                       const std::string &ledger_problem,
                                       std::string_view reports_href,
                                       const std::string &boards_section = {});

/// A protocol's page: its revision among `versions` (its id's, linked), attempts in order (each
/// linked to its report), each prediction's verdict over the runs, the steps and jumps found
/// and a trend chart per cell.
[[nodiscard]] std::string render_protocol(const protocol_facts &p,
                                          const std::vector<const protocol_facts *> &versions,
                                          std::string_view reports_href);

} // namespace prereg::site
