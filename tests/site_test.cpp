// The site's step and jump detection, its cache format and what its pages link and label
// (docs/site.md).
#include "site/history.hpp"
#include "site/pages.hpp"
#include "site/pages_common.hpp"
#include "site/site.hpp"
#include "site/steps.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

using namespace prereg::site;

namespace {

/// `n` values around `level` with a deterministic +-0.5% wiggle.
std::vector<double> flat(double level, int n, int phase = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i)
    v.push_back(level * (1 + 0.005 * std::sin(1.7 * (i + phase))));
  return v;
}

std::vector<double> join(std::vector<double> a, const std::vector<double> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

} // namespace

TEST_CASE("steps: one level shift of 25% is found where it starts") {
  const auto v = join(flat(1.0, 12), flat(1.25, 10, 3));
  const auto steps = detect_steps(v);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].at == 12);
  CHECK(steps[0].ratio() == doctest::Approx(1.25).epsilon(0.01));
}

TEST_CASE("steps: noise alone, or a shift below the 5% minimum effect, is no step") {
  CHECK(detect_steps(flat(2.0, 40)).empty());
  CHECK(detect_steps(join(flat(1.0, 15), flat(1.03, 15, 5))).empty());
  // the same 3% shift counts with a smaller minimum effect
  CHECK(detect_steps(join(flat(1.0, 15), flat(1.03, 15, 5)), 0.01).size() == 1);
}

TEST_CASE("steps: two steps, up then down; a single outlier is not a step") {
  const auto v = join(join(flat(1.0, 10), flat(1.5, 10, 2)), flat(1.0, 10, 4));
  const auto steps = detect_steps(v);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].at == 10);
  CHECK(steps[1].at == 20);
  CHECK(steps[1].ratio() < 1);
  auto spike = flat(1.0, 30);
  spike[15] = 3.0;
  for (const step &s : detect_steps(spike))
    CHECK((s.at == 15 || s.at == 16)); // at most the spike itself, never a level change elsewhere
}

TEST_CASE("steps: fewer than 3 points or a non-positive value give none") {
  CHECK(detect_steps({1.0, 2.0}).empty());
  CHECK(detect_steps({1.0, 1.0, 0.0, 2.0, 2.0, 2.0}).empty());
  CHECK(detect_steps({1.0, 1.0, NAN, 2.0, 2.0, 2.0}).empty());
}

TEST_CASE("site cache: facts round-trip; another format is not read") {
  report_facts f;
  f.rel = "id/run";
  f.status = "audit failed";
  f.why = "statistics: differs";
  f.protocol_hash = "ab";
  f.run_id = "run";
  f.attempt = 3;
  f.verdicts = {{"P1", "confirmed", "fused is faster"}};
  f.medians = {{"fused fwd 1x2", 0.5, 0.45, 0.625}};
  f.page = "report.html"; // looked up on every build, never cached
  const auto back = facts_from_json(to_json(f));
  REQUIRE(back);
  CHECK(back->why == f.why);
  CHECK(back->attempt == 3);
  CHECK(back->verdicts == f.verdicts);
  CHECK(back->medians == f.medians);
  CHECK(back->page.empty());
  auto other = to_json(f);
  other["format"] = 99;
  CHECK_FALSE(facts_from_json(other));
}

TEST_CASE("jumps: a change of 5% or more between two runs whose IQRs do not overlap") {
  // 57% from run 1 to run 2 (the two runs): a jump, although no step needs 3 points.
  const auto j = detect_jumps({1.0, 1.57}, {0.95, 1.5}, {1.05, 1.62});
  REQUIRE(j.size() == 1);
  CHECK(j[0].at == 1);
  CHECK(j[0].ratio() == doctest::Approx(1.57));
  CHECK(detect_steps({1.0, 1.57}).empty());
  // the same change inside overlapping IQRs (a noisy cell) is not one, nor is 4% apart
  CHECK(detect_jumps({1.0, 1.57}, {0.6, 1.0}, {1.6, 2.0}).empty());
  CHECK(detect_jumps({1.0, 1.04}, {0.99, 1.035}, {1.001, 1.045}).empty());
  // faster counts too; a non-positive median never
  CHECK(detect_jumps({2.0, 1.0, 0.0}, {1.9, 0.9, 0.0}, {2.1, 1.1, 0.0}).size() == 1);
}

namespace {

/// A protocol of `id` at revision `rev` with two audited reports of one cell, the second 57%
/// slower, and one prediction.
struct fixture {
  report_facts a, b;
  protocol_facts p;
  fixture(const std::string &hash, std::int64_t rev, const std::string &frozen) {
    p.hash = hash;
    p.id = "l2norm_cpu";
    p.title = "row-wise L2 norm";
    p.frozen_at = frozen;
    p.revision = rev;
    p.predictions = {{"P1", "numpy is at least as fast as naive"}};
    int k = 0;
    for (report_facts *r : {&a, &b}) {
      ++k;
      r->rel = "l2norm_cpu/2026010" + std::to_string(k) + "T000000Z-run" + std::to_string(k);
      r->run_id = r->rel.substr(r->rel.find('/') + 1);
      r->status = "audited";
      r->started_at = "2026-01-0" + std::to_string(k) + "T00:00:00.000000Z";
      r->attempt = k;
      r->page = "report.html";
      r->verdicts = {{"P1", k == 1 ? "confirmed" : "refuted", ""}};
      const double m = k == 1 ? 1.0 : 1.57;
      r->medians = {{"naive fwd 64x256", m, m * 0.97, m * 1.03}};
      p.reports.push_back(r);
    }
  }
};

} // namespace

