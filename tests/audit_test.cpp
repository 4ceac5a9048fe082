// The audit's tamper suite: a fresh report passes every check; each tampering fails exactly the
// checks that should catch it, and deleting a record never turns a FAIL into a PASS.
#include "fake_device.hpp"

#include "analysis/cell_stats.hpp"
#include "audit/audit.hpp"
#include "base/fs.hpp"
#include "crypto/crypto.hpp"
#include "crypto/signed_json.hpp"
#include "report/report.hpp"
#include "report/report_text.hpp"
#include "store/ledger.hpp"

#include <doctest/doctest.h>

#include <sstream>

using namespace prereg;
using namespace prereg::testing;
namespace fs = std::filesystem;

namespace {

using names = std::vector<std::string>;

/// "a, b, c": readable in a failed CHECK.
std::string list(const names &n) {
  std::string out;
  for (const auto &s : n)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// The audit of `dir`; every call also checks that the audit against a ledger read by the caller
/// (prepare_ledger, `prereg site`'s path: one reading shared by many audits) gives the same
/// checks, details and history as the audit that reads it itself.
audit_result audit(const temp_lab &lab, const fs::path &dir,
                   const std::vector<public_key> &trusted = {}) {
  audit_result live = audit_report(dir, lab.st(), trusted);
  trust_root t;
  if (trusted.empty()) {
    t = resolve_trust({}, lab.st());
  } else {
    t.keys = trusted;
    t.source = "--trust";
  }
  const audit_result once = audit_report(dir, lab.st(), t, {}, prepare_ledger(lab.st(), t));
  CHECK(render_audit_json(once) == render_audit_json(live));
  return live;
}

/// Writes `report` as report.json and a fresh envelope signed by `key`.
void resign(const fs::path &dir, const json &report, const signing_key &key) {
  const std::string bytes = canonical_json(report);
  write_file_atomic(dir / "report.json", bytes);
  write_file_atomic(dir / "report.dsse.json", make_envelope(bytes, key));
  // Whoever re-signs can re-render too; a report.json that no longer parses keeps its pages.
  try {
    const report_document doc = report_from_json(report, "report.json");
    write_file_atomic(dir / "report.md", render_markdown(doc));
    write_file_atomic(dir / "report.html", render_html(doc));
  } catch (const error &) {
  }
}

/// The cells[] entry of `arm` at `rows`.
json &cell_of(json &report, const std::string &arm, std::int64_t rows) {
  for (auto &c : report.at("cells"))
    if (c.at("arm") == arm && c.at("rows") == rows)
      return c;
  throw std::logic_error("no such cell");
}

/// The cell JSON a consistent forger would write for `c` with new samples.
json recompute_cell(const json &report, const json &c) {
  const protocol proto = protocol_from_json(report.at("protocol").at("body"), "body");
  cell_record rec;
  rec.key = {c.at("arm").get<std::string>(), pass_kind::fwd, c.at("rows").get<std::int64_t>(),
             c.at("cols").get<std::int64_t>()};
  rec.samples_ms = c.at("samples_ms").get<std::vector<double>>();
  rec.peak_bytes = c.at("peak_bytes").get<std::uint64_t>();
  if (c.at("clock_mhz").is_number())
    rec.clock_mhz = c.at("clock_mhz").get<double>();
  rec.harness_bytes_in_window = c.at("harness_bytes_in_window").get<std::uint64_t>();
  instrument_record in = fake_plants::default_instrument();
  const json &measured = report.at("instrument"); // what the run measured on the fake
  in.ceiling_gbps = measured.at("ceiling_gbps").get<double>();
  in.launch_floor_ms = measured.at("launch_floor_ms").get<double>();
  in.timer_resolution_ms = measured.at("timer_resolution_ms").get<double>();
  const auto stats = compute_cell_statistics(rec, proto, in, {});
  return to_json(to_report_cell(rec, stats));
}

/// Rewrites the store's ledger without the entries `drop` selects, re-chained and re-signed.
void rewrite_ledger(const temp_lab &lab, const std::function<bool(const json &)> &drop) {
  ledger l = lab.st().get_ledger();
  const auto entries = l.entries();
  write_file_atomic(l.path(), "");
  const signing_key key = lab.key();
  for (auto e : entries) {
    if (drop(e))
      continue;
    for (const char *k : {"seq", "time", "prev", "signer", "signature"})
      e.erase(k);
    l.append(e, key);
  }
}

/// Rewrites the store's ledger as `change` leaves its entries (stripped of seq, time, prev,
/// signer and signature), re-chained and re-signed with the lab's key.
void replant_ledger(const temp_lab &lab, const std::function<void(std::vector<json> &)> &change) {
  ledger l = lab.st().get_ledger();
  std::vector<json> entries = l.entries();
  for (auto &e : entries)
    for (const char *k : {"seq", "time", "prev", "signer", "signature"})
      e.erase(k);
  change(entries);
  write_file_atomic(l.path(), "");
  const signing_key key = lab.key();
  for (const auto &e : entries)
    l.append(e, key);
}

/// The index of the first entry of `event` for `run_id`.
std::size_t index_of(const std::vector<json> &entries, const std::string &event,
                     const std::string &run_id) {
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].value("event", "") == event && entries[i].value("run_id", "") == run_id)
      return i;
  throw std::logic_error("no such entry");
}

std::string detail_of(const audit_result &r, const std::string &name) {
  for (const auto &c : r.checks)
    if (c.name == name)
      return c.detail;
  return "(no such check)";
}

} // namespace

