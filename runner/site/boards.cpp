// The site's leaderboards (boards.hpp).
#include "site/boards.hpp"

#include "base/fs.hpp"
#include "grade/board_audit.hpp"
#include "grade/board_page.hpp"
#include "site/pages_common.hpp"
#include "store/trust.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace prereg::site {
namespace fs = std::filesystem;
using detail::esc;
namespace {

board_facts facts_of(const fs::path &dir, const fs::path &root, const store &s,
                     const trust_root &trust) {
  board_facts f;
  f.rel = fs::relative(dir, root).string();
  try {
    f.board = parse_json_strict(read_file(dir / "leaderboard.json"), f.rel);
    f.task_hash = f.board.at("task").at("hash").get<std::string>();
    f.task_id = f.board.at("task").at("body").at("id").get<std::string>();
    f.grade_id = f.board.at("grade").at("grade_id").get<std::string>();
    f.graded_at = f.board.at("grade").at("graded_at").get<std::string>();
    for (const auto &e : f.board.at("entries")) {
      ++f.entries;
      f.ranked += e.at("rank").is_number() ? 1 : 0;
    }
    const audit_result a = grade::audit_leaderboard(dir, s, trust, {});
    f.status = a.passed() ? "audited" : "audit failed";
    for (const auto &n : a.failed())
      f.why += (f.why.empty() ? "failed: " : ", ") + n;
  } catch (const std::exception &e) {
    f.status = "unreadable";
    f.why = e.what();
    f.board = nullptr;
  }
  return f;
}

} // namespace

std::vector<board_facts> find_boards(const fs::path &reports_root, const store &s,
                                     const trust_root &trust) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto &id : fs::directory_iterator(reports_root, ec)) {
    if (!id.is_directory())
      continue;
    for (const auto &g : fs::directory_iterator(id.path(), ec))
      if (g.is_directory() && g.path().filename().string().starts_with("GRADE-") &&
          grade::is_leaderboard(g.path()))
        dirs.push_back(g.path());
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<board_facts> out;
  for (const auto &d : dirs)
    out.push_back(facts_of(d, reports_root, s, trust));
  return out;
}

std::vector<fs::path> board_part_dirs(const std::vector<board_facts> &boards,
                                      const fs::path &reports_root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto &b : boards) {
    const fs::path parts = reports_root / b.rel / "parts";
    if (!fs::is_directory(parts, ec))
      continue;
    for (const auto &pid : fs::directory_iterator(parts, ec))
      for (const auto &run : fs::directory_iterator(pid.path(), ec))
        if (fs::is_regular_file(run.path() / "report.json", ec))
          out.push_back(run.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string board_page_name(const std::string &task_hash) {
  return "b-" + task_hash.substr(0, 16) + ".html";
}

std::string render_board_page(const std::vector<const board_facts *> &boards) {
  const board_facts &newest = *boards.back();
  std::string body = fmt::format("<p><a href=\"index.html\">index</a></p>\n<h1>Leaderboard of "
                                 "{}</h1>\n<p class=\"board-status\">{} <code>{}</code></p>\n",
                                 esc(newest.task_id),
                                 detail::status_badge(newest.status, newest.why), esc(newest.rel));
  if (newest.status != "audited")
    body += fmt::format("<div class=\"banner\">This leaderboard does not audit clean ({}): its "
                        "scores and ranks are not to be trusted.</div>\n",
                        esc(newest.why));
  if (!newest.board.is_null())
    body += grade::board_sections_html(newest.board);
  if (boards.size() > 1) {
    body += "<h2>Earlier leaderboards</h2>\n<table><tr><th>grading</th><th>graded at</th>"
            "<th>entries</th><th>status</th></tr>\n";
    for (auto it = boards.rbegin() + 1; it != boards.rend(); ++it)
      body += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                          esc((*it)->grade_id), esc((*it)->graded_at), (*it)->entries,
                          detail::status_badge((*it)->status, (*it)->why));
    body += "</table>\n";
  }
  return detail::page("leaderboard of " + newest.task_id, body);
}

std::string boards_index_section(const std::vector<board_facts> &boards) {
  std::map<std::string, const board_facts *> newest; // by task
  for (const auto &b : boards)
    if (!b.task_hash.empty() &&
        (!newest.contains(b.task_hash) || newest[b.task_hash]->graded_at < b.graded_at))
      newest[b.task_hash] = &b;
  if (newest.empty())
    return "";
  std::string out = "<h2>Leaderboards</h2>\n<table class=\"boards\"><tr><th>task</th>"
                    "<th>newest leaderboard</th><th>graded at</th><th>entries (ranked)</th>"
                    "<th>status</th></tr>\n";
  for (const auto &[hash, b] : newest)
    out += fmt::format("<tr><td>{}</td><td><a href=\"{}\"><code>{}</code></a></td><td>{}</td>"
                       "<td>{} ({})</td><td>{}</td></tr>\n",
                       esc(b->task_id), board_page_name(hash), esc(b->grade_id), esc(b->graded_at),
                       b->entries, b->ranked, detail::status_badge(b->status, b->why));
  return out + "</table>\n";
}

} // namespace prereg::site
