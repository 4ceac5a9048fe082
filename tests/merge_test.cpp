// Tests of `prereg merge` on the fake backend: two shards merged and audited, the refusals
// (a missing shard naming its cells, a shard twice, a non-shard), atomic placement, tampering;
// shards of schema_version 7 (the device's state) merged beside one of version 5.
#include "fake_device.hpp"

#include "audit/audit.hpp"
#include "base/fs.hpp"
#include "report/render/escape.hpp"
#include "report/report_text.hpp"
#include "run/merge.hpp"
#include "run/run.hpp"

#include <doctest/doctest.h>

using namespace prereg;
using namespace prereg::testing;
namespace fs = std::filesystem;

namespace {

fs::path run_shard(temp_lab &lab, std::int64_t k, std::int64_t n) {
  run_options o = lab.options();
  o.shard = shard_spec{k, n};
  return run_protocol(o);
}

fs::path merge(temp_lab &lab, std::vector<fs::path> parts, merge_kind kind = merge_kind::shards) {
  const store s = lab.st();
  return merge_reports(s, {std::move(parts), kind, lab.out_dir}, resolve_trust({}, s), lab.key());
}

} // namespace

TEST_CASE("two shards merge into one report that audits clean") {
  temp_lab lab;
  (void)lab.freeze();
  const fs::path one = run_shard(lab, 1, 2);
  const fs::path two = run_shard(lab, 2, 2);
  const json r1 = read_report(one);
  CHECK(r1.at("shard") == json{{"index", 1}, {"count", 2}});
  REQUIRE(r1.at("cells").size() == 2); // both arms at rows 64
  for (const auto &c : r1.at("cells"))
    CHECK(c.at("rows") == 64);
  const store s = lab.st();
  CHECK(audit_report(one, s, resolve_trust({}, s)).passed());
  int shard_entries = 0;
  for (const auto &e : s.get_ledger().entries())
    if (e.value("shard", "") == "2/2")
      ++shard_entries;
  CHECK(shard_entries == 2); // run-start and run-complete

  SUBCASE("merged and audited") {
    const fs::path m = merge(lab, {two, one}); // any order
    CHECK(m.parent_path() == lab.out_dir / "fake_ln");
    CHECK(m.filename().string().starts_with("MERGE-"));
    const json r = read_report(m);
    REQUIRE(r.at("cells").size() == 4);
    CHECK(r.at("cells")[0].at("arm") == "unfused");
    CHECK(r.at("cells")[0].at("rows") == 64);
    CHECK(r.at("cells")[1].at("rows") == 128);
    CHECK(r.at("cells")[2].at("arm") == "fused");
    CHECK(r.at("cells")[0] == r1.at("cells")[0]); // copied through unchanged
    CHECK(r.at("parts")[0].at("shard").at("index") == 1);
    CHECK(fs::exists(m / "parts" / "fake_ln" / one.filename() / "report.dsse.json"));
    const audit_result a = audit_merged_report(m, s, resolve_trust({}, s), {});
    CHECK(a.passed());
    CHECK(a.checks.size() == 6);
    // Tampering with report.json fails the signature and the rebuild.
    std::string bytes = read_file(m / "report.json");
    const auto at = bytes.find("\"confirmed\"");
    const auto at2 = bytes.find("\"refuted\"");
    REQUIRE((at != std::string::npos || at2 != std::string::npos));
    if (at != std::string::npos)
      bytes.replace(at, 11, "\"refuted\"  ");
    else
      bytes.replace(at2, 9, "\"ok\"     ");
    write_file_atomic(m / "report.json", bytes);
    const audit_result bad = audit_merged_report(m, s, resolve_trust({}, s), {});
    CHECK(!bad.passed());
    CHECK(!bad.checks[0].passed);
  }
  SUBCASE("a missing shard is refused, naming its cells") {
    CHECK_THROWS_WITH((void)merge(lab, {one}),
                      doctest::Contains("shard(s) 2/2 missing, so 2 cell(s) are missing: unfused "
                                        "fwd 128x256, fused fwd 128x256"));
    try {
      (void)merge(lab, {one});
    } catch (const error &e) {
      CHECK(e.code() == exit_code::integrity);
    }
    // Nothing was written.
    for (const auto &e : fs::directory_iterator(lab.out_dir / "fake_ln"))
      CHECK(!e.path().filename().string().starts_with("MERGE"));
  }
  SUBCASE("a shard twice, or a complete report, is refused") {
    CHECK_THROWS_WITH((void)merge(lab, {one, one, two}), doctest::Contains("is given twice"));
    const fs::path full = lab.run();
    CHECK_THROWS_WITH((void)merge(lab, {one, full}), doctest::Contains("is not a shard"));
    CHECK_THROWS_WITH((void)merge(lab, {full}, merge_kind::replication),
                      doctest::Contains("declares no replication rule"));
  }
}