TEST_CASE("a fresh report passes every check, in the fixed order") {
  temp_lab lab;
  lab.freeze();
  const fs::path dir = lab.run();
  const audit_result r = audit(lab, dir);

  names order;
  for (const auto &c : r.checks)
    order.push_back(c.name);
  CHECK(order == names{"envelope", "payload", "protocol", "freeze", "statistics", "verdicts",
                       "defects", "pages", "isolation", "ledger", "history"});
  for (const auto &c : r.checks)
    CHECK_MESSAGE(c.passed, c.name << ": " << c.detail);
  CHECK(r.passed());
  CHECK(r.exit() == exit_code::ok);
  CHECK(r.failed().empty());
  CHECK(r.history.rfind("run 1 of 1; run 1 completed ", 0) == 0);
  CHECK(r.history.find("(this report)") != std::string::npos);

  SUBCASE("text: one PASS line per check, then the verdict line") {
    std::istringstream text(render_audit_text(r));
    std::vector<std::string> lines;
    for (std::string line; std::getline(text, line);)
      lines.push_back(line);
    REQUIRE(lines.size() == 13);
    for (std::size_t i = 0; i < 11; ++i)
      CHECK(lines[i].rfind("PASS " + order[i] + ": ", 0) == 0);
    CHECK(lines[11].rfind("trust: signer(s) " + lab.key().fingerprint() + "; NOT PINNED", 0) == 0);
    CHECK(lines[12].rfind("audit PASSED: all 11 checks pass", 0) == 0);
  }
  SUBCASE("json: the checks for CI") {
    const json j = parse_json_strict(render_audit_json(r), "audit.json");
    CHECK(j.at("passed") == true);
    CHECK(j.at("exit_code") == 0);
    REQUIRE(j.at("checks").size() == 11);
    CHECK(j.at("checks")[4].at("name") == "statistics");
    CHECK(j.at("checks")[4].at("passed") == true);
    CHECK(j.at("history") == r.history);
  }
  SUBCASE("a report with planted defects of every derivable kind also passes") {
    fake_plants plants;
    plants.samples = [](const cell_key &k, std::int64_t n) {
      if (k.arm == "unfused" && k.rows == 64)
        return drifting_samples(0.2, n);
      if (k.arm == "fused" && k.rows == 128)
        return unstable_samples(0.2, n);
      return fake_device::default_samples(k, n);
    };
    plants.instrument.timer_resolution_ms = 0.01;
    plants.instrument.ceiling_gbps = 1.0; // fused 64 reads about 134%
    plants.peak_bytes = [](const cell_key &k) -> std::uint64_t {
      return k.arm == "unfused" && k.rows == 128 ? 0 : 4096;
    };
    plants.instrument.flush_bytes = plants.instrument.llc_bytes;
    plants.failing_arms = {"unfused"};
    plants.other_processes = json::array({{{"pid", 7}}});
    plants.clock_mhz = [](const cell_key &k) { return k.rows == 64 ? 1000.0 : 3000.0; };
    plants.harness_bytes_in_window = [](const cell_key &k) -> std::uint64_t {
      return k.arm == "fused" ? 512 : 0;
    };
    const fs::path planted = lab.run(plants);
    const json report = read_report(planted);
    std::set<std::string> codes;
    for (const auto &d : report.at("defects"))
      codes.insert(d.at("code").get<std::string>());
    CHECK(codes == std::set<std::string>{"above-ceiling", "unstable-cell", "harness-allocation",
                                         "zero-peak-memory", "timer-resolution", "clock-throttle",
                                         "device-contention", "drift", "flush-too-small",
                                         "correctness-failure"});
    const audit_result a = audit(lab, planted);
    for (const auto &c : a.checks)
      CHECK_MESSAGE(c.passed, c.name << ": " << c.detail);
    CHECK(a.history.rfind("run 2 of 2;", 0) == 0);
  }
}

