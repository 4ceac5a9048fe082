// Tests of report.md and report.html rendered from hand-made sample reports (tests/data/reports).
#include "report/report_text.hpp"

#include "analysis/cell_stats.hpp"
#include "report/report.hpp"
#include "spec/roofs.hpp"

#include "base/fs.hpp"
#include "base/json.hpp"
#include "prereg/error.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using prereg::json;

namespace {

const fs::path data_dir = fs::path(PREREG_TEST_DATA) / "reports";

json sample(const std::string &name) {
  std::ifstream in(data_dir / name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

/// The H200 sample as a schema_version 8 report: roofs like an H200's (read 4700 GB/s, write
/// 4400 GB/s, an fp32 GEMM ceiling of 51 TFLOP/s) and every cell re-derived against them by
/// the analysis itself (a rendering fixture for the roofline chart).
json with_roofs(const json &sample_report) {
  using namespace prereg;
  report_document doc = report_from_json(sample_report, "sample");
  const protocol proto = protocol_from_json(doc.protocol.body, "sample");
  raw_run raw = report_to_raw(doc);
  roofs_record r;
  r.read = {"modelled read sweep", std::uint64_t{1} << 30, {0.2286, 0.2284, 0.2290}, 0.0};
  r.write = {"modelled write fill", std::uint64_t{1} << 30, {0.2441, 0.2440, 0.2446}, 0.0};
  compute_roof c;
  c.method = "modelled GEMM";
  c.shape = "m=n=k=4096";
  c.flops = 2ull * 4096 * 4096 * 4096;
  c.samples_ms = {2.695, 2.700, 2.694};
  r.compute["fp32"] = c;
  derive_roofs(r);
  raw.instrument.roofs = r;
  const auto stats = compute_cell_statistics(proto, raw);
  doc.schema_version = report_schema_version_roofs;
  doc.tool.renderer = report_renderer_version;
  doc.instrument = raw.instrument;
  doc.cells.clear();
  for (std::size_t i = 0; i < raw.cells.size(); ++i)
    doc.cells.push_back(to_report_cell(raw.cells[i], stats[i], doc.schema_version));
  return to_json(doc);
}

std::size_t count(const std::string &hay, const std::string &needle) {
  std::size_t n = 0;
  for (std::size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1))
    ++n;
  return n;
}

// The <svg class="chart" ...>...</svg> elements of a page, in order.
std::vector<std::string> charts(const std::string &page) {
  std::vector<std::string> out;
  for (std::size_t at = page.find("<svg class=\"chart\""); at != std::string::npos;
       at = page.find("<svg class=\"chart\"", at + 1)) {
    const std::size_t end = page.find("</svg>", at);
    REQUIRE(end != std::string::npos);
    out.push_back(page.substr(at, end - at));
  }
  return out;
}

std::string attribute(const std::string &element, const std::string &name) {
  const std::string key = " " + name + "=\"";
  const std::size_t at = element.find(key);
  if (at == std::string::npos)
    return {};
  const std::size_t start = at + key.size();
  return element.substr(start, element.find('"', start) - start);
}

// A markdown table row: the line that starts with "| `arm` |" after `heading`.
std::string table_row(const std::string &md, const std::string &heading, const std::string &arm) {
  const std::size_t h = md.find(heading);
  REQUIRE(h != std::string::npos);
  const std::size_t at = md.find("| `" + arm + "` |", h);
  REQUIRE(at != std::string::npos);
  return md.substr(at, md.find('\n', at) - at);
}

json sample_with_outside_arms(int renderer);

} // namespace

TEST_CASE("markdown of a CUDA report: header, tables, operating point, verdicts, defects") {
  const json r = sample("cuda_layernorm.json");
  const std::string md = prereg::render_markdown(r);

  SUBCASE("environment and instrument header") {
    CHECK(md.find("# Fused vs unfused LayerNorm at batch 1 on H200\n") == 0);
    CHECK(md.find("| device | NVIDIA H200 |") != std::string::npos);
    CHECK(md.find("| driver | 550.90.07 |") != std::string::npos);
    CHECK(md.find("| runtime | 12.4 |") != std::string::npos);
    CHECK(md.find("| L2 cache | 50.0 MiB (52428800 bytes) |") != std::string::npos);
    CHECK(md.find("| copy ceiling | 4013 GB/s") != std::string::npos);
    CHECK(md.find("| launch floor | 4.10 µs") != std::string::npos);
    CHECK(md.find("| timer resolution | 32.0 ns |") != std::string::npos);
    CHECK(md.find("| cache flush | reads 200.0 MiB (read-sweep); last-level cache 50.0 MiB |") !=
          std::string::npos);
    CHECK(md.find("prereg 0.1.0, commit f6fb239c0ffee1234567890abcdef0123456789a") !=
          std::string::npos);
    CHECK(md.find("attempt **3**") != std::string::npos);
    CHECK(md.find("| attempt | 3 (this run's number") != std::string::npos);
    CHECK(md.find(r["run"]["run_id"].get<std::string>()) != std::string::npos);
  }
  SUBCASE("one table per pass and cols, the operating point's column marked") {
    CHECK(md.find("## Results: fwd\n") != std::string::npos);
    CHECK(md.find("## Results: fwd+bwd\n") != std::string::npos);
    CHECK(md.find("### fwd, cols = 1024 (operating point: 128 rows)") != std::string::npos);
    CHECK(md.find("### fwd+bwd, cols = 4096") != std::string::npos);
    // Time, % of ceiling and peak tables for both passes at cols 1024; none at cols 4096.
    CHECK(count(md, "| arm | **128** ◀ operating point | 1024 | 8192 | 65536 |") == 6);
    CHECK(count(md, "| arm | 128 | 1024 | 8192 | 65536 |") == 6);
    CHECK(count(md, "\n| --- | ---: | ---: | ---: | ---: |\n") == 12);
  }
  SUBCASE("cells: median (IQR) in sensible units, flags, missing and empty cells") {
    const std::string fwd = table_row(md, "### fwd, cols = 1024", "unfused");
    const auto &c0 = r["cells"][0];
    REQUIRE(c0["arm"] == "unfused");
    REQUIRE(c0["rows"] == 128);
    CHECK(fwd == "| `unfused` | 13.3 (0.2) µs | 17.0 (0.9) µs ⚠ | 38.2 (0.8) µs | 216 (4) µs |");
    const std::string unstable = table_row(md, "### fwd, cols = 1024", "fused");
    CHECK(unstable.find("⚠") != std::string::npos);
    CHECK(md.find("- `fused` at 128 rows: unstable (n = 30)") != std::string::npos);
    CHECK(md.find("- `unfused` at 1024 rows: drift (n = 30)") != std::string::npos);
    // The cell that ran out of memory has no samples; the skipped one never ran.
    const std::string oom = table_row(md, "### fwd+bwd, cols = 4096", "fused_graph");
    CHECK(oom.find("no samples ⚠ |") != std::string::npos);
    CHECK(md.find("at 65536 rows: error, no-samples (n = 0) — cudaErrorMemoryAllocation") !=
          std::string::npos);
    const std::string skipped = table_row(md, "### fwd+bwd, cols = 4096", "unfused");
    CHECK(skipped.find("| not run |") != std::string::npos);
    // Slow cells switch to milliseconds.
    CHECK(table_row(md, "### fwd+bwd, cols = 4096", "fused").find("1.77 (0.03) ms") !=
          std::string::npos);
    // % of ceiling with bound, and peak MB.
    CHECK(md.find("| `fused` | 5.1% (launch) ⚠ | 27.6% (launch) |") != std::string::npos);
    CHECK(md.find("78.0% (bandwidth) |") != std::string::npos);
    CHECK(md.find("| `unfused` | 0.525 | 4.20 ⚠ | 33.62 | 269.0 |") != std::string::npos);
    CHECK(md.find("| `fused_graph` | 0.002 ⚠ | 0.016 | 0.131 | — ⚠ |") != std::string::npos);
  }
  SUBCASE("predictions with claim, criterion, verdict and per-cell p") {
    CHECK(md.find("### P1 — refuted") != std::string::npos);
    CHECK(md.find("### P2 — confirmed") != std::string::npos);
    CHECK(md.find("### P3 — inconclusive") != std::string::npos);
    CHECK(md.find("- **Criterion:** `fused > unfused` at rows 128; cols 1024; pass fwd+bwd") !=
          std::string::npos);
    CHECK(md.find("| fwd+bwd 128×1024 | 0.0000 |") != std::string::npos);
    CHECK(md.find("| fwd 65536×4096 | 1.0000 |") != std::string::npos);
    CHECK(md.find("| fwd 128×1024 | — (not evaluated) |") != std::string::npos);
    CHECK(md.find("| `P1` | **refuted** | `fused > unfused` |") != std::string::npos);
    // Text from the json cannot open an HTML tag or a link in the markdown.
    CHECK(md.find("unfused one (\\<launch overhead\\> & co.)") != std::string::npos);
    CHECK_FALSE(std::regex_search(md, std::regex(R"([^\\]<launch)")));
  }
  SUBCASE("defects, deviations and correctness with their evidence") {
    CHECK(md.find("## Defects (4)") != std::string::npos);
    CHECK(md.find("| `unstable-cell` | fused fwd 128×1024 |") != std::string::npos);
    CHECK(md.find("unstable_iqr_ratio = 0.5") != std::string::npos);
    CHECK(md.find("| `device-contention` | whole run |") != std::string::npos);
    CHECK(md.find("other_processes = \\[{name=python3, pid=48211, used_bytes=1073741824}\\]") !=
          std::string::npos);
    CHECK(md.find("## Deviations (3)") != std::string::npos);
    CHECK(md.find("| `cell-skipped` | unfused fwd+bwd 65536×4096 |") != std::string::npos);
    CHECK(md.find("47 check(s) against the float64 reference, 1 failed (tolerance rtol 1e-05, "
                  "atol 1e-05)") != std::string::npos);
    CHECK(md.find("| `fused_graph` | fwd+bwd | 8 | **1** | 3.10e-04 | 2.20e-03 |") !=
          std::string::npos);
    CHECK(md.find("- fused_graph fwd+bwd 128×4096: max abs error 3.10e-04, max rel error "
                  "2.20e-03 — dgamma\\[517\\]") != std::string::npos);
  }
  SUBCASE("deterministic: same json, same bytes") {
    CHECK(prereg::render_markdown(r) == md);
    CHECK(prereg::render_markdown(json::parse(r.dump())) == md);
  }
}

TEST_CASE("markdown of a CPU report without operating point, defects or deviations") {
  const json r = sample("cpu_rmsnorm.json");
  const std::string md = prereg::render_markdown(r);
  CHECK(md.find("◀") == std::string::npos);
  CHECK(md.find("| device | AMD EPYC 7B13 64-Core Processor |") != std::string::npos);
  CHECK(md.find("| other processes | unknown (not observable here) |") != std::string::npos);
  CHECK(md.find("| SM clock at start | not read |") != std::string::npos);
  CHECK(md.find("| arm | 64 | 256 | 1024 |") != std::string::npos);
  CHECK(md.find("### vec-wins — confirmed") != std::string::npos);
  CHECK(md.find("The instrument reported no defects.") != std::string::npos);
  CHECK(md.find("The run followed the protocol.") != std::string::npos);
  CHECK(md.find("6 check(s) against the float64 reference, 0 failed") != std::string::npos);
  CHECK(md.find("⚠") == std::string::npos);
}

TEST_CASE("a prereg: 2 body (axes in place of shapes) renders like its prereg: 1 form") {
  const json v1 = sample("cpu_rmsnorm.json");
  json v2 = v1;
  json &body = v2["protocol"]["body"];
  body["prereg"] = 2;
  body["axes"] = body["shapes"];
  body.erase("shapes");
  const std::string md = prereg::render_markdown(v2);
  CHECK(md == prereg::render_markdown(v1));
  CHECK(md.find("| arm | 64 | 256 | 1024 |") != std::string::npos);
  CHECK(prereg::render_html(v2) == prereg::render_html(v1));
}

TEST_CASE("html of a CUDA report: self-contained, one series per arm per chart") {
  const json r = sample("cuda_layernorm.json");
  const std::string page = prereg::render_html(r);

  SUBCASE("fetches nothing") {
    CHECK(page.find("<!DOCTYPE html>") == 0);
    CHECK(page.find("Content-Security-Policy\" content=\"default-src 'none'") != std::string::npos);
    const std::regex fetch(R"((src|href|xlink:href)\s*=|url\s*\(|@import|<script|<link|<iframe)",
                           std::regex::icase);
    CHECK_FALSE(std::regex_search(page, fetch));
    CHECK(page.find("http:") == std::string::npos);
    CHECK(page.find("https:") == std::string::npos);
  }
  SUBCASE("charts: three per pass and cols, one series group per arm") {
    const auto svgs = charts(page);
    REQUIRE(svgs.size() == 12);
    for (const auto &svg : svgs) {
      CAPTURE(attribute(svg, "id"));
      CHECK(attribute(svg, "data-arms") == "3");
      CHECK(count(svg, "<g class=\"series\"") == 3);
      for (const char *arm : {"unfused", "fused", "fused_graph"})
        CHECK(count(svg, std::string("<g class=\"series\" data-arm=\"") + arm + "\"") == 1);
      CHECK(count(svg, "<g class=\"legend\">") == 1);
    }
    CHECK(attribute(svgs[0], "data-kind") == "time");
    CHECK(attribute(svgs[1], "data-kind") == "pct");
    CHECK(attribute(svgs[2], "data-kind") == "peak");
    // The operating point is banded in the three charts of each pass at cols 1024 only.
    CHECK(count(page, "<g class=\"op\">") == 6);
    for (const auto &svg : svgs)
      CHECK((svg.find("<g class=\"op\">") != std::string::npos) ==
            (attribute(svg, "data-cols") == "1024"));
    // The % chart draws the ceiling.
    CHECK(svgs[1].find(">ceiling</text>") != std::string::npos);
  }
  SUBCASE("unstable cells are hollow with a tooltip; the empty cell draws no marker") {
    CHECK(count(page, "<g class=\"pt unstable\">") == 3);
    CHECK(page.find("<title>fused · fwd 128×1024 · median 5.21 µs, IQR") != std::string::npos);
    CHECK(page.find("flags: unstable</title>") != std::string::npos);
    const auto svgs = charts(page);
    const std::string &time_bwd_4096 = svgs[9];
    REQUIRE(attribute(time_bwd_4096, "id") == "chart-time-fwdbwd-4096");
    const std::size_t g = time_bwd_4096.find("data-arm=\"fused_graph\"");
    const std::string graph_series = time_bwd_4096.substr(g, time_bwd_4096.find("</g>\n", g) - g);
    CHECK(count(graph_series, "<g class=\"pt") == 3); // 4 rows, the 65536 cell has no samples
    CHECK(count(time_bwd_4096.substr(time_bwd_4096.find("data-arm=\"unfused\"")),
                "<g class=\"pt") >= 3);
  }
  SUBCASE("verdict badges, tables and escaping") {
    CHECK(page.find("<span class=\"badge refuted\">P1: refuted</span>") != std::string::npos);
    CHECK(page.find("<span class=\"badge confirmed\">P2: confirmed</span>") != std::string::npos);
    CHECK(page.find("<span class=\"badge inconclusive\">P3: inconclusive</span>") !=
          std::string::npos);
    CHECK(page.find("<span class=\"badge warn\">4 defect(s)</span>") != std::string::npos);
    CHECK(page.find("(&lt;launch overhead&gt; &amp; co.)") != std::string::npos);
    CHECK(page.find("<launch") == std::string::npos);
    CHECK(count(page, "<th scope=\"col\" class=\"op num\"><strong>128</strong><span "
                      "class=\"suffix\"> ◀ operating point</span></th>") == 6);
    CHECK(page.find("<td class=\"flagged unstable op num\" title=\"unstable\">5.21 (4.02) µs<span "
                    "class=\"suffix\"> ⚠</span></td>") != std::string::npos);
    CHECK(page.find("@media print") != std::string::npos);
  }
  SUBCASE("deterministic") {
    CHECK(prereg::render_html(r) == page);
    CHECK(prereg::render_html(json::parse(r.dump())) == page);
  }
}

TEST_CASE("html of a CPU report: all-zero peak memory on a linear axis, no band") {
  const json r = sample("cpu_rmsnorm.json");
  const std::string page = prereg::render_html(r);
  const auto svgs = charts(page);
  REQUIRE(svgs.size() == 3);
  for (const auto &svg : svgs)
    CHECK(count(svg, "<g class=\"series\"") == 2);
  CHECK(page.find("<g class=\"op\">") == std::string::npos);
  CHECK(svgs[2].find("peak MB</text>") != std::string::npos);
  CHECK(svgs[2].find(">1</text>") != std::string::npos); // all-zero data: a 0..1 linear axis
  CHECK_FALSE(std::regex_search(svgs[2], std::regex(R"(>[0-9.]+e-[0-9]+<)")));
  CHECK(page.find("<span class=\"badge info\">0 defect(s)</span>") != std::string::npos);
}

TEST_CASE("hostile or sparse report.json renders safely") {
  SUBCASE("text from the json is escaped everywhere") {
    json r = sample("cpu_rmsnorm.json");
    const std::string evil = "<script>alert(\"x\")</script>";
    r["protocol"]["body"]["title"] = evil;
    r["protocol"]["body"]["arms"][0]["id"] = evil;
    for (auto &c : r["cells"])
      if (c["arm"] == "scalar")
        c["arm"] = evil;
    r["environment"]["device_name"] = "<img src=x onerror=alert(1)>";
    const std::string page = prereg::render_html(r);
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("<img") == std::string::npos);
    CHECK(page.find("data-arm=\"&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;\"") !=
          std::string::npos);
    const std::string md = prereg::render_markdown(r);
    CHECK_FALSE(std::regex_search(md, std::regex(R"((^|[^\\`])<(script|img))")));
    CHECK(md.find("\\<script\\>") != std::string::npos);
  }
  SUBCASE("null numbers and missing sections") {
    json r = sample("cpu_rmsnorm.json");
    for (auto &c : r["cells"])
      for (const char *k : {"median_ms", "q1_ms", "q3_ms", "iqr_ms", "pct_ceiling", "gbps"})
        c[k] = nullptr;
    r["instrument"]["ceiling_gbps"] = nullptr;
    r["environment"] = json::object();
    const std::string md = prereg::render_markdown(r);
    CHECK(count(md, "no samples") == 6); // 2 arms x 3 rows
    CHECK(md.find("| copy ceiling | not measured |") != std::string::npos);
    const std::string page = prereg::render_html(r);
    for (const auto &svg : charts(page))
      CHECK(count(svg, "<g class=\"series\"") == 2);
    CHECK(page.find("(no data)") != std::string::npos);
    CHECK_FALSE(std::regex_search(page, std::regex(R"(\b(nan|inf)\b)", std::regex::icase)));
  }
  SUBCASE("a report that does not parse is invalid input naming the JSON path") {
    const auto fails_with = [](const json &r, const std::string &message) {
      try {
        (void)prereg::render_html(r);
        FAIL("expected an error");
      } catch (const prereg::error &e) {
        CHECK(e.code() == prereg::exit_code::invalid);
        CHECK(std::string(e.what()) == message);
        CHECK(e.where() == "report.json");
      }
    };
    fails_with(json::array(), "report is not an object");
    fails_with(json::object(), "schema_version is missing");
    json bad = sample("cpu_rmsnorm.json");
    bad["cells"][1]["samples_ms"][0] = "fast";
    fails_with(bad, "cells[1].samples_ms[0] is not a number");
  }
}