TEST_CASE("a version-7 shard 2 merges beside a version-5 shard 1: the merge is version 7") {
  temp_lab lab;
  (void)lab.freeze();
  fake_plants with_state; // a state reader (version 7) whose power cap held at sample 2
  with_state.states = [](const cell_key &, std::size_t i) {
    device_state_sample s;
    s.sm_mhz = i == 2 ? 1410 : 1980;
    s.mem_mhz = 3201;
    s.power_w = 450;
    s.temp_c = 55;
    s.reasons = i == 2 ? 0x4 : 0x0;
    return s;
  };
  const fs::path one = run_shard(lab, 1, 2); // no state reader: version 5
  run_options o2 = lab.options(with_state);
  o2.shard = shard_spec{2, 2};
  const fs::path two = run_protocol(o2);
  const json r2 = read_report(two);
  REQUIRE(read_report(one).at("schema_version") == 5);
  REQUIRE(r2.at("schema_version") == 7);
  const fs::path m = merge(lab, {two, one});
  const json r = read_report(m);
  CHECK(r.at("schema_version") == 7); // the highest of its parts', not shard 1's
  REQUIRE(r.at("cells").size() == 4);
  CHECK_FALSE(r.at("cells")[0].contains("states")); // shard 1's cell (rows 64), as it was
  CHECK(r.at("cells")[1] == r2.at("cells")[0]);     // shard 2's (rows 128): states copied through
  CHECK(r.at("cells")[1].contains("states"));
  int throttled = 0;
  for (const auto &d : r.at("defects"))
    throttled += d.at("code") == "throttled" ? 1 : 0;
  CHECK(throttled == 2); // both arms of shard 2
  const store s = lab.st();
  const audit_result a = audit_merged_report(m, s, resolve_trust({}, s), {});
  std::string failed;
  for (const auto &c : a.checks)
    if (!c.passed)
      failed += c.name + ": " + c.detail + "; ";
  CHECK_MESSAGE(a.passed(), failed);
  CHECK(read_file(m / "report.md").find("fused") != std::string::npos);
}

TEST_CASE("merged pages escape what they quote") {
  const json m = {{"kind", "shards"},
                  {"protocol", {{"hash", "ab"}, {"body", {{"id", "x"}, {"hypothesis", "<b>|"}}}}},
                  {"merge", {{"merge_id", "MERGE-1"}, {"merged_at", "t"}}},
                  {"parts", json::array()},
                  {"cells", json::array()},
                  {"predictions", json::array({{{"id", "P1"},
                                                {"verdict", "confirmed"},
                                                {"claim", "a < b & c"},
                                                {"expect", "a|b"},
                                                {"reason", "r"}}})}};
  const std::string html = render_merged_html(m);
  CHECK(html.find("a &lt; b &amp; c") != std::string::npos);
  CHECK(html.find("<b>|") == std::string::npos);
  const std::string md = render_merged_markdown(m);
  CHECK(md.find("a\\|b") != std::string::npos);
}

TEST_CASE("a hostile arm name is quoted on the merged page by the run page's escaping") {
  const std::string name = "a|b*c_d`e<f>g";
  report_document run;
  report_cell cell;
  cell.key = cell_key{name, pass_kind::fwd, 64, 128};
  cell.n = 3;
  cell.median_ms = 1.0;
  run.cells.push_back(cell);
  const json merged = {{"kind", "shards"},
                       {"protocol", {{"hash", "ab"}, {"body", {{"id", "x"}}}}},
                       {"merge", {{"merge_id", "MERGE-1"}, {"merged_at", "t"}}},
                       {"parts", json::array()},
                       {"predictions", json::array()},
                       {"cells", json::array({{{"arm", name},
                                               {"pass", "fwd"},
                                               {"rows", 64},
                                               {"cols", 128},
                                               {"n", 3},
                                               {"median_ms", 1.0},
                                               {"gbps", 2.0}}})}};
  // HTML: one escaping function on both pages.
  const std::string quoted_html = render::html(name);
  CHECK(quoted_html == "a|b*c_d`e&lt;f&gt;g");
  CHECK(render_html(run).find("<code>" + quoted_html + "</code>") != std::string::npos);
  CHECK(render_merged_html(merged).find("<td>" + quoted_html + "</td>") != std::string::npos);
  CHECK(render_merged_html(merged).find("<f>") == std::string::npos);
  // Markdown, renderer 1 (merges made before tool.renderer was recorded, such as the committed
  // one, whose page is audited byte for byte): cells quoted verbatim, only `|` escaped.
  const std::string quoted_md = render::md_verbatim(name);
  CHECK(quoted_md == "a\\|b*c_d`e<f>g");
  CHECK(render::md_code(name) == "`` " + quoted_md + " ``");
  CHECK(render_markdown(run).find("| " + render::md_code(name) + " |") != std::string::npos);
  CHECK(render_merged_markdown(merged).find("| " + quoted_md + " |") != std::string::npos);
  // Renderer 2 (what this build writes): every quoted text through the run page's md(), so the
  // name starts no emphasis, code span or tag.
  json v2 = merged;
  v2["tool"] = {{"renderer", merged_renderer_version}};
  CHECK(merged_renderer_version == 2);
  const std::string escaped = render::md(name);
  CHECK(escaped == "a\\|b\\*c_d\\`e\\<f\\>g");
  CHECK(render_merged_markdown(v2).find("| " + escaped + " |") != std::string::npos);
  CHECK(render_merged_markdown(v2).find("<f>") == std::string::npos);
  // An unknown layout is refused, not rendered as another.
  v2["tool"]["renderer"] = 3;
  CHECK_THROWS_WITH((void)render_merged_markdown(v2),
                    doctest::Contains("tool.renderer is 3; this build renders merged pages with "
                                      "renderers 1 to 2"));
}