TEST_CASE("tampering fails the audit with the right checks named") {
  temp_lab lab;
  lab.freeze();
  fake_plants plants;
  // a derivable defect (drift), a report-derivable one (flush-too-small) and a harness
  // allocation whose only record besides the cell flag is its defect
  plants.samples = [](const cell_key &k, std::int64_t n) {
    return k.arm == "unfused" && k.rows == 64 ? drifting_samples(0.2, n)
                                              : fake_device::default_samples(k, n);
  };
  plants.instrument.flush_bytes = plants.instrument.llc_bytes;
  plants.harness_bytes_in_window = [](const cell_key &k) -> std::uint64_t {
    return k.arm == "fused" && k.rows == 64 ? 256 : 0;
  };
  const fs::path dir = lab.run(plants);
  REQUIRE(audit(lab, dir).passed());
  json report = read_report(dir);
  const signing_key key = lab.key();
  std::vector<public_key> trusted;
  names expected;

  SUBCASE("one byte of report.json changed") {
    std::string bytes = read_file(dir / "report.json");
    const auto at = bytes.find("\"name\":\"prereg\"");
    REQUIRE(at != std::string::npos);
    bytes[at + 13] = 'G'; // prereg -> prereG
    write_file_atomic(dir / "report.json", bytes);
    expected = {"payload", "pages", "ledger"};
  }
  SUBCASE("report.json made invalid") {
    std::string bytes = read_file(dir / "report.json");
    bytes.back() = ',';
    write_file_atomic(dir / "report.json", bytes);
    expected = {"payload", "protocol", "freeze",    "statistics", "verdicts",
                "defects", "pages",    "isolation", "ledger",     "history"};
  }
  SUBCASE("report.md edited to say confirmed (issue 16 item 8)") {
    std::string md = read_file(dir / "report.md");
    const auto at = md.find("refuted");
    if (at != std::string::npos)
      md.replace(at, 7, "confirmed");
    else
      md += "P9 confirmed\n";
    write_file_atomic(dir / "report.md", md);
    expected = {"pages"};
  }
  SUBCASE("report.html deleted") {
    fs::remove(dir / "report.html");
    expected = {"pages"};
  }
  SUBCASE("a renderer this build does not have") {
    report["tool"]["renderer"] = report_renderer_version + 1;
    resign(dir, report, key);
    expected = {"pages", "ledger"};
  }
  SUBCASE("a sample changed, re-signed with an untrusted key") {
    auto &s = cell_of(report, "fused", 64).at("samples_ms");
    s[3] = s[3].get<double>() * 1.05;
    resign(dir, report, signing_key::generate());
    expected = {"envelope", "statistics", "ledger"};
  }
  SUBCASE("a sample changed, re-signed with the trusted key") {
    auto &s = cell_of(report, "fused", 64).at("samples_ms");
    s[3] = s[3].get<double>() * 1.05;
    resign(dir, report, key);
    expected = {"statistics", "ledger"};
  }
  SUBCASE("a sample changed with its statistics recomputed, re-signed: the ledger catches it") {
    json &c = cell_of(report, "fused", 128);
    c.at("samples_ms")[3] = c.at("samples_ms")[3].get<double>() * 1.05;
    const json forged = recompute_cell(report, c);
    REQUIRE(forged.at("mean_ms") != c.at("mean_ms"));
    c = forged;
    resign(dir, report, key);
    expected = {"ledger"};
  }
  SUBCASE("a phase lengthened: the phases no longer add up to the wall time") {
    REQUIRE(report.contains("phases"));
    json &timing = report.at("phases").at("list").at(4);
    REQUIRE(timing.at("name") == "timing");
    timing.at("ms") = timing.at("ms").get<double>() + 1000.0;
    resign(dir, report, key);
    expected = {"statistics", "ledger"};
  }
  SUBCASE("the wall time shortened below its phases") {
    json &wall = report.at("phases").at("wall_ms");
    wall = std::max(0.0, wall.get<double>() - 60.0);
    resign(dir, report, key);
    expected = {"statistics", "ledger"};
  }
  SUBCASE("a median changed") {
    json &c = cell_of(report, "unfused", 128);
    c.at("median_ms") = c.at("median_ms").get<double>() * 0.5;
    resign(dir, report, key);
    expected = {"statistics", "ledger"};
  }
  SUBCASE("a verdict changed") {
    report.at("predictions")[0].at("verdict") = "refuted";
    resign(dir, report, key);
    expected = {"verdicts", "ledger"};
  }
  SUBCASE("a p changed") {
    report.at("predictions")[0].at("cells")[0].at("p") = 0.5;
    resign(dir, report, key);
    expected = {"verdicts", "ledger"};
  }
  SUBCASE("the ceiling changed") {
    report.at("instrument").at("ceiling_gbps") = 2000;
    resign(dir, report, key);
    expected = {"statistics", "ledger"};
  }
  SUBCASE("a reused copy ceiling added, in a run whose protocol does not allow reuse") {
    const json &in = report.at("instrument");
    report.at("schema_version") = report_schema_version_ceiling;
    report.at("instrument")["ceiling_reused"] =
        sign_record({{"cache", "prereg copy ceiling"},
                     {"identity", json::object()},
                     {"measured_at", report.at("run").at("started_at")},
                     {"source", "run forged"},
                     {"ceiling_bytes", in.at("ceiling_bytes")},
                     {"flush_bytes", in.at("flush_bytes")},
                     {"flush_method", in.at("flush_method")},
                     {"ceiling_gbps", in.at("ceiling_gbps")},
                     {"ceiling_samples_gbps", in.at("ceiling_samples_gbps")},
                     {"signer", key.fingerprint()}},
                    key);
    resign(dir, report, key); // (its pages re-rendered: they show the reused ceiling)
    expected = {"statistics", "ledger"};
  }
  SUBCASE("the attempt number changed") {
    report.at("attempt") = 2;
    resign(dir, report, key);
    expected = {"ledger", "history"};
  }
  SUBCASE("a derivable defect deleted") {
    auto &d = report.at("defects");
    const auto before = d.size();
    d.erase(
        std::remove_if(d.begin(), d.end(), [](const json &x) { return x.at("code") == "drift"; }),
        d.end());
    REQUIRE(d.size() == before - 1);
    resign(dir, report, key);
    expected = {"defects", "ledger"};
  }
  SUBCASE("a defect of the report's own records deleted (flush-too-small)") {
    auto &d = report.at("defects");
    d.erase(std::remove_if(d.begin(), d.end(),
                           [](const json &x) { return x.at("code") == "flush-too-small"; }),
            d.end());
    resign(dir, report, key);
    expected = {"defects", "ledger"};
  }
  SUBCASE("a harness-allocation defect deleted: the cell's harness_bytes_in_window recomputes it") {
    auto &d = report.at("defects");
    d.erase(std::remove_if(d.begin(), d.end(),
                           [](const json &x) { return x.at("code") == "harness-allocation"; }),
            d.end());
    resign(dir, report, key);
    expected = {"defects", "ledger"};
  }
  SUBCASE("a cell's harness_bytes_in_window zeroed: its flag and defect no longer recompute") {
    cell_of(report, "fused", 64).at("harness_bytes_in_window") = 0;
    resign(dir, report, key);
    expected = {"statistics", "defects", "ledger"};
  }
  SUBCASE("a cell's clock_mhz removed: the cell does not parse") {
    cell_of(report, "fused", 64).erase("clock_mhz");
    resign(dir, report, key);
    expected = {"statistics", "verdicts", "defects", "pages", "ledger"};
  }
  SUBCASE("an unknown member added to a cell: the cell does not parse") {
    cell_of(report, "fused", 64)["note"] = "hand-edited";
    resign(dir, report, key);
    expected = {"statistics", "verdicts", "defects", "pages", "ledger"};
  }
  SUBCASE("an unknown top-level member added") {
    report["note"] = "hand-edited";
    resign(dir, report, key);
    expected = {"payload", "ledger"};
  }
  SUBCASE("a schema_version newer than any this build reads") {
    report.at("schema_version") = report_schema_version_max + 1;
    resign(dir, report, key);
    // (run.isolation is read by its version: the freeze check's run.started_at and the
    // isolation check fail with it)
    expected = {"payload", "freeze", "statistics", "verdicts",
                "defects", "pages",  "isolation",  "ledger"};
  }
  SUBCASE("the defects array deleted") {
    report.erase("defects");
    resign(dir, report, key);
    expected = {"defects", "pages", "ledger"};
  }
  SUBCASE("a derivable defect invented") {
    json fake;
    for (const auto &d : report.at("defects"))
      if (d.at("code") == "drift")
        fake = d;
    REQUIRE(fake.is_object());
    fake.at("cell").at("arm") = "fused";
    report.at("defects").push_back(fake);
    resign(dir, report, key);
    expected = {"defects", "ledger"};
  }
  SUBCASE("a cell's samples_ms deleted") {
    cell_of(report, "fused", 128).erase("samples_ms");
    resign(dir, report, key);
    expected = {"statistics", "verdicts", "defects", "pages", "ledger"};
  }
  SUBCASE("a whole cell deleted (with its drift defect still in the report)") {
    auto &cells = report.at("cells");
    cells.erase(cells.begin()); // unfused 64
    resign(dir, report, key);
    expected = {"statistics", "verdicts", "defects", "ledger"};
  }
  SUBCASE("the protocol body changed") {
    report.at("protocol").at("body").at("title") = "Another title";
    resign(dir, report, key);
    expected = {"protocol", "ledger"};
  }
  SUBCASE("a prediction changed in the body and in predictions[] alike") {
    report.at("protocol").at("body").at("predictions")[0].at("claim") = "Something else";
    report.at("predictions")[0].at("claim") = "Something else";
    resign(dir, report, key);
    expected = {"protocol", "ledger"};
  }
  SUBCASE("a prediction's expect changed in predictions[] only") {
    report.at("predictions")[0].at("expect") = "fused > unfused";
    resign(dir, report, key);
    expected = {"verdicts", "ledger"};
  }
  SUBCASE("the protocol body changed and protocol.hash rewritten to match") {
    json &p = report.at("protocol");
    p.at("body").at("title") = "Another title";
    p.at("hash") = sha256_hex(canonical_json(p.at("body")));
    resign(dir, report, key);
    expected = {"protocol", "freeze", "ledger", "history"};
  }
  SUBCASE("report.json no longer the envelope's payload") {
    json &c = cell_of(report, "unfused", 128);
    c.at("median_ms") = c.at("median_ms").get<double>() * 0.5;
    write_file_atomic(dir / "report.json", canonical_json(report));
    expected = {"payload", "statistics", "pages", "ledger"};
  }
  SUBCASE("report.json not canonical but equal to the payload") {
    const std::string bytes = report.dump(1);
    write_file_atomic(dir / "report.json", bytes);
    write_file_atomic(dir / "report.dsse.json", make_envelope(bytes, key));
    expected = {"payload", "ledger"};
  }
  SUBCASE("the envelope's payloadType changed") {
    json env = parse_json_strict(read_file(dir / "report.dsse.json"), "env");
    env.at("payloadType") = "application/json";
    write_file_atomic(dir / "report.dsse.json", canonical_json(env));
    expected = {"envelope"};
  }
  SUBCASE("the envelope's signatures removed") {
    json env = parse_json_strict(read_file(dir / "report.dsse.json"), "env");
    env.at("signatures") = json::array();
    write_file_atomic(dir / "report.dsse.json", canonical_json(env));
    expected = {"envelope"};
  }
  SUBCASE("a second, unknown signature added") {
    json env = parse_json_strict(read_file(dir / "report.dsse.json"), "env");
    const signing_key other = signing_key::generate();
    const std::string bytes = read_file(dir / "report.json");
    env.at("signatures")
        .push_back({{"keyid", other.fingerprint()},
                    {"sig", base64_encode(other.sign(dsse_pae(dsse_payload_type, bytes)))}});
    write_file_atomic(dir / "report.dsse.json", canonical_json(env));
    expected = {"envelope"};
  }
  SUBCASE("report.dsse.json deleted") {
    fs::remove(dir / "report.dsse.json");
    expected = {"envelope", "payload"};
  }
  SUBCASE("report.json deleted") {
    fs::remove(dir / "report.json");
    expected = {"payload", "protocol", "freeze",    "statistics", "verdicts",
                "defects", "pages",    "isolation", "ledger",     "history"};
  }
  SUBCASE("the run's ledger entries removed, the ledger re-chained and re-signed") {
    const std::string run_id = report.at("run").at("run_id");
    rewrite_ledger(lab, [&](const json &e) { return e.value("run_id", "") == run_id; });
    REQUIRE(lab.st().get_ledger().verify(
                [&](const std::string &f) { return lab.st().find_key(f); }) == 1);
    expected = {"ledger", "history"};
  }
  SUBCASE("only the run-complete removed, the ledger re-chained and re-signed") {
    rewrite_ledger(lab, [](const json &e) { return e.value("event", "") == "run-complete"; });
    expected = {"ledger"};
  }
  SUBCASE("a ledger line edited without re-signing") {
    std::string text = read_file(lab.st().get_ledger().path());
    const auto at = text.find("\"attempt\":1");
    REQUIRE(at != std::string::npos);
    text[at + 10] = '2';
    write_file_atomic(lab.st().get_ledger().path(), text);
    expected = {"ledger", "history"};
  }
  SUBCASE("a freeze record dated after the run, in the report and the store alike") {
    json record = report.at("protocol").at("freeze");
    record.at("frozen_at") = "2999-01-01T00:00:00.000000Z";
    record = sign_record(record, key);
    write_file_atomic(lab.st().protocol_dir(lab.hash) / "freeze.json", canonical_json(record));
    report.at("protocol").at("freeze") = record;
    resign(dir, report, key);
    expected = {"freeze", "ledger"};
  }
  SUBCASE("a freeze record in the report that differs from the store's") {
    json record = report.at("protocol").at("freeze");
    record.at("frozen_at") = "2000-01-01T00:00:00.000000Z";
    report.at("protocol").at("freeze") = sign_record(record, key);
    resign(dir, report, key);
    expected = {"freeze", "ledger"};
  }
  SUBCASE("the run said to start before the freeze") {
    report.at("run").at("started_at") = "2001-01-01T00:00:00Z";
    resign(dir, report, key);
    expected = {"freeze", "ledger"};
  }
  SUBCASE("the signer's key removed from the store") {
    fs::remove(lab.store_root / "keys" / (key.fingerprint() + ".pub"));
    expected = {"envelope", "freeze", "ledger"};
  }

  REQUIRE(!expected.empty());
  const audit_result r = audit(lab, dir, trusted);
  CHECK(list(r.failed()) == list(expected));
  for (const auto &c : r.checks)
    if (!c.passed)
      CHECK_MESSAGE(!c.detail.empty(), c.name);
  CHECK(r.exit() == exit_code::audit_failed);
  CHECK(static_cast<int>(r.exit()) == 4);
  CHECK(r.checks.back().name == "history");
  const std::string text = render_audit_text(r);
  for (const auto &n : expected) {
    const bool listed = text.find("\nFAIL " + n + ": ") != std::string::npos ||
                        text.rfind("FAIL " + n + ": ", 0) == 0;
    CHECK_MESSAGE(listed, n);
  }
  CHECK(text.find("audit FAILED: " + std::to_string(expected.size()) + " of 11 checks failed") !=
        std::string::npos);
}