// With PREREG_REPORT_SAMPLES set to a folder, writes the samples' report.md/html there for
// tests/browser/check_report.sh (run by .ci/run) and for looking at them by eye.
TEST_CASE("sample pages for the browser check") {
  const char *dir = std::getenv("PREREG_REPORT_SAMPLES");
  // Each sample as renderer 1 drew it, as renderer 2 draws it, (CPU) as a prereg try, with
  // outside arms as renderer 3 draws them, (CUDA) as renderer 4 draws it, a CPU run over
  // named axes b, n, d (schema_version 6) as it was written, and the CUDA sample against
  // modelled roofs (schema_version 8: the roofline chart).
  for (const std::string name : {"cuda_layernorm", "cpu_rmsnorm", "cuda_layernorm_r2",
                                 "cpu_rmsnorm_r2", "cpu_rmsnorm_exploratory", "cpu_outside_r3",
                                 "cuda_layernorm_r4", "cpu_rotary_named", "cuda_layernorm_roofs"}) {
    json r = name == "cpu_outside_r3" ? sample_with_outside_arms(3)
                                      : sample(name.substr(0, name.find('_', 5)) + ".json");
    if (name.ends_with("_roofs")) { // schema_version 8: the roofline section
      r = with_roofs(r);
      CHECK(prereg::render_html(r).find("data-kind=\"roofline\"") != std::string::npos);
    }
    if (name.ends_with("_r2") || name.ends_with("_exploratory"))
      r["tool"]["renderer"] = 2;
    if (name.ends_with("_r4")) // with a correctness failure, shown as excluded
      r["tool"]["renderer"] = 4;
    if (name.ends_with("_exploratory"))
      r["exploratory"] = true;
    const std::string page = prereg::render_html(r);
    CHECK(page.size() > 10000);
    if (dir == nullptr)
      continue;
    fs::create_directories(dir);
    for (const auto &[ext, body] :
         {std::pair{".html", page}, {".md", prereg::render_markdown(r)}}) {
      const fs::path out = fs::path(dir) / (std::string(name) + ext);
      std::ofstream(out, std::ios::binary) << body;
      CHECK(fs::file_size(out) == body.size());
    }
  }
}

