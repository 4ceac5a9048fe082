// The index page and the protocol pages.
#include "site/pages.hpp"

#include "site/pages_common.hpp"
#include "site/trends.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace prereg::site {
using namespace detail;

std::string page_name(const std::string &hash) { return "p-" + hash.substr(0, 16) + ".html"; }

std::map<std::string, std::vector<const protocol_facts *>>
versions_by_id(const std::map<std::string, protocol_facts> &protocols) {
  std::map<std::string, std::vector<const protocol_facts *>> by_id;
  for (const auto &[hash, p] : protocols)
    by_id[p.id].push_back(&p);
  for (auto &[id, versions] : by_id)
    std::sort(versions.begin(), versions.end(),
              [](const protocol_facts *a, const protocol_facts *b) {
                return std::tie(a->revision, a->frozen_at, a->hash) <
                       std::tie(b->revision, b->frozen_at, b->hash);
              });
  return by_id;
}

std::string revision_label(const protocol_facts &p,
                           const std::vector<const protocol_facts *> &versions) {
  const auto same = std::count_if(versions.begin(), versions.end(), [&](const protocol_facts *v) {
    return v->revision == p.revision;
  });
  if (same <= 1)
    return fmt::format("revision {}", p.revision);
  return fmt::format("revision {}, frozen {}", p.revision,
                     p.frozen_at.empty() ? "at an unknown time" : p.frozen_at);
}

namespace {

/// The report folder of run `run_id` among `p`'s reports, or null.
const report_facts *report_of(const protocol_facts &p, const std::string &run_id) {
  for (const report_facts *r : p.reports)
    if (r->run_id == run_id || r->rel.ends_with("/" + run_id))
      return r;
  return nullptr;
}

/// A report folder's name, linked to its page when it has one.
std::string folder_link(const report_facts &r, std::string_view reports_href) {
  const std::string url = report_url(reports_href, r);
  const std::string code = fmt::format("<code>{}</code>", esc(r.rel));
  return url.empty()
             ? code
             : fmt::format("<a href=\"{}\" title=\"open {}\">{}</a>", esc(url), esc(r.page), code);
}

std::string report_cells(const report_facts *r, std::string_view reports_href) {
  if (r == nullptr)
    return "<td class=\"muted\">no report folder</td><td></td>";
  const std::string why =
      r->status == "audited" ? "" : "<div class=\"why\">" + esc(r->why) + "</div>";
  return fmt::format("<td>{} {}{}</td><td><code>{}</code></td>", status_badge(r->status, r->why),
                     folder_link(*r, reports_href), why, esc(r->commit.substr(0, 12)));
}

std::string attempts_table(const protocol_facts &p, std::string_view reports_href) {
  std::string rows;
  std::set<const report_facts *> shown;
  for (const attempt_facts &a : p.attempts) {
    const report_facts *r = report_of(p, a.run_id);
    shown.insert(r);
    const char *cls = a.outcome == "completed" ? "ok" : a.outcome == "aborted" ? "bad" : "mid";
    rows += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td>"
                        "<td><span class=\"b {}\">{}</span> {}</td>{}</tr>\n",
                        a.attempt, esc(a.run_id), esc(a.started_at), esc(a.device), cls,
                        esc(a.outcome), esc(a.reason), report_cells(r, reports_href));
  }
  for (const report_facts *r : p.reports)
    if (!shown.contains(r))
      rows += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td>"
                          "<td class=\"muted\">{}</td>{}</tr>\n",
                          r->attempt ? std::to_string(r->attempt) : "", esc(r->run_id),
                          esc(r->started_at), esc(r->device),
                          r->merged ? "merged report" : "no run-start in this ledger",
                          report_cells(r, reports_href));
  if (rows.empty())
    return "<p class=\"muted\">Never run.</p>\n";
  return "<table><tr><th>attempt</th><th>run id</th><th>started</th><th>device</th>"
         "<th>outcome (ledger)</th><th>report</th><th>commit</th></tr>\n" +
         rows + "</table>\n";
}

/// Where a report stands among the runs, for a badge's tooltip.
std::string run_context(const report_facts &r) {
  const std::string which = r.merged        ? fmt::format("merged report {}", r.run_id)
                            : r.attempt > 0 ? fmt::format("attempt {}, run {}", r.attempt, r.run_id)
                                            : fmt::format("run {}", r.run_id);
  const std::string when = r.started_at.empty() ? "" : ", started " + r.started_at;
  const std::string note = r.status == "audited" ? "" : " (" + r.status + ")";
  return which + when + note;
}

/// The claim of prediction `id`: the report's, else the frozen protocol's.
std::string claim_of(const protocol_facts &p, const verdict_fact &v) {
  if (!v.claim.empty())
    return v.claim;
  for (const auto &[id, claim] : p.predictions)
    if (id == v.id)
      return claim;
  return "";
}