TEST_CASE("a version-1 report: the cells' clock and harness bytes come from defect evidence") {
  temp_lab lab;
  lab.freeze();
  fake_plants plants;
  plants.clock_mhz = [](const cell_key &k) { return k.rows == 64 ? 1000.0 : 3000.0; };
  plants.harness_bytes_in_window = [](const cell_key &k) -> std::uint64_t {
    return k.arm == "fused" ? 512 : 0;
  };
  const fs::path dir = lab.run(plants);
  json report = read_report(dir);
  REQUIRE(report.at("schema_version") == 5);
  report.at("schema_version") = 1;
  report.erase("phases");
  for (auto &c : report.at("cells")) {
    c.erase("clock_mhz");
    c.erase("harness_bytes_in_window");
    c.erase("first_call_ms");
    c.erase("warmup_calls");
    c.erase("off_window_ms");
    c.erase("kernel_clock");
  }
  for (const char *k : {"kernel_clock", "kernel_clock_floor_ms", "kernel_records_dropped"})
    report.at("instrument").erase(k);
  const signing_key key = lab.key();
  const auto without = [&](json r, const std::string &code) {
    auto &d = r.at("defects");
    d.erase(std::remove_if(d.begin(), d.end(), [&](const json &x) { return x.at("code") == code; }),
            d.end());
    return r;
  };
  SUBCASE("with its defects it recomputes (only the ledger, which signed other bytes, fails)") {
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "ledger");
  }
  SUBCASE("without its harness-allocation defect the flag no longer recomputes") {
    resign(dir, without(report, "harness-allocation"), key);
    CHECK(list(audit(lab, dir).failed()) == "statistics, ledger");
  }
  SUBCASE("without its clock-throttle defect the flag no longer recomputes") {
    resign(dir, without(report, "clock-throttle"), key);
    CHECK(list(audit(lab, dir).failed()) == "statistics, ledger");
  }
  SUBCASE("a version-1 cell may not carry the version-2 fields") {
    report.at("cells")[0]["clock_mhz"] = 3000.0;
    resign(dir, report, key);
    const audit_result r = audit(lab, dir);
    CHECK(list(r.failed()) == "statistics, verdicts, defects, pages, ledger");
    CHECK(detail_of(r, "statistics") == "cells[0].clock_mhz is not a member of the report format");
  }
}