TEST_CASE("site pages: revisions grouped and labelled, badges with id and claim, links") {
  fixture one("aa11" + std::string(60, '0'), 1, "2026-01-01T00:00:00Z");
  fixture two("bb22" + std::string(60, '0'), 2, "2026-01-03T00:00:00Z");
  std::map<std::string, protocol_facts> ps{{one.p.hash, one.p}, {two.p.hash, two.p}};
  // the map's copies point at the fixtures' reports, which outlive the pages
  const auto versions = versions_by_id(ps);
  REQUIRE(versions.at("l2norm_cpu").size() == 2);
  CHECK(versions.at("l2norm_cpu")[0]->revision == 1);
  CHECK(revision_label(*versions.at("l2norm_cpu")[1], versions.at("l2norm_cpu")) == "revision 2");

  const std::string page = render_protocol(ps.at(two.p.hash), versions.at("l2norm_cpu"), "../r/");
  // the revision in the title and heading; the other revision linked, this one named
  CHECK(page.find("<title>l2norm_cpu revision 2 ") != std::string::npos);
  CHECK(page.find("<span class=\"rev\">revision 2</span>") != std::string::npos);
  CHECK(page.find("<a href=\"" + page_name(one.p.hash) + "\">revision 1 ") != std::string::npos);
  CHECK(page.find("<li class=\"here\">revision 2 ") != std::string::npos);
  // every attempt's folder links its report.html, relative to the site
  CHECK(page.find("<a href=\"../r/l2norm_cpu/20260101T000000Z-run1/report.html\"") !=
        std::string::npos);
  // badges: the prediction id visible, the claim and verdict in the tooltip and hidden text
  CHECK(page.find("title=\"P1 (numpy is at least as fast as naive): refuted \u2014 attempt 2, "
                  "run 20260102T000000Z-run2, started 2026-01-02T00:00:00.000000Z\">P1 "
                  "\u2717<span class=\"vh\"> (numpy is at least as fast as naive): refuted") !=
        std::string::npos);
  CHECK(page.find(">c</span>") == std::string::npos);
  // the chart: the IQR band, a point per run with its date on hover, the jump marked
  CHECK(page.find("<polygon class=\"iqr\"") != std::string::npos);
  CHECK(page.find("<title>run 2 of 2, 2026-01-02T00:00:00.000000Z \u00b7 "
                  "20260102T000000Z-run2 \u00b7 median 1.57 ms") != std::string::npos);
  CHECK(page.find("<g class=\"jump\">") != std::string::npos);
  CHECK(page.find("<td>jump</td>") != std::string::npos);
  CHECK(page.find("+57.0%") != std::string::npos);

  // two versions with one revision number are told apart by their freeze time
  ps.at(two.p.hash).revision = 1;
  const auto same = versions_by_id(ps);
  const auto &vs = same.at("l2norm_cpu");
  CHECK(revision_label(*vs[0], vs) == "revision 1, frozen 2026-01-01T00:00:00Z");
  CHECK(revision_label(*vs[1], vs) == "revision 1, frozen 2026-01-03T00:00:00Z");

  // the index: one group per id, each version labelled, the latest verdicts linked
  const std::string index = render_index(ps, {}, "", "../r/");
  CHECK(index.find("<th class=\"id\" rowspan=\"2\"><code>l2norm_cpu</code>") != std::string::npos);
  CHECK(index.find("revision 1, frozen 2026-01-03T00:00:00Z <span class=\"muted\">(newest)") !=
        std::string::npos);
  CHECK(index.find("<a class=\"b v bad\" href=\"../r/l2norm_cpu/20260102T000000Z-run2/"
                   "report.html\"") != std::string::npos);
}

TEST_CASE("site links: the reports folder relative to the site, percent-encoded") {
  using prereg::site::detail::url_path;
  CHECK(url_path("a b/c%d/\u00e9") == "a%20b/c%25d/%C3%A9");
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "prereg-site-href";
  fs::create_directories(root / "public" / "site");
  fs::create_directories(root / "my reports");
  site_options o;
  o.out_dir = root / "public" / "site";
  o.reports_root = root / "my reports";
  CHECK(reports_href(o) == "../../my%20reports/");
  o.reports_root = root / "public" / "site" / ".." / "site";
  CHECK(reports_href(o).empty());
  o.reports_url = "https://example.invalid/reports";
  CHECK(reports_href(o) == "https://example.invalid/reports/");
  fs::remove_all(root);
}