TEST_CASE("report.md lists per-arm options when a prereg: 2 protocol sets them") {
  const std::string dir =
      std::string(PREREG_SOURCE_DIR) + "/reports/bench_softmax_fp32/20261201T102203Z-1618ad1c5ad2";
  const prereg::json report =
      prereg::parse_json_strict(prereg::read_file(dir + "/report.json"), "report.json");
  const std::string md = prereg::render_markdown(report);
  CHECK(md.find("| arm | kernel | launch | repeat | options |") != std::string::npos);
  CHECK(md.find("| `fused_rpb2` | `softmax.fused` | stream | 1 | rows_per_block 2 |") !=
        std::string::npos);
  CHECK(md.find("| `unfused` | `softmax.unfused` | stream | 1 | - |") != std::string::npos);
  // A prereg: 1 report keeps its four columns (its page regenerates byte for byte).
  const std::string v1 = std::string(PREREG_SOURCE_DIR) +
                         "/reports/cpu_smoke/20261129T123015Z-e6cd3057d2be/report.json";
  const std::string md1 =
      prereg::render_markdown(prereg::parse_json_strict(prereg::read_file(v1), "report.json"));
  CHECK(md1.find("| arm | kernel | launch | repeat |\n") != std::string::npos);
}

TEST_CASE("every committed report's pages are what its renderer makes (renderer 1 kept)") {
  std::size_t n = 0;
  for (const auto &protocol : fs::directory_iterator(fs::path(PREREG_SOURCE_DIR) / "reports"))
    for (const auto &run : protocol.is_directory() ? fs::directory_iterator(protocol.path())
                                                   : fs::directory_iterator()) {
      if (!fs::exists(run.path() / "report.json"))
        continue;
      // A merged report (docs/scale-out.md) has its own pages, checked by its audit.
      if (prereg::read_file(run.path() / "report.json").find("\"merge_version\"") !=
          std::string::npos)
        continue;
      CAPTURE(run.path().string());
      const json r =
          prereg::parse_json_strict(prereg::read_file(run.path() / "report.json"), "report.json");
      CHECK(prereg::render_markdown(r) == prereg::read_file(run.path() / "report.md"));
      CHECK(prereg::render_html(r) == prereg::read_file(run.path() / "report.html"));
      ++n;
    }
  CHECK(n >= 9);
}