TEST_CASE("audit failure details name the cause") {
  temp_lab lab;
  lab.freeze();
  const fs::path dir = lab.run();
  json report = read_report(dir);
  const signing_key key = lab.key();

  SUBCASE("a changed median is named with both values") {
    cell_of(report, "unfused", 128).at("median_ms") = 0.125;
    resign(dir, report, key);
    const auto r = audit(lab, dir);
    const std::string d = detail_of(r, "statistics");
    CHECK(d.find("cells[1] (unfused fwd 128x256)") != std::string::npos);
    CHECK(d.find("median_ms is 0.125 in the report") != std::string::npos);
    CHECK(detail_of(r, "ledger").find("report_sha256") != std::string::npos);
  }
  SUBCASE("an untrusted signer is named as unknown") {
    const signing_key other = signing_key::generate();
    resign(dir, report, other);
    const auto r = audit(lab, dir);
    CHECK(detail_of(r, "envelope").find("unknown key " + other.fingerprint()) != std::string::npos);
    SUBCASE("--trust pins: that key alone passes the envelope, and the store's key is no longer "
            "accepted for the freeze record and the ledger") {
      other.save(lab.root / "other.key");
      const auto keys = load_trusted_keys(std::vector<fs::path>{lab.root / "other.pub"});
      REQUIRE(keys.size() == 1);
      const auto t = audit(lab, dir, keys);
      CHECK(detail_of(t, "envelope").find("verify over DSSE PAE") != std::string::npos);
      CHECK(list(t.failed()) == "freeze, ledger");
      CHECK(t.trust.find("pinned by --trust (1 key(s))") != std::string::npos);
    }
    SUBCASE("--trust with a folder of *.pub holding both keys: all pass, pinned") {
      fs::create_directories(lab.root / "trust");
      other.save(lab.root / "trust" / "other.key");
      fs::remove(lab.root / "trust" / "other.key");
      write_file_atomic(lab.root / "trust" / "mine.pub", key.public_part().pem());
      const auto keys = load_trusted_keys(std::vector<fs::path>{lab.root / "trust"});
      REQUIRE(keys.size() == 2);
      const auto t = audit(lab, dir, keys);
      CHECK(list(t.failed()).empty()); // same bytes, now by signers the user pinned
      CHECK(t.trust.find(other.fingerprint()) != std::string::npos);
      CHECK(t.trust.find(key.fingerprint()) != std::string::npos);
    }
    SUBCASE("--trust by fingerprint names a key in the store") {
      lab.st().add_key(other.public_part());
      const trust_root t = resolve_trust({other.fingerprint(), key.fingerprint()}, lab.st());
      CHECK(list(audit_report(dir, lab.st(), t).failed()).empty());
      const trust_root only_mine = resolve_trust({key.fingerprint()}, lab.st());
      CHECK(list(audit_report(dir, lab.st(), only_mine).failed()) == "envelope");
    }
  }
  SUBCASE("an attempt changed with the ledger rewritten to the new report's sha256") {
    report.at("attempt") = 2;
    resign(dir, report, key);
    const std::string sha = sha256_hex(read_file(dir / "report.json"));
    ledger l = lab.st().get_ledger();
    const auto entries = l.entries();
    write_file_atomic(l.path(), "");
    for (auto e : entries) {
      for (const char *k : {"seq", "time", "prev", "signer", "signature"})
        e.erase(k);
      if (e.at("event") == "run-complete")
        e.at("report_sha256") = sha;
      l.append(e, key);
    }
    const auto r = audit(lab, dir);
    CHECK(list(r.failed()) == "ledger, history");
    CHECK(detail_of(r, "ledger").find("the report says attempt 2") != std::string::npos);
    CHECK(detail_of(r, "history")
              .find("the report says attempt 2, but its run-start is run "
                    "number 1 of this protocol") != std::string::npos);
  }
  SUBCASE("a freeze after the run names both times") {
    report.at("run").at("started_at") = "2001-01-01T00:00:00Z";
    resign(dir, report, key);
    CHECK(detail_of(audit(lab, dir), "freeze")
              .find("is not before the run's started_at "
                    "2001-01-01T00:00:00Z") != std::string::npos);
  }
}

TEST_CASE("the history names every run of the protocol, aborted ones included") {
  temp_lab lab;
  lab.freeze();
  fake_plants failing;
  failing.throw_in_measure = "planted crash";
  CHECK_THROWS_AS((void)lab.run(failing), error);
  const fs::path second = lab.run();
  const fs::path third = lab.run();
  const audit_result r = audit(lab, second);
  CHECK(r.passed());
  CHECK(r.history.rfind("run 2 of 3; run 1 aborted at ", 0) == 0);
  CHECK(r.history.find("(planted crash)") != std::string::npos);
  CHECK(r.history.find("run 2 completed ") != std::string::npos);
  CHECK(r.history.find("run 3 completed ") != std::string::npos);
  CHECK(detail_of(r, "history") == r.history);
  CHECK(read_report(second).at("attempt") == 2);
  CHECK(audit(lab, third).passed());

  SUBCASE("a run cut out of the ledger is missing from the history, and the ledger check fails") {
    const std::string run_id = second.filename().string();
    rewrite_ledger(lab, [&](const json &e) { return e.value("run_id", "") == run_id; });
    const audit_result cut = audit(lab, second);
    CHECK(list(cut.failed()) == "ledger, history");
    CHECK(detail_of(cut, "history").find("has no run-start of protocol") != std::string::npos);
    // The third run, now second in the ledger, still records attempt 3.
    CHECK(detail_of(cut, "history").find("records attempt 3, but it is run number 2") !=
          std::string::npos);
    CHECK(cut.history.rfind("this run is not in the ledger; 2 run(s); run 1 aborted at ", 0) == 0);
    CHECK(cut.history.find("run 2 completed ") != std::string::npos); // the third run
  }
}

