// The index page and the protocol pages.
#include "site/pages.hpp"

#include "site/pages_common.hpp"
#include "site/trends.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace prereg::site {
using namespace detail;

std::string page_name(const std::string &hash) { return "p-" + hash.substr(0, 16) + ".html"; }

namespace {

/// The report folder of run `run_id` among `p`'s reports, or null.
const report_facts *report_of(const protocol_facts &p, const std::string &run_id) {
  for (const report_facts *r : p.reports)
    if (r->run_id == run_id || r->rel.ends_with("/" + run_id))
      return r;
  return nullptr;
}

std::string report_cells(const report_facts *r) {
  if (r == nullptr)
    return "<td class=\"muted\">no report folder</td><td></td>";
  const std::string why =
      r->status == "audited" ? "" : "<div class=\"why\">" + esc(r->why) + "</div>";
  return fmt::format("<td>{} <code>{}</code>{}</td><td><code>{}</code></td>",
                     status_badge(r->status, r->why), esc(r->rel), why,
                     esc(r->commit.substr(0, 12)));
}

std::string attempts_table(const protocol_facts &p) {
  std::string rows;
  std::set<const report_facts *> shown;
  for (const attempt_facts &a : p.attempts) {
    const report_facts *r = report_of(p, a.run_id);
    shown.insert(r);
    const char *cls = a.outcome == "completed" ? "ok" : a.outcome == "aborted" ? "bad" : "mid";
    rows += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td>"
                        "<td><span class=\"b {}\">{}</span> {}</td>{}</tr>\n",
                        a.attempt, esc(a.run_id), esc(a.started_at), esc(a.device), cls,
                        esc(a.outcome), esc(a.reason), report_cells(r));
  }
  for (const report_facts *r : p.reports)
    if (!shown.contains(r))
      rows +=
          fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td>"
                      "<td class=\"muted\">{}</td>{}</tr>\n",
                      r->attempt ? std::to_string(r->attempt) : "", esc(r->run_id),
                      esc(r->started_at), esc(r->device),
                      r->merged ? "merged report" : "no run-start in this ledger", report_cells(r));
  if (rows.empty())
    return "<p class=\"muted\">Never run.</p>\n";
  return "<table><tr><th>attempt</th><th>run id</th><th>started</th><th>device</th>"
         "<th>outcome (ledger)</th><th>report</th><th>commit</th></tr>\n" +
         rows + "</table>\n";
}

std::string verdict_grid(const protocol_facts &p) {
  std::vector<std::string> ids;
  std::map<std::string, std::map<const report_facts *, std::string>> by_id;
  for (const report_facts *r : p.reports)
    for (const auto &[id, v] : r->verdicts) {
      if (!by_id.contains(id))
        ids.push_back(id);
      by_id[id][r] = v;
    }
  if (ids.empty())
    return "<p class=\"muted\">No verdicts yet.</p>\n";
  std::string out = "<table class=\"grid\"><tr><th>prediction</th><th>verdict per report, "
                    "oldest first</th></tr>\n";
  for (const std::string &id : ids) {
    out += fmt::format("<tr><th><code>{}</code></th><td>", esc(id));
    for (const report_facts *r : p.reports) {
      const auto it = by_id[id].find(r);
      if (it == by_id[id].end())
        continue;
      const std::string note = r->status == "audited" ? "" : " (" + r->status + ")";
      out += verdict_badge(it->second, fmt::format("{}: {}{}", r->run_id, it->second, note));
    }
    out += "</td></tr>\n";
  }
  return out + "</table>\n";
}

std::string counts(const protocol_facts &p) {
  std::map<std::string, int> outcome, status;
  for (const attempt_facts &a : p.attempts)
    ++outcome[a.outcome];
  for (const report_facts *r : p.reports)
    ++status[r->status];
  return fmt::format("{} attempt{} ({} completed, {} aborted, {} without an end); {} reports "
                     "({} audited, {} failing their audit, {} unreadable)",
                     p.attempts.size(), p.attempts.size() == 1 ? "" : "s", outcome["completed"],
                     outcome["aborted"], outcome["no end recorded"], p.reports.size(),
                     status["audited"], status["audit failed"], status["unreadable"]);
}

std::string latest_verdicts(const protocol_facts &p) {
  for (auto it = p.reports.rbegin(); it != p.reports.rend(); ++it)
    if ((*it)->status == "audited" && !(*it)->verdicts.empty()) {
      std::string out;
      for (const auto &[id, v] : (*it)->verdicts)
        out += verdict_badge(v, id + ": " + v);
      return out;
    }
  return "";
}

} // namespace

std::string render_protocol(const protocol_facts &p) {
  const std::vector<series> all = series_of(p);
  std::string body =
      fmt::format("<p><a href=\"index.html\">all protocols</a></p>\n<h1>{} <code>{}</code></h1>\n"
                  "<p>{}</p>\n<p>protocol hash <code>{}</code>, frozen {}</p>\n<p>{}</p>\n",
                  esc(p.id), esc(p.hash.substr(0, 12)), esc(p.title), esc(p.hash), esc(p.frozen_at),
                  esc(counts(p)));
  if (!p.problem.empty())
    body += fmt::format("<div class=\"banner\">The stored copy does not load: {}</div>\n",
                        esc(p.problem));
  body += "<h2>Attempts, in order</h2>\n" + attempts_table(p);
  body += "<h2>Verdicts over time</h2>\n" + verdict_grid(p);
  body += "<h2>Steps</h2>\n" + render_steps(all);
  body += "<h2>Trends per cell (audited runs)</h2>\n" + render_charts(all);
  return page(p.id + " — prereg history", body);
}

std::string render_index(const std::map<std::string, protocol_facts> &protocols,
                         const std::vector<const report_facts *> &orphans,
                         const std::string &ledger_problem, const std::string &boards_section) {
  std::map<std::string, std::vector<const protocol_facts *>> by_id;
  for (const auto &[hash, p] : protocols)
    by_id[p.id].push_back(&p);
  std::string body =
      fmt::format("<h1>prereg history</h1>\n<p>{} frozen protocols.</p>\n", protocols.size());
  if (!ledger_problem.empty())
    body += fmt::format("<div class=\"banner\">The ledger does not verify: {}</div>\n",
                        esc(ledger_problem));
  body += boards_section;
  body += "<table><tr><th>protocol</th><th>version</th><th>title</th><th>history</th>"
          "<th>latest audited verdicts</th></tr>\n";
  for (const auto &[id, versions] : by_id)
    for (const protocol_facts *p : versions)
      body += fmt::format("<tr><td>{}</td><td><a href=\"{}\"><code>{}</code></a></td><td>{}</td>"
                          "<td>{}</td><td>{}</td></tr>\n",
                          esc(id), page_name(p->hash), esc(p->hash.substr(0, 12)), esc(p->title),
                          esc(counts(*p)), latest_verdicts(*p));
  body += "</table>\n";
  if (!orphans.empty()) {
    body += "<h2>Report folders of no protocol in this store</h2>\n<table>";
    for (const report_facts *r : orphans)
      body += fmt::format("<tr><td><code>{}</code></td><td>{}</td></tr>\n", esc(r->rel),
                          status_badge(r->status, r->why) + " " + esc(r->why));
    body += "</table>\n";
  }
  return page("prereg history", body);
}

} // namespace prereg::site