namespace {

/// The CUDA sample as renderer `renderer` draws it, with a sub-unit IQR at a 216 µs median and
/// one zero peak among positive ones.
json sample_with_details(int renderer) {
  json r = sample("cuda_layernorm.json");
  if (renderer > 1)
    r["tool"]["renderer"] = renderer;
  for (auto &c : r["cells"]) {
    if (c["arm"] == "unfused" && c["pass"] == "fwd" && c["rows"] == 65536 && c["cols"] == 1024)
      c["iqr_ms"] = 0.0004;
    if (c["arm"] == "unfused" && c["pass"] == "fwd" && c["rows"] == 128 && c["cols"] == 1024)
      c["peak_bytes"] = 0;
  }
  return r;
}

} // namespace

TEST_CASE("renderer 2: summary first, environment last, and the details readers tripped on") {
  const json r1 = sample_with_details(1);
  const json r2 = sample_with_details(2);
  const std::string md1 = prereg::render_markdown(r1);
  const std::string md2 = prereg::render_markdown(r2);
  const std::string html1 = prereg::render_html(r1);
  const std::string html2 = prereg::render_html(r2);

  SUBCASE("an IQR keeps a significant digit") {
    CHECK(table_row(md1, "## Results: fwd", "unfused").find("216 (0) µs") != std::string::npos);
    CHECK(table_row(md2, "## Results: fwd", "unfused").find("216 (0.4) µs") != std::string::npos);
  }
  SUBCASE("one time unit per row") {
    const std::string heading = "### fwd+bwd, cols = 4096";
    const std::string row1 = table_row(md1, heading, "fused");
    const std::string row2 = table_row(md2, heading, "fused");
    CHECK(row1.find("µs") != std::string::npos);
    CHECK(row1.find("1.77 (0.03) ms") != std::string::npos);
    CHECK(row2.find("1770 (28) µs") != std::string::npos);
    CHECK(row2.find(" ms") == std::string::npos);
  }
  SUBCASE("the correctness tolerance says what it is relative to") {
    CHECK(md1.find("max|ref|") == std::string::npos);
    CHECK(md2.find("atol + rtol · max\\|ref\\|") != std::string::npos);
    CHECK(html2.find("relative to that output&#39;s largest reference magnitude") !=
          std::string::npos);
  }
  SUBCASE("a zero peak is not drawn at the floor of a log axis") {
    const auto peak_chart = [](const std::string &page) {
      for (const auto &c : charts(page))
        if (attribute(c, "id") == "chart-peak-fwd-1024")
          return c;
      FAIL("no peak chart");
      return std::string();
    };
    CHECK(peak_chart(html1).find("0 MB at") == std::string::npos);
    CHECK(peak_chart(html2).find("unfused (0 MB at 1 shape, not on the log axis)") !=
          std::string::npos);
  }
  SUBCASE("summary above the fold, environment below") {
    CHECK(md1.find("## Summary") == std::string::npos);
    const auto summary = md2.find("## Summary");
    REQUIRE(summary != std::string::npos);
    CHECK(summary < md2.find("## Results: fwd"));
    CHECK(md2.find("## Environment and instrument") > md2.find("## Correctness"));
    CHECK(md2.find("Speedup over `unfused`") != std::string::npos);
    CHECK(table_row(md2, "## Summary", "fused_graph").find("fastest") != std::string::npos);
    CHECK(html2.find("<main data-renderer=\"2\">") != std::string::npos);
    const auto s = html2.find("<section id=\"summary\">");
    REQUIRE(s != std::string::npos);
    CHECK(s < html2.find("<section id=\"environment\">"));
    CHECK(html2.find("<section id=\"correctness\">") < html2.find("<section id=\"environment\">"));
    std::size_t speedups = 0;
    for (const auto &c : charts(html2))
      if (attribute(c, "data-kind") == "speedup") {
        ++speedups;
        CHECK(attribute(c, "id").rfind("summary-speedup-", 0) == 0);
        CHECK(count(c, "class=\"winner\"") == 4); // one fastest arm per rows
        CHECK(count(c, "class=\"series\"") == 3);
      }
    CHECK(speedups == 2); // fwd and fwd+bwd at the operating point's cols
    CHECK(html1.find("id=\"summary") == std::string::npos);
  }
}