std::string verdict_grid(const protocol_facts &p, std::string_view reports_href) {
  std::vector<std::string> ids;
  std::map<std::string, std::string> claims(p.predictions.begin(), p.predictions.end());
  std::map<std::string, std::map<const report_facts *, verdict_fact>> by_id;
  for (const report_facts *r : p.reports)
    for (const verdict_fact &v : r->verdicts) {
      if (!by_id.contains(v.id))
        ids.push_back(v.id);
      by_id[v.id][r] = {v.id, v.verdict, claim_of(p, v)};
      claims.emplace(v.id, claim_of(p, v));
    }
  if (ids.empty())
    return "<p class=\"muted\">No verdicts yet.</p>\n";
  std::string out = "<table class=\"grid\"><tr><th>prediction and claim</th><th>verdict per "
                    "report, oldest first (each links to its report)</th></tr>\n";
  for (const std::string &id : ids) {
    out += fmt::format("<tr><th><code>{}</code><div class=\"claim\">{}</div></th><td>", esc(id),
                       esc(claims[id]));
    for (const report_facts *r : p.reports) {
      const auto it = by_id[id].find(r);
      if (it != by_id[id].end())
        out += verdict_badge(it->second, run_context(*r), report_url(reports_href, *r));
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

std::string latest_verdicts(const protocol_facts &p, std::string_view reports_href) {
  for (auto it = p.reports.rbegin(); it != p.reports.rend(); ++it)
    if ((*it)->status == "audited" && !(*it)->verdicts.empty()) {
      std::string out;
      for (const verdict_fact &v : (*it)->verdicts)
        out += verdict_badge({v.id, v.verdict, claim_of(p, v)}, run_context(**it),
                             report_url(reports_href, **it)) +
               " ";
      return out;
    }
  return "";
}

/// The other frozen versions of the protocol's id, each linked (this one named, not linked).
std::string revisions_nav(const protocol_facts &p,
                          const std::vector<const protocol_facts *> &versions) {
  if (versions.size() < 2)
    return "";
  std::string items;
  for (const protocol_facts *v : versions) {
    const std::string text =
        fmt::format("{} <code>{}</code>, frozen {}", esc(revision_label(*v, versions)),
                    esc(v->hash.substr(0, 12)), esc(v->frozen_at));
    items += v == &p ? fmt::format("<li class=\"here\">{} (this page)</li>", text)
                     : fmt::format("<li><a href=\"{}\">{}</a></li>", page_name(v->hash), text);
  }
  return fmt::format("<nav><p>{} frozen versions of <code>{}</code>:</p><ul class=\"revs\">{}"
                     "</ul></nav>\n",
                     versions.size(), esc(p.id), items);
}

} // namespace

std::string render_protocol(const protocol_facts &p,
                            const std::vector<const protocol_facts *> &versions,
                            std::string_view reports_href) {
  const std::vector<series> all = series_of(p);
  const std::string label = revision_label(p, versions);
  std::string body = fmt::format(
      "<p><a href=\"index.html\">all protocols</a></p>\n<h1>{} <span class=\"rev\">{}</span> "
      "<code>{}</code></h1>\n<p>{}</p>\n<p>protocol hash <code>{}</code>, frozen {}</p>\n{}"
      "<p>{}</p>\n",
      esc(p.id), esc(label), esc(p.hash.substr(0, 12)), esc(p.title), esc(p.hash), esc(p.frozen_at),
      revisions_nav(p, versions), esc(counts(p)));
  if (!p.problem.empty())
    body += fmt::format("<div class=\"banner\">The stored copy does not load: {}</div>\n",
                        esc(p.problem));
  body += "<h2>Attempts, in order</h2>\n" + attempts_table(p, reports_href);
  body += "<h2>Verdicts over time</h2>\n" + verdict_grid(p, reports_href);
  body += "<h2>Steps</h2>\n" + render_steps(all, reports_href);
  body += "<h2>Trends per cell (audited runs)</h2>\n" + render_charts(all, reports_href);
  return page(fmt::format("{} {} — prereg history", p.id, label), body);
}

namespace {

std::string id_rows(const std::string &id, const std::vector<const protocol_facts *> &versions,
                    std::string_view reports_href) {
  std::string rows;
  const protocol_facts *newest = *std::max_element(
      versions.begin(), versions.end(), [](const protocol_facts *a, const protocol_facts *b) {
        return std::tie(a->frozen_at, a->revision) < std::tie(b->frozen_at, b->revision);
      });
  for (const protocol_facts *p : versions) {
    const std::string head =
        rows.empty() ? fmt::format("<th class=\"id\" rowspan=\"{}\"><code>{}</code><div "
                                   "class=\"muted\">{} version{}</div></th>",
                                   versions.size(), esc(id), versions.size(),
                                   versions.size() == 1 ? "" : "s")
                     : "";
    rows += fmt::format(
        "<tr>{}<td>{}{}</td><td><a href=\"{}\"><code>{}</code></a></td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        head, esc(revision_label(*p, versions)),
        versions.size() > 1 && p == newest ? " <span class=\"muted\">(newest)</span>" : "",
        page_name(p->hash), esc(p->hash.substr(0, 12)), esc(p->title), esc(counts(*p)),
        latest_verdicts(*p, reports_href));
  }
  return "<tbody class=\"id\">\n" + rows + "</tbody>\n";
}

} // namespace

std::string render_index(const std::map<std::string, protocol_facts> &protocols,
                         const std::vector<const report_facts *> &orphans,
                         const std::string &ledger_problem, std::string_view reports_href,
                         const std::string &boards_section) {
  std::string body =
      fmt::format("<h1>prereg history</h1>\n<p>{} frozen protocols.</p>\n", protocols.size());
  if (!ledger_problem.empty())
    body += fmt::format("<div class=\"banner\">The ledger does not verify: {}</div>\n",
                        esc(ledger_problem));
  body += boards_section;
  body += "<table><thead><tr><th>protocol</th><th>revision</th><th>page</th><th>title</th>"
          "<th>history</th><th>latest audited verdicts</th></tr></thead>\n";
  for (const auto &[id, versions] : versions_by_id(protocols))
    body += id_rows(id, versions, reports_href);
  body += "</table>\n";
  if (!orphans.empty()) {
    body += "<h2>Report folders of no protocol in this store</h2>\n<table>";
    for (const report_facts *r : orphans)
      body += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", folder_link(*r, reports_href),
                          status_badge(r->status, r->why) + " " + esc(r->why));
    body += "</table>\n";
  }
  return page("prereg history", body);
}

} // namespace prereg::site