TEST_CASE("the history check fails on a run sequence that is not what runs write") {
  // Runs 1 (aborted), 2 and 3 (completed). Every plant keeps run 2's own entries intact, but
  // re-writes (re-times, re-chains, re-signs) the whole ledger, so run 2's report no longer
  // finds the ledger head it extended (run.ledger_head): the ledger check fails on that alone,
  // and history must catch the planted sequence.
  temp_lab lab;
  lab.freeze();
  fake_plants failing;
  failing.throw_in_measure = "planted crash";
  CHECK_THROWS_AS((void)lab.run(failing), error);
  const fs::path second = lab.run();
  const fs::path third = lab.run();
  const std::string first_id = [&] {
    for (const auto &e : lab.st().get_ledger().entries())
      if (e.value("event", "") == "run-aborted")
        return e.value("run_id", "");
    return std::string();
  }();
  const std::string second_id = second.filename().string();
  const std::string third_id = third.filename().string();
  REQUIRE(!first_id.empty());

  SUBCASE("untouched, every run passes, and the check says what it verified") {
    const audit_result r = audit(lab, second);
    CHECK(list(r.failed()).empty());
    CHECK(detail_of(r, "history").rfind("run 2 of 3; ", 0) == 0);
    CHECK(audit(lab, third).passed());
  }
  SUBCASE("an earlier run that has no end recorded (still running, or vanished) is no failure") {
    replant_ledger(lab, [&](std::vector<json> &es) {
      es.erase(es.begin() + static_cast<std::ptrdiff_t>(index_of(es, "run-aborted", first_id)));
    });
    const audit_result r = audit(lab, second);
    CHECK(list(r.failed()) == "ledger"); // the rewrite, through the witness; history passes
    CHECK(detail_of(r, "ledger").find("ledger head") != std::string::npos);
    CHECK(r.history.find("run 1 started ") != std::string::npos);
    CHECK(r.history.find("has no end recorded") != std::string::npos);
  }

  std::string expected_failed = "ledger, history"; // ledger: the witness of the rewrite
  std::string expected_detail;
  SUBCASE("a later run's run-start removed, its run-complete kept") {
    replant_ledger(lab, [&](std::vector<json> &es) {
      es.erase(es.begin() + static_cast<std::ptrdiff_t>(index_of(es, "run-start", third_id)));
    });
    expected_detail = "ends run " + third_id + ", which has no earlier run-start of this protocol";
  }
  SUBCASE("a later run's attempt renumbered") {
    replant_ledger(lab, [&](std::vector<json> &es) {
      es[index_of(es, "run-start", third_id)]["attempt"] = 5;
    });
    expected_detail = "records attempt 5, but it is run number 3 of this protocol";
  }
  SUBCASE("an end that records another attempt than its start") {
    replant_ledger(lab, [&](std::vector<json> &es) {
      es[index_of(es, "run-complete", third_id)]["attempt"] = 9;
    });
    expected_detail = "records attempt 9, not 3";
  }
  SUBCASE("an aborted try also recorded as complete") {
    replant_ledger(lab, [&](std::vector<json> &es) {
      json done = es[index_of(es, "run-aborted", first_id)];
      done["event"] = "run-complete";
      done.erase("reason");
      done["report_sha256"] = std::string(64, '0');
      es.push_back(done);
    });
    expected_detail = "run " + first_id + " ends twice";
  }
  SUBCASE("a run id that starts twice") {
    replant_ledger(lab, [&](std::vector<json> &es) {
      json again = es[index_of(es, "run-start", third_id)];
      again["attempt"] = 4;
      es.push_back(again);
    });
    expected_detail = "run " + third_id + " starts twice";
  }
  SUBCASE("runs recorded before the protocol's freeze") {
    replant_ledger(lab, [&](std::vector<json> &es) {
      json freeze = es.front();
      REQUIRE(freeze.at("event") == "freeze");
      es.erase(es.begin());
      es.push_back(freeze);
    });
    expected_detail = "comes before any freeze of protocol";
  }
  SUBCASE("the aborted first try deleted: the later runs no longer count from 1") {
    replant_ledger(lab, [&](std::vector<json> &es) {
      std::erase_if(es, [&](const json &e) { return e.value("run_id", "") == first_id; });
    });
    expected_failed = "ledger, history"; // run 2 is now number 1 in the ledger, too
    expected_detail = "the report says attempt 2, but its run-start is run number 1";
  }

  if (!expected_detail.empty()) {
    REQUIRE(lab.st().get_ledger().verify(
                [&](const std::string &f) { return lab.st().find_key(f); }) > 0);
    const audit_result r = audit(lab, second);
    CHECK(list(r.failed()) == expected_failed);
    CHECK_MESSAGE(detail_of(r, "history").find(expected_detail) != std::string::npos,
                  detail_of(r, "history"));
    CHECK(r.exit() == exit_code::audit_failed);
    CHECK(render_audit_text(r).find("\nFAIL history: ") != std::string::npos);
  }
}

TEST_CASE("a report measured by the real CPU backend passes every check") {
  temp_lab lab;
  std::string yaml = test_protocol_yaml;
  yaml.replace(yaml.find("repetitions: 20"), 15, "repetitions: 5");
  yaml.replace(yaml.find("rows: [64, 128]"), 15, "rows: [16, 32]");
  yaml.replace(yaml.find("at: {rows: 128, pass: fwd}"), 26, "at: {rows: 32, pass: fwd}");
  lab.freeze(yaml);
  run_options o = lab.options();
  o.make_device = make_default_device;
  o.resolve_arm = builtin_resolver();
  const fs::path dir = run_protocol(o);
  const audit_result r = audit(lab, dir);
  for (const auto &c : r.checks)
    CHECK_MESSAGE(c.passed, c.name << ": " << c.detail);
  CHECK(r.exit() == exit_code::ok);
}

TEST_CASE("audit refuses what is not a report folder with exit 2 and the path") {
  temp_lab lab;
  const fs::path missing = lab.root / "no-such-report";
  try {
    (void)audit(lab, missing);
    FAIL("no error");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
    CHECK(e.where() == missing.string());
  }
  fs::create_directories(lab.root / "empty");
  try {
    (void)audit(lab, lab.root / "empty");
    FAIL("no error");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
    CHECK(e.where() == (lab.root / "empty").string());
  }
  CHECK_THROWS_WITH_AS((void)load_trusted_keys(std::vector<fs::path>{lab.root / "nothing.pub"}),
                       "--trust: no such key file or folder", error);
  write_file_atomic(lab.root / "bad.pub", "not a key");
  try {
    (void)load_trusted_keys(std::vector<fs::path>{lab.root / "bad.pub"});
    FAIL("no error");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
  }
}