namespace {

/// The CPU sample with its two arms made outside arms, as renderer `renderer` draws it: `scalar`
/// a numpy Python arm (its memory not measured, peak_bytes 0) and `vector` a plugin (its memory
/// billed through prereg's allocator), each with its freeze record and environment entry.
json sample_with_outside_arms(int renderer) {
  json r = sample("cpu_rmsnorm.json");
  if (renderer > 1)
    r["tool"]["renderer"] = renderer;
  json &body = r["protocol"]["body"];
  body["prereg"] = 2;
  for (json &a : body["arms"]) {
    a.erase("kernel");
    a["options"] = json::object();
  }
  body["arms"][0]["python"] = "../arms/np_rmsnorm.py";
  body["arms"][0]["function"] = "rmsnorm_np";
  body["arms"][1]["plugin"] = "../arms/librms.so";
  body["arms"][1]["name"] = "rms_vector";
  const std::string py_sha(64, 'a'), so_sha = "0123456789abcdef" + std::string(48, 'b');
  r["protocol"]["freeze"]["kernels"] = {{"scalar",
                                         {{"python", "../arms/np_rmsnorm.py"},
                                          {"entry", "rmsnorm_np"},
                                          {"file", "examples/arms/np_rmsnorm.py"},
                                          {"sha256", py_sha}}},
                                        {"vector",
                                         {{"plugin", "../arms/librms.so"},
                                          {"entry", "rms_vector"},
                                          {"file", "examples/arms/librms.so"},
                                          {"sha256", so_sha}}}};
  r["environment"]["outside_arms"] = {
      {"scalar",
       {{"kind", "python"},
        {"file", "/src/examples/arms/np_rmsnorm.py"},
        {"function", "rmsnorm_np"},
        {"sha256", py_sha},
        {"memory_billing", "not measured (host allocations of a Python arm are not tracked)"}}},
      {"vector",
       {{"kind", "plugin"},
        {"file", "/src/examples/arms/librms.so"},
        {"name", "rms_vector"},
        {"sha256", so_sha},
        {"abi_version", 1},
        {"memory_billing", "prereg's allocator (prereg_cell.allocator)"}}}};
  for (json &c : r["cells"])
    if (c["arm"] == "vector")
      c["peak_bytes"] = 2048000;
  return r;
}

/// The <svg> of the chart with id `id` on `page`.
std::string chart_by_id(const std::string &page, const std::string &id) {
  for (const auto &c : charts(page))
    if (attribute(c, "id") == id)
      return c;
  FAIL("no chart " << id);
  return {};
}

} // namespace

