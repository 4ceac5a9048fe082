// `prereg site`: collect the protocols, their attempts and reports, then write the pages whose
// bytes changed.
#include "site/site.hpp"

#include "base/fs.hpp"
#include "prereg/error.hpp"
#include "site/boards.hpp"
#include "site/history.hpp"
#include "site/pages.hpp"
#include "site/pages_common.hpp"
#include "store/store.hpp"
#include "store/trust.hpp"

#include <algorithm>
#include <set>

namespace prereg::site {
namespace fs = std::filesystem;
namespace {

/// Writes `bytes` to `path` unless it holds them already; counts which it did.
void write_page(const fs::path &path, const std::string &bytes, site_summary &sum) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) == bytes.size() &&
      read_file(path) == bytes) {
    ++sum.pages_kept;
    return;
  }
  write_file_atomic(path, bytes);
  ++sum.pages_written;
}

/// The protocol a report belongs to: its own protocol hash, else the run id's run-start in the
/// ledger, else the newest version of the protocol id its folder is under; "" if none.
std::string owner_of(const report_facts &r, const std::map<std::string, protocol_facts> &ps) {
  if (ps.contains(r.protocol_hash))
    return r.protocol_hash;
  const std::string folder_run = fs::path(r.rel).filename().string();
  const std::string folder_id = fs::path(r.rel).parent_path().filename().string();
  std::string by_id;
  std::string by_id_time;
  for (const auto &[hash, p] : ps) {
    for (const attempt_facts &a : p.attempts)
      if (a.run_id == folder_run)
        return hash;
    if (p.id == folder_id && (by_id.empty() || p.frozen_at > by_id_time)) {
      by_id = hash;
      by_id_time = p.frozen_at;
    }
  }
  return by_id;
}

/// A report's place in run order: the digits of its start time (microseconds), else of its run
/// id's UTC stamp (a merged report's after "MERGE-"), then its attempt number.
std::pair<std::string, std::int64_t> run_order(const report_facts &r) {
  std::string id = fs::path(r.rel).filename().string();
  if (id.starts_with("MERGE-"))
    id = id.substr(6);
  const std::string from = r.started_at.empty() ? id.substr(0, id.find('-')) : r.started_at;
  std::string digits;
  for (char c : from)
    if (c >= '0' && c <= '9')
      digits += c;
  digits.resize(20, '0');
  return {digits, r.attempt};
}

void check_folders(const site_options &o) {
  std::error_code ec;
  if (!fs::is_directory(o.store_root, ec))
    throw invalid_input("no store folder", o.store_root.string());
  if (!fs::is_directory(o.reports_root, ec))
    throw invalid_input("no reports folder", o.reports_root.string());
  if (o.out_dir.empty())
    throw invalid_input("--out DIR is required");
}

} // namespace

std::string reports_href(const site_options &o) {
  if (!o.reports_url.empty())
    return o.reports_url.ends_with('/') ? o.reports_url : o.reports_url + "/";
  const fs::path out = fs::weakly_canonical(fs::absolute(o.out_dir));
  const fs::path reports = fs::weakly_canonical(fs::absolute(o.reports_root));
  const std::string rel = reports.lexically_relative(out).generic_string();
  return rel.empty() || rel == "." ? "" : detail::url_path(rel) + "/";
}

site_summary build_site(const site_options &o) {
  check_folders(o);
  const store s(o.store_root);
  const trust_root trust = resolve_trust(o.trust, s);
  site_summary sum;
  std::string ledger_problem;
  std::map<std::string, protocol_facts> protocols = protocols_of(s, ledger_problem);
  const fs::path cache_dir = o.out_dir / ".cache";
  fs::create_directories(o.out_dir);
  std::size_t audited_now = 0;
  const std::vector<board_facts> boards = find_boards(o.reports_root, s, trust);
  std::vector<fs::path> report_dirs = find_report_dirs(o.reports_root);
  for (auto &d : board_part_dirs(boards, o.reports_root)) // a grading's runs are kept there
    report_dirs.push_back(std::move(d));
  const std::vector<report_facts> reports =
      all_report_facts(report_dirs, o.reports_root, s, trust, cache_dir, audited_now);
  sum.audited_now = audited_now;
  for (const report_facts &r : reports)
    sum.unreadable += r.status == "audited" ? 0 : 1;
  sum.reports = reports.size();
  std::vector<const report_facts *> orphans;
  for (const report_facts &r : reports) {
    const std::string owner = owner_of(r, protocols);
    if (owner.empty())
      orphans.push_back(&r);
    else
      protocols[owner].reports.push_back(&r);
  }
  for (auto &[hash, p] : protocols)
    std::stable_sort(
        p.reports.begin(), p.reports.end(),
        [](const report_facts *a, const report_facts *b) { return run_order(*a) < run_order(*b); });
  const std::string href = reports_href(o);
  const auto versions = versions_by_id(protocols);
  for (const auto &[hash, p] : protocols)
    write_page(o.out_dir / page_name(hash), render_protocol(p, versions.at(p.id), href), sum);
  sum.protocols = protocols.size();
  std::map<std::string, std::vector<const board_facts *>> by_task;
  for (const auto &b : boards)
    if (!b.task_hash.empty())
      by_task[b.task_hash].push_back(&b);
  for (auto &[hash, list] : by_task) {
    std::stable_sort(list.begin(), list.end(), [](const board_facts *a, const board_facts *b) {
      return a->graded_at < b->graded_at;
    });
    write_page(o.out_dir / board_page_name(hash), render_board_page(list), sum);
  }
  sum.boards = boards.size();
  write_page(o.out_dir / "index.html",
             render_index(protocols, orphans, ledger_problem, href, boards_index_section(boards)),
             sum);
  return sum;
}

} // namespace prereg::site