TEST_CASE("a version-3 report: off-window-work is recomputed from the cells' off_window_ms") {
  temp_lab lab;
  lab.freeze();
  fake_plants plants;
  plants.off_window_ms = [](const cell_key &k) { return k.arm == "unfused" ? 1.0 : 0.0; };
  const fs::path dir = lab.run(plants);
  REQUIRE(audit(lab, dir).passed());
  json report = read_report(dir);
  REQUIRE(report.at("schema_version") == 5);
  const signing_key key = lab.key();
  auto &d = report.at("defects");
  const auto is_off = [](const json &x) { return x.at("code") == "off-window-work"; };
  REQUIRE(std::count_if(d.begin(), d.end(), is_off) == 2); // unfused at 64 and 128 rows
  SUBCASE("the defect deleted") {
    d.erase(std::remove_if(d.begin(), d.end(), is_off), d.end());
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "defects, ledger");
  }
  SUBCASE("the cell's off_window_ms lowered, the defect kept") {
    for (auto &c : report.at("cells"))
      c.at("off_window_ms") = 0.0;
    resign(dir, report, key);
    // Analysis 2 (the report's tool.analysis): off-window work also kept unfused's cells out of
    // the verdicts, so the verdicts recomputed without it differ too.
    CHECK(report.at("tool").at("analysis") == report_analysis_version);
    CHECK(list(audit(lab, dir).failed()) == "verdicts, defects, ledger");
  }
  SUBCASE("tool.analysis removed: judged by analysis 1, which does not read off-window work") {
    report.at("tool").erase("analysis");
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "verdicts, ledger");
  }
  SUBCASE("warmup_calls and first_call_ms are raw facts: changed, only the signature's ledger "
          "entry disagrees") {
    report.at("cells")[0].at("warmup_calls") = 99;
    report.at("cells")[0].at("first_call_ms") = 1.0;
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "ledger");
  }
}

TEST_CASE("measurement.kernel_clock: false: the run goes without the clock the device has") {
  temp_lab lab;
  std::string yaml = test_protocol_yaml;
  yaml.replace(yaml.find("prereg: 1"), 9, "prereg: 2");
  yaml.replace(yaml.find("shapes:"), 7, "axes:");
  yaml.replace(yaml.find("  warmup: 2\n"), 12, "  warmup: 2\n  kernel_clock: false\n");
  lab.freeze(yaml);
  fake_plants plants;
  plants.kernels = [](const cell_key &, std::size_t) { // a device that has a clock
    window_kernels w;
    w.kernel_ms = 0.001;
    w.count = 1;
    w.graph_count = 1;
    return w;
  };
  const fs::path dir = lab.run(plants);
  CHECK(audit(lab, dir).passed());
  const json report = read_report(dir);
  CHECK(report.at("environment").at("kernel_clock") ==
        "unknown: switched off by the protocol (measurement.kernel_clock: false)");
  CHECK(report.at("instrument").at("kernel_clock") == "");
  for (const auto &c : report.at("cells"))
    CHECK_FALSE(c.contains("kernel_clock"));
  const auto &d = report.at("defects");
  CHECK(std::none_of(d.begin(), d.end(),
                     [](const json &x) { return x.at("code") == "graph-under-kernel-clock"; }));
  CHECK(report.at("protocol").at("body").at("measurement").at("kernel_clock") == false);
}

TEST_CASE("graph kernels under the kernel clock: recorded per sample, flagged, audited") {
  temp_lab lab;
  lab.freeze();
  fake_plants plants;
  // fused at 64 rows replays a graph of 3 kernel nodes from sample 1 on; nothing else does.
  plants.kernels = [](const cell_key &k, std::size_t i) {
    const double step = fake_device::default_samples(k, static_cast<std::int64_t>(i) + 1).at(i);
    window_kernels w;
    w.kernel_ms = 0.5 * step;
    w.count = 3;
    w.graph_count = (k.arm == "fused" && k.rows == 64 && i >= 1) ? 3 : 0;
    w.names = {{"k", 3, w.kernel_ms}};
    return w;
  };
  const fs::path dir = lab.run(plants);
  REQUIRE(audit(lab, dir).passed());
  json report = read_report(dir);
  const json &kc = cell_of(report, "fused", 64).at("kernel_clock");
  REQUIRE(kc.contains("graph_kernels"));
  CHECK(kc.at("graph_kernels").size() == kc.at("kernels").size());
  CHECK(kc.at("graph_kernels")[0] == 0); // the samples before the first graph kernel count 0
  CHECK(kc.at("graph_kernels")[1] == 3);
  CHECK_FALSE(cell_of(report, "fused", 128).at("kernel_clock").contains("graph_kernels"));
  auto &d = report.at("defects");
  const auto it = std::find_if(
      d.begin(), d.end(), [](const json &x) { return x.at("code") == "graph-under-kernel-clock"; });
  REQUIRE(it != d.end());
  CHECK(it->at("cell").at("arm") == "fused");
  CHECK(it->at("evidence").at("max_graph_kernels") == 3);
  CHECK(it->at("message").get<std::string>().find("PREREG_KERNEL_CLOCK=off") != std::string::npos);
  CHECK(std::count_if(d.begin(), d.end(), [](const json &x) {
          return x.at("code") == "graph-under-kernel-clock";
        }) == 1);
  const signing_key key = lab.key();
  SUBCASE("the defect deleted") {
    d.erase(it);
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "defects, ledger");
  }
  SUBCASE("the graph counts deleted: the defect no longer follows from the cells") {
    cell_of(report, "fused", 64).at("kernel_clock").erase("graph_kernels");
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "defects, ledger");
  }
}