TEST_CASE("renderer 3: outside arms by file, entry and source hash; unmeasured memory says so") {
  const json r2 = sample_with_outside_arms(2);
  const json r3 = sample_with_outside_arms(3);
  const std::string md2 = prereg::render_markdown(r2);
  const std::string md3 = prereg::render_markdown(r3);
  const std::string html2 = prereg::render_html(r2);
  const std::string html3 = prereg::render_html(r3);

  SUBCASE("the arms table names the file, the entry and the hash") {
    CHECK(md3.find("| arm | code | entry | source SHA-256 | launch | repeat |\n") !=
          std::string::npos);
    CHECK(md3.find("| `scalar` | python: `examples/arms/np_rmsnorm.py` | function: `rmsnorm_np` | "
                   "`aaaaaaaaaaaaaaaa` | stream | 1 |") != std::string::npos);
    CHECK(md3.find("| `vector` | plugin: `examples/arms/librms.so` | name: `rms_vector` | "
                   "`0123456789abcdef` | stream | 1 |") != std::string::npos);
    CHECK(html3.find("<td>python: <code>examples/arms/np_rmsnorm.py</code></td>"
                     "<td>function: <code>rmsnorm_np</code></td>"
                     "<td title=\"" +
                     std::string(64, 'a') + "\"><code>aaaaaaaaaaaaaaaa</code></td>") !=
          std::string::npos);
    CHECK(html3.find("<main data-renderer=\"3\">") != std::string::npos);
  }
  SUBCASE("a built-in kernel arm shows its kernel and its build's source hash") {
    const json cpu = [] {
      json r = sample("cpu_rmsnorm.json");
      r["tool"]["renderer"] = 3;
      return r;
    }();
    const std::string md = prereg::render_markdown(cpu);
    CHECK(md.find("| `scalar` | `rmsnorm.scalar` | - | `bbafb6bf33a97f88` | stream | 1 |") !=
          std::string::npos);
  }
  SUBCASE("memory that was not measured reads \"not measured\", never 0") {
    const std::string row3 = table_row(md3, "Peak memory", "scalar");
    CHECK(row3 == "| `scalar` | not measured | not measured | not measured |");
    CHECK(table_row(md3, "Peak memory", "vector") == "| `vector` | 2.05 | 2.05 | 2.05 |");
    CHECK(html3.find(">not measured</td>") != std::string::npos);
    const std::string peak3 = chart_by_id(html3, "chart-peak-fwd-512");
    CHECK(peak3.find("scalar (peak memory not measured)") != std::string::npos);
    CHECK(peak3.find("scalar · fwd") == std::string::npos); // no marker drawn at 0
    CHECK(peak3.find("vector · fwd") != std::string::npos);
  }
  SUBCASE("renderer 2 draws the same report as it always did") {
    CHECK(md2.find("| arm | kernel | launch | repeat |\n") != std::string::npos);
    CHECK(md2.find("| `scalar` | `?` | stream | 1 |") != std::string::npos);
    CHECK(md2.find("| `vector` | `?` | stream | 1 |") != std::string::npos);
    CHECK(md2.find("function: `rmsnorm_np`") == std::string::npos);
    CHECK(table_row(md2, "Peak memory", "scalar") == "| `scalar` | 0 | 0 | 0 |");
    CHECK(md2.find("not measured |") == std::string::npos);
    CHECK(chart_by_id(html2, "chart-peak-fwd-512").find("peak memory not measured") ==
          std::string::npos);
  }
}

