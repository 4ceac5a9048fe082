// The report model's strict parser: one reader per struct, each failure naming its JSON path.
#include "model/report_reader.hpp"

#include "prereg/error.hpp"
#include "spec/roofs.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {
using namespace model_detail;

namespace model_detail {

void report_fault::fail(const std::string &path, std::string_view problem) const {
  throw invalid_input(fmt::format("{} {}", path.empty() ? "report" : path, problem), m_where);
}

pass_kind node::pass() const {
  const std::string s = str();
  if (s == "fwd")
    return pass_kind::fwd;
  if (s == "fwd+bwd")
    return pass_kind::fwd_bwd;
  fail(fmt::format("is '{}', not fwd or fwd+bwd", message_excerpt(s)));
}

cell_key read_key(const node &n) {
  cell_key k{n["arm"].str(), n["pass"].pass(), 0, 0, {}};
  if (n.has("shape")) {
    if (const std::string why = read_shape_json(n.value(), true, k); !why.empty())
      n.fail(why);
    return k;
  }
  k.rows = n["rows"].integer();
  k.cols = n["cols"].integer();
  return k;
}

} // namespace model_detail

namespace {

/// An optional version member of `tool` (renderer, analysis): absent is 1, written only from 2;
/// a value past `newest` is one this build does not have (`what` names them).
int read_version(const node &tool, const char *key, int newest, const char *what) {
  if (!tool.has(key))
    return 1;
  const std::int64_t v = tool[key].integer();
  if (v < 2 || v > newest)
    tool[key].fail(fmt::format("must be an integer from 2 to {} ({})", newest, what));
  return static_cast<int>(v);
}

report_tool read_tool(const node &n) {
  n.only({"name", "version", "git_commit", "build_flags", "renderer", "analysis"});
  report_tool t{n["name"].str(), n["version"].str(), n["git_commit"].str(), n["build_flags"].str()};
  t.renderer = read_version(n, "renderer", report_renderer_version, "this build's renderers");
  t.analysis = read_version(n, "analysis", report_analysis_version, "this build's verdict rules");
  return t;
}

report_protocol read_protocol(const node &n) {
  n.only({"hash", "body", "freeze"});
  report_protocol p;
  p.hash = n["hash"].str();
  p.body = n["body"].object().value();
  p.freeze = n["freeze"].object().value();
  return p;
}

isolation_probe read_probe(const node &n) {
  n.only({"name", "outcome", "error", "detail"});
  isolation_probe p{n["name"].str(), n["outcome"].str(), n["error"].str(), n["detail"].str()};
  if (probe_layer(p.name).empty())
    n["name"].fail("is not an isolation probe");
  if (p.outcome != "contained" && p.outcome != "escaped" && p.outcome != "not-tried")
    n["outcome"].fail("is not contained, escaped or not-tried");
  return p;
}

/// run.isolation; since schema_version 8 with the probes and the level (both or neither).
report_isolation read_isolation(const node &n, int version) {
  const bool probed = n.has("probes") || n.has("level");
  if (probed && version < report_schema_version_probes)
    n.fail(fmt::format("has probes or a level (members since schema_version {})",
                       report_schema_version_probes));
  if (probed)
    n.only({"layers", "reason", "probes", "level"});
  else
    n.only({"layers", "reason"});
  report_isolation i;
  const node layers = n["layers"];
  const std::size_t count = layers.array_size();
  for (std::size_t k = 0; k < count; ++k) {
    const std::string name = layers.at(k).str();
    if (!is_isolation_layer(name))
      layers.at(k).fail("is not an isolation layer");
    if (std::find(i.layers.begin(), i.layers.end(), name) != i.layers.end())
      layers.at(k).fail("repeats a layer");
    i.layers.push_back(name);
  }
  i.reason = n["reason"].str();
  if (probed) {
    const node probes = n["probes"];
    const std::size_t np = probes.array_size();
    for (std::size_t k = 0; k < np; ++k)
      i.probes.push_back(read_probe(probes.at(k)));
    i.level = n["level"].str();
    if (i.level != "sandboxed" && i.level != "partial" && i.level != "none")
      n["level"].fail("is not sandboxed, partial or none");
  }
  if (isolation_mode(i) == "none" && i.reason.empty())
    n["reason"].fail("is empty for a run without isolation");
  return i;
}

report_log read_log(const node &n) {
  n.only({"file", "sha256"});
  report_log l{n["file"].str(), n["sha256"].str()};
  if (l.file.empty() || l.file.find('/') != std::string::npos || l.file[0] == '.')
    n["file"].fail("is not a file name in the report folder");
  if (l.sha256.size() != 64 || l.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
    n["sha256"].fail("is not a SHA-256 hex digest");
  return l;
}

/// Version 8's watchdog: {call_timeout_s, stuck: [{arm, cell, phase, waited_s}]}.
report_watchdog read_watchdog(const node &n) {
  n.only({"call_timeout_s", "stuck"});
  report_watchdog w;
  w.call_timeout_s = n["call_timeout_s"].number();
  if (!(w.call_timeout_s > 0))
    n["call_timeout_s"].fail("is not a positive number");
  const node stuck = n["stuck"];
  for (std::size_t i = 0; i < stuck.array_size(); ++i) {
    const node s = stuck.at(i);
    s.only({"arm", "cell", "phase", "waited_s"});
    report_stuck_call call{s["arm"].str(), s["cell"].value(), s["phase"].str(),
                           s["waited_s"].number()};
    if (!call.cell.is_null())
      (void)read_key(s["cell"]); // a cell key, checked as every cell key is
    w.stuck.push_back(std::move(call));
  }
  return w;
}

/// Version 8's scratch space: {bytes, folders, reason}.
report_scratch read_scratch(const node &n) {
  n.only({"bytes", "folders", "reason"});
  return {n["bytes"].count(), n["folders"].strings(), n["reason"].str()};
}

report_run read_run(const node &n, int version) {
  n.only({"run_id", "started_at", "finished_at", "device_ordinal", "ledger_head", "isolation",
          "arm_log", "watchdog", "scratch"});
  report_run r{n["run_id"].str(),
               n["started_at"].str(),
               n["finished_at"].str(),
               n["device_ordinal"].integer(),
               std::nullopt,
               std::nullopt,
               std::nullopt,
               std::nullopt,
               std::nullopt};
  if (n.has("ledger_head")) {
    const node h = n["ledger_head"];
    h.only({"seq", "sha256"});
    r.ledger_head = report_ledger_head{h["seq"].integer(), h["sha256"].str()};
  }
  if (n.has("isolation"))
    r.isolation = read_isolation(n["isolation"], version);
  if (n.has("arm_log"))
    r.arm_log = read_log(n["arm_log"]);
  if (n.has("watchdog")) {
    if (version < report_schema_version_hardened)
      n["watchdog"].fail(fmt::format("is a version-{} member", report_schema_version_hardened));
    r.watchdog = read_watchdog(n["watchdog"]);
  }
  if (n.has("scratch")) {
    if (version < report_schema_version_hardened)
      n["scratch"].fail(fmt::format("is a version-{} member", report_schema_version_hardened));
    r.scratch = read_scratch(n["scratch"]);
  }
  return r;
}

report_instrument read_instrument(const node &n, int version) {
  if (version >= report_schema_version_roofs)
    n.only({"ceiling_gbps", "ceiling_samples_gbps", "ceiling_bytes", "launch_floor_ms",
            "timer_resolution_ms", "flush_bytes", "flush_method", "llc_bytes", "clock_start_mhz",
            "kernel_clock", "kernel_clock_floor_ms", "kernel_records_dropped", "roofs",
            "ceiling_reused"});
  else if (version >= 4)
    n.only({"ceiling_gbps", "ceiling_samples_gbps", "ceiling_bytes", "launch_floor_ms",
            "timer_resolution_ms", "flush_bytes", "flush_method", "llc_bytes", "clock_start_mhz",
            "kernel_clock", "kernel_clock_floor_ms", "kernel_records_dropped"});
  else
    n.only({"ceiling_gbps", "ceiling_samples_gbps", "ceiling_bytes", "launch_floor_ms",
            "timer_resolution_ms", "flush_bytes", "flush_method", "llc_bytes", "clock_start_mhz"});
  report_instrument in;
  in.ceiling_gbps = n["ceiling_gbps"].number_or_null();
  in.ceiling_samples_gbps = n["ceiling_samples_gbps"].numbers();
  in.ceiling_bytes = n["ceiling_bytes"].count();
  in.launch_floor_ms = n["launch_floor_ms"].number_or_null();
  in.timer_resolution_ms = n["timer_resolution_ms"].number_or_null();
  in.flush_bytes = n["flush_bytes"].count();
  in.flush_method = n["flush_method"].str();
  in.llc_bytes = n["llc_bytes"].count();
  in.clock_start_mhz = n["clock_start_mhz"].number_or_null();
  if (version >= 4) {
    in.kernel_clock = n["kernel_clock"].str();
    in.kernel_clock_floor_ms = n["kernel_clock_floor_ms"].number_or_null();
    in.kernel_records_dropped = n["kernel_records_dropped"].count();
  }
  if (version >= report_schema_version_roofs && n.has("roofs")) {
    in.roofs.emplace();
    if (const std::string bad = read_roofs_json(n["roofs"].value(), *in.roofs); !bad.empty())
      n["roofs"].fail(bad);
  }
  if (n.has("ceiling_reused")) // version 8 only (n.only above)
    in.ceiling_reused = n["ceiling_reused"].object().value();
  return in;
}

report_correctness read_correctness(const node &n) {
  n.only({"arm", "pass", "rows", "cols", "shape", "max_abs_error", "max_rel_error", "unwritten",
          "passed", "detail"});
  report_correctness c;
  c.key = read_key(n);
  c.max_abs_error = n["max_abs_error"].number_or_null();
  c.max_rel_error = n["max_rel_error"].number_or_null();
  c.unwritten = n["unwritten"].boolean();
  c.passed = n["passed"].boolean();
  c.detail = n["detail"].str();
  return c;
}

verdict_kind read_verdict(const node &n) {
  const std::string s = n.str();
  for (const verdict_kind v :
       {verdict_kind::confirmed, verdict_kind::refuted, verdict_kind::inconclusive})
    if (s == to_string(v))
      return v;
  n.fail(fmt::format("is '{}', not confirmed, refuted or inconclusive", message_excerpt(s)));
}

prediction_result read_prediction(const node &n) {
  n.only({"id", "claim", "expect", "verdict", "cells", "reason"});
  prediction_result r;
  r.id = n["id"].str();
  r.claim = n["claim"].str();
  r.expect = n["expect"].str();
  r.verdict = read_verdict(n["verdict"]);
  const node cells = n["cells"];
  for (std::size_t i = 0; i < cells.array_size(); ++i) {
    const node c = cells.at(i);
    c.only({"pass", "rows", "cols", "shape", "p"});
    cell_p cp{c["pass"].pass(), 0, 0, std::nullopt, {}};
    cell_key shape{"", cp.pass, 0, 0, {}};
    if (const std::string why = read_shape_json(c.value(), c.has("shape"), shape); !why.empty())
      c.fail(why);
    cp.rows = shape.rows;
    cp.cols = shape.cols;
    cp.shape = std::move(shape.shape);
    if (const node p = c["p"]; !p.value().is_null())
      cp.p = p.number();
    r.cells.push_back(cp);
  }
  r.reason = n["reason"].str();
  return r;
}

report_defect read_defect(const node &n) {
  n.only({"code", "cell", "message", "evidence"});
  report_defect d;
  d.code = n["code"].str();
  if (n.has("cell")) {
    const node c = n["cell"];
    c.only({"arm", "pass", "rows", "cols", "shape"});
    d.cell = read_key(c);
  }
  d.message = n["message"].str();
  d.evidence = n["evidence"].object().value();
  return d;
}

report_deviation read_deviation(const node &n) {
  n.object();
  report_deviation d;
  d.kind = n["kind"].str();
  d.message = n["message"].str();
  if (n.has("cell")) {
    const node c = n["cell"];
    c.only({"arm", "pass", "rows", "cols", "shape"});
    d.cell = read_key(c);
  }
  for (const auto &[k, v] : n.value().items())
    if (k != "kind" && k != "message" && k != "cell")
      d.extra[k] = v;
  return d;
}

template <class T, class F> std::vector<T> read_list(const node &n, F read) {
  std::vector<T> out;
  const std::size_t size = n.array_size();
  out.reserve(size);
  for (std::size_t i = 0; i < size; ++i)
    out.push_back(read(n.at(i)));
  return out;
}

std::vector<phase_time> read_phase_list(const node &n) {
  return read_list<phase_time>(n, [](const node &p) {
    p.only({"name", "ms"});
    return phase_time{p["name"].str(), p["ms"].number()};
  });
}

/// The phases (schema_version 5 and later).
report_phases read_phases(const node &n, int schema_version) {
  if (schema_version < 5)
    n.fail("is not a member of reports before schema_version 5");
  n.only({"wall_ms", "list", "timing"});
  report_phases p;
  p.wall_ms = n["wall_ms"].number();
  p.list = read_phase_list(n["list"]);
  p.timing = read_phase_list(n["timing"]);
  return p;
}

int read_schema_version(const node &root) {
  const node v = root["schema_version"];
  const std::int64_t version = v.integer();
  if (version < report_schema_version_min || version > report_schema_version_max)
    v.fail(fmt::format("is {}; this build reads versions {} to {}", version,
                       report_schema_version_min, report_schema_version_max));
  return static_cast<int>(version);
}

/// The members of the report's lists in `parts`: cells, correctness, predictions, defects,
/// deviations.
void read_lists(const node &n, unsigned parts, report_document &r) {
  const auto want = [&](unsigned part) { return (parts & part) != 0; };
  if (want(report_part::cells))
    r.cells = read_list<report_cell>(n["cells"],
                                     [&](const node &c) { return read_cell(c, r.schema_version); });
  if (want(report_part::correctness))
    r.correctness = read_list<report_correctness>(n["correctness"], read_correctness);
  if (want(report_part::predictions))
    r.predictions = read_list<prediction_result>(n["predictions"], read_prediction);
  if (want(report_part::defects))
    r.defects = read_list<report_defect>(n["defects"], read_defect);
  if (want(report_part::deviations))
    r.deviations = read_list<report_deviation>(n["deviations"], read_deviation);
}

} // namespace

void check_report_members(const json &root, const std::string &where) {
  const report_fault fault(where);
  const node n(root, "", fault);
  n.only({"schema_version", "tool", "protocol", "run", "environment", "instrument", "cells",
          "correctness", "predictions", "defects", "deviations", "attempt", "exploratory", "shard",
          "phases"});
  (void)read_schema_version(n);
}

report_document report_from_json(const json &root, const std::string &where) {
  check_report_members(root, where);
  return report_from_json(root, where, report_part::all);
}

report_document report_from_json(const json &root, const std::string &where, unsigned parts) {
  const report_fault fault(where);
  const node n(root, "", fault);
  n.object();
  report_document r;
  const auto want = [&](unsigned part) { return (parts & part) != 0; };
  if (want(report_part::schema_version) || want(report_part::cells))
    r.schema_version = read_schema_version(n);
  if (want(report_part::tool))
    r.tool = read_tool(n["tool"]);
  if (want(report_part::protocol))
    r.protocol = read_protocol(n["protocol"]);
  if (want(report_part::run))
    r.run = read_run(n["run"], read_schema_version(n));
  if (want(report_part::environment))
    r.environment = n["environment"].object().value();
  if (want(report_part::instrument))
    r.instrument = read_instrument(n["instrument"], read_schema_version(n));
  read_lists(n, parts, r);
  if (want(report_part::attempt))
    r.attempt = n["attempt"].integer();
  if (n.has("exploratory")) {
    r.exploratory = n["exploratory"].boolean();
    if (!r.exploratory)
      n["exploratory"].fail("must be true when present");
  }
  if (root.is_object() && root.contains("shard"))
    r.shard = shard_from_json(root.at("shard"), where.empty() ? "shard" : where + "#/shard");
  if (want(report_part::phases) && n.has("phases"))
    r.phases = read_phases(n["phases"], read_schema_version(n));
  return r;
}

cell_key cell_key_from_json(const json &j, const std::string &path, const std::string &where) {
  const report_fault fault(where);
  const node n(j, path, fault);
  n.only({"arm", "pass", "rows", "cols", "shape"});
  return read_key(n);
}

} // namespace prereg