TEST_CASE("a version-4 report with a kernel clock: its facts, statistics and defects are audited") {
  temp_lab lab;
  lab.freeze();
  fake_plants plants;
  // fused: kernels fill 40% of the step (gap 60%: launch-bound); unfused: 90%, except sample 0
  // at 128 rows (no kernel ran) and sample 1 at 64 rows (kernels longer than the step).
  plants.kernels = [](const cell_key &k, std::size_t i) {
    const double step = fake_device::default_samples(k, static_cast<std::int64_t>(i) + 1).at(i);
    window_kernels w;
    if (k.arm == "unfused" && k.rows == 128 && i == 0)
      return w;
    w.kernel_ms = (k.arm == "fused" ? 0.4 : 0.9) * step;
    if (k.arm == "unfused" && k.rows == 64 && i == 1)
      w.kernel_ms = 2.0 * step;
    w.count = 2;
    w.names = {{"k_big", 1, 0.75 * w.kernel_ms}, {"k_small", 1, 0.25 * w.kernel_ms}};
    if (i == 2)
      w.names.push_back({"k_late", 3, 0.0}); // a name first seen in sample 2: zeros before it
    return w;
  };
  plants.kernel_records_dropped = 5;
  const fs::path dir = lab.run(plants);
  REQUIRE(audit(lab, dir).passed());
  json report = read_report(dir);
  REQUIRE(report.at("schema_version") == 5);
  CHECK(report.at("instrument").at("kernel_clock") == "fake kernel clock");
  CHECK(report.at("instrument").at("kernel_records_dropped") == 5);
  CHECK(report.at("environment").at("kernel_clock") == "fake kernel clock");
  const json &fused = cell_of(report, "fused", 64);
  REQUIRE(fused.contains("kernel_clock"));
  const json &kc = fused.at("kernel_clock");
  CHECK(kc.at("kernel_ms").size() == fused.at("samples_ms").size());
  CHECK(kc.at("gap_share_pct").get<double>() == doctest::Approx(60.0));
  CHECK(kc.at("median_kernels") == 2);
  CHECK(fused.at("bound") == "launch");
  REQUIRE(kc.at("names").size() == 3);
  CHECK(kc.at("names")[0].at("share_pct").get<double>() == doctest::Approx(30.0));
  CHECK(kc.at("names")[2].at("name") == "k_late");
  CHECK(kc.at("names")[2].at("samples_ms")[0] == 0.0);
  CHECK(kc.at("names")[2].at("calls") == 3);
  CHECK(cell_of(report, "unfused", 64).at("bound") != "launch"); // gap 10%
  const signing_key key = lab.key();
  auto &d = report.at("defects");
  const auto count = [&](const char *code) {
    return std::count_if(d.begin(), d.end(), [&](const json &x) { return x.at("code") == code; });
  };
  CHECK(count("kernel-records-dropped") == 1);
  CHECK(count("kernel-above-step") == 1);
  CHECK(count("no-arm-kernel") == 1);
  CHECK(count("graph-under-kernel-clock") == 0);
  const std::string md = read_file(dir / "report.md");
  CHECK(md.find("## Profile (kernel clock)") != std::string::npos);
  CHECK(md.find("`k_big`") != std::string::npos);
  SUBCASE("a derived kernel statistic changed") {
    cell_of(report, "fused", 64).at("kernel_clock").at("gap_share_pct") = 10.0;
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "statistics, ledger");
  }
  SUBCASE("a raw kernel time changed: the gap no longer adds up") {
    cell_of(report, "fused", 64).at("kernel_clock").at("kernel_ms")[0] = 0.0;
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()).find("statistics") != std::string::npos);
  }
  SUBCASE("graph kernels planted in a report without them: the audit derives the defect") {
    json &kc = cell_of(report, "fused", 64).at("kernel_clock");
    kc["graph_kernels"] = json::array();
    for (std::size_t i = 0; i < kc.at("kernels").size(); ++i)
      kc["graph_kernels"].push_back(i == 0 ? 1 : 0);
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "defects, ledger");
  }
  SUBCASE("the kernel-above-step defect deleted") {
    d.erase(std::remove_if(d.begin(), d.end(),
                           [](const json &x) { return x.at("code") == "kernel-above-step"; }),
            d.end());
    resign(dir, report, key);
    CHECK(list(audit(lab, dir).failed()) == "defects, ledger");
  }
  SUBCASE("a kernel clock with one value too few is refused") {
    cell_of(report, "fused", 64).at("kernel_clock").at("kernels").erase(0);
    resign(dir, report, key);
    CHECK_FALSE(audit(lab, dir).passed());
  }
  SUBCASE("regions with kernel times: the kernel shares are recomputed from them") {
    // What a Python arm's regions with the kernel clock add to a cell (docs/python-arms.md):
    // the events' region times and the kernels' region times, and the shares of both.
    json &c = cell_of(report, "fused", 64);
    const auto samples = c.at("samples_ms").get<std::vector<double>>();
    const auto kernels = c.at("kernel_clock").at("kernel_ms").get<std::vector<double>>();
    cell_record rec;
    rec.key = {"fused", pass_kind::fwd, 64, c.at("cols").get<std::int64_t>()};
    rec.samples_ms = samples;
    rec.kernel_ms = kernels;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      rec.regions_ms["norm"].push_back(0.5 * samples[i]);
      rec.region_kernels_ms["norm"].push_back(0.25 * kernels[i]);
    }
    const protocol proto = protocol_from_json(report.at("protocol").at("body"), "body");
    const auto shares =
        compute_region_shares(rec, proto.analysis.bootstrap_resamples, proto.analysis.confidence);
    REQUIRE(shares.size() == 1);
    CHECK(shares[0].kernel_share_pct == doctest::Approx(25.0));
    c["regions"] = rec.regions_ms;
    c["region_kernels"] = rec.region_kernels_ms;
    c["region_shares"] = {{"norm",
                           {{"share_pct", shares[0].share_pct},
                            {"lo_pct", shares[0].lo_pct},
                            {"hi_pct", shares[0].hi_pct},
                            {"kernel_share_pct", shares[0].kernel_share_pct},
                            {"kernel_lo_pct", shares[0].kernel_lo_pct},
                            {"kernel_hi_pct", shares[0].kernel_hi_pct}}}};
    SUBCASE("consistent: only the ledger's hash of the report disagrees") {
      resign(dir, report, key);
      CHECK(list(audit(lab, dir).failed()) == "ledger");
      const std::string md = read_file(dir / "report.md");
      CHECK(md.find("By the kernel clock: the kernels that ran between each region's marks") !=
            std::string::npos);
    }
    SUBCASE("a kernel share changed") {
      c.at("region_shares").at("norm").at("kernel_share_pct") = 50.0;
      resign(dir, report, key);
      CHECK(list(audit(lab, dir).failed()) == "statistics, ledger");
    }
    SUBCASE("a raw region kernel time changed") {
      c.at("region_kernels").at("norm")[0] = 0.0;
      resign(dir, report, key);
      CHECK(list(audit(lab, dir).failed()) == "statistics, ledger");
    }
    SUBCASE("kernel times of a region the events did not time") {
      c.at("region_kernels")["other"] = c.at("region_kernels").at("norm");
      resign(dir, report, key);
      CHECK_FALSE(audit(lab, dir).passed());
    }
  }
}

TEST_CASE("a version-4 report without a kernel clock says why and has no kernel facts") {
  temp_lab lab;
  lab.freeze();
  const fs::path dir = lab.run(fake_plants{});
  REQUIRE(audit(lab, dir).passed());
  const json report = read_report(dir);
  CHECK(report.at("environment").at("kernel_clock") ==
        "unknown: the fake device has no kernel clock");
  CHECK(report.at("instrument").at("kernel_clock") == "");
  CHECK(report.at("instrument").at("kernel_clock_floor_ms").is_null());
  for (const auto &c : report.at("cells"))
    CHECK_FALSE(c.contains("kernel_clock"));
}