TEST_CASE("renderer 4: a cell excluded from verdicts is never fastest, has no speedup, is not "
          "drawn") {
  json r = sample_with_details(4);
  for (auto &c : r["cells"])
    if (c["arm"] == "fused_graph" && c["pass"] == "fwd" && c["cols"] == 1024 && c["rows"] == 65536)
      c["pct_ceiling"] = 6231.0; // a side stream's reading
  r["defects"].push_back(
      {{"code", "off-window-work"},
       {"cell", {{"arm", "fused_graph"}, {"pass", "fwd"}, {"rows", 8192}, {"cols", 1024}}},
       {"message", "planted"},
       {"evidence", json::object()}});
  const std::string md = prereg::render_markdown(r);
  const std::string page = prereg::render_html(r);
  const std::string graph = table_row(md, "## Summary", "fused_graph");
  CHECK(graph.find("excluded: work left pending off the window") != std::string::npos);
  CHECK(graph.find("excluded: 6231% of the ceiling") != std::string::npos);
  CHECK(graph.find("fastest") != std::string::npos); // at 128 and 1024 rows, where it is clean
  // At 8192 rows the fastest clean arm is fused; at 128 rows fused is unstable: its ratio
  // carries the mark and it is not fastest.
  const std::string fused = table_row(md, "## Summary", "fused");
  CHECK(fused.find("fastest") != std::string::npos);
  CHECK(fused.find("x ⚠") != std::string::npos);
  CHECK(md.find("of the arms neither excluded nor flagged ⚠") != std::string::npos);
  CHECK(md.find("- `fused_graph` at fwd 8192×1024: work left pending off the window") !=
        std::string::npos);
  CHECK(md.find("- `fused_graph` at fwd 65536×1024: 6231% of the ceiling") != std::string::npos);
  CHECK(page.find("<main data-renderer=\"4\">") != std::string::npos);
  CHECK(page.find("<ul class=\"excluded\">") != std::string::npos);
  std::size_t noted = 0;
  for (const auto &c : charts(page))
    if (attribute(c, "data-pass") == "fwd" && attribute(c, "data-cols") == "1024" &&
        attribute(c, "data-kind") != "peak") {
      CHECK(c.find("fused_graph (excluded from verdicts at 2 shapes: not drawn)") !=
            std::string::npos);
      ++noted;
    }
  CHECK(noted >= 3); // time, % of ceiling and speedup
  SUBCASE("renderer 3 draws the same report as it always did") {
    r["tool"]["renderer"] = 3;
    const std::string md3 = prereg::render_markdown(r);
    CHECK(md3.find("excluded:") == std::string::npos);
    CHECK(md3.find("Excluded from every verdict") == std::string::npos);
    CHECK(table_row(md3, "## Summary", "fused_graph").find("fastest") != std::string::npos);
  }
}

TEST_CASE("the pages of a report over named axes: a block per d, a column per (b, n)") {
  const json r = sample("cpu_rotary.json"); // examples/operations/rotary_cpu.yaml, run on a CPU
  const std::string md = prereg::render_markdown(r);
  const std::string page = prereg::render_html(r);
  CHECK(md.find("\n### fwd, d = 64\n") != std::string::npos);
  CHECK(md.find("\n### fwd, d = 128 (operating point: b=4 n=256)\n") != std::string::npos);
  CHECK(count(md, "| arm | b=1 n=64 | b=1 n=256 | b=4 n=64 | **b=4 n=256** ◀ operating point |") ==
        3); // time, % of the ceiling, peak memory at d = 128
  CHECK(md.find("| shapes | b 1, 4 × n 64, 256 × d 64, 128 |") != std::string::npos);
  CHECK(md.find("| operating point | b=4 n=256 d=128 |") != std::string::npos);
  CHECK(md.find("Speedup over `eager` (its median / the arm's), fwd, d 128;") != std::string::npos);
  CHECK(md.find("at b 4; n 256; d 128; pass fwd") != std::string::npos);
  CHECK(md.find("| fwd b=4 n=256 d=128 |") != std::string::npos);
  CHECK(md.find("rows") == std::string::npos); // nothing speaks of rows and cols
  CHECK(md.find("cols") == std::string::npos);
  const auto svgs = charts(page);
  REQUIRE(svgs.size() == 8); // summary: time, speedup; per d: time, % of ceiling, peak
  for (const auto &svg : svgs) {
    CHECK(svg.find("rows (log scale") == std::string::npos);
    CHECK(count(svg, "class=\"alabel\">b, n (d = ") == 1);
    CHECK(count(svg, ">b=4 n=256</text>") == 1); // the x labels are the shapes
  }
  CHECK(
      svgs[0].find("<title id=\"summary-time-fwd-128-t\">Time per step · fwd · d = 128</title>") !=
      std::string::npos);
  CHECK(page.find("One x position per shape") != std::string::npos);
  CHECK(page.find("Every pass and d is under Results.") != std::string::npos);
}

TEST_CASE("the pages of an operation of one named axis: one block, a column per extent") {
  json r = sample("cpu_rotary.json");
  // The same report cut to one axis n: the cells at b = 1, d = 64, keyed by n alone.
  const auto cut = [](json &list, const char *member) {
    json kept = json::array();
    for (json item : list) {
      json &key = member == nullptr ? item : item[member];
      if (!key.is_object())
        continue;
      const json &shape = key["shape"];
      if (shape[0]["extent"] != 1 || shape[2]["extent"] != 64)
        continue;
      key["shape"] = json::array({shape[1]});
      kept.push_back(item);
    }
    list = kept;
  };
  cut(r["cells"], nullptr);
  cut(r["correctness"], nullptr);
  cut(r["defects"], "cell");
  r["predictions"] = json::array();
  json &body = r["protocol"]["body"];
  body["predictions"] = json::array();
  body["axes"] = json::parse(R"({"n": [64, 256]})");
  body["operating_point"] = json::parse(R"({"n": 256})");
  r["protocol"]["freeze"].erase("operation");
  REQUIRE(r["cells"].size() == 4);
  const std::string md = prereg::render_markdown(r);
  CHECK(md.find("| arm | n=64 | **n=256** ◀ operating point |") != std::string::npos);
  CHECK(md.find("### fwd (operating point: n=256)\n") != std::string::npos);
  CHECK(md.find("| shapes | n 64, 256 |") != std::string::npos);
  const std::string page = prereg::render_html(r);
  CHECK(page.find("class=\"alabel\">n</text>") != std::string::npos);
  CHECK(page.find("Time per step · fwd</title>") != std::string::npos);
}

TEST_CASE("a report whose cells name different axes still renders (the audit fails it)") {
  for (const char *odd : {R"([{"axis": "q", "extent": 3}])",
                          R"([{"axis": "q", "extent": 3}, {"axis": "b", "extent": 1},
                              {"axis": "n", "extent": 64}, {"axis": "d", "extent": 64}])"})
    for (const std::size_t at : {std::size_t{0}, std::size_t{5}}) {
      json r = sample("cpu_rotary.json");
      r["cells"][at]["shape"] = json::parse(odd);
      std::string md, page;
      CHECK_NOTHROW(md = prereg::render_markdown(r));
      CHECK_NOTHROW(page = prereg::render_html(r));
      CHECK(md.find("## Results: fwd") != std::string::npos);
      CHECK(page.find("</html>") != std::string::npos);
    }
}
