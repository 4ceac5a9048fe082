// Assembles report.json from a raw run, and signs it in a DSSE envelope.
#include "prereg/report.hpp"

#include "prereg/build_info.hpp"
#include "prereg/cell_stats.hpp"
#include "prereg/defects.hpp"
#include "prereg/expr.hpp"
#include "prereg/verdict.hpp"

#include <fmt/format.h>

#include <cmath>

namespace prereg {
namespace {

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json instrument_json(const instrument_record &in) {
  return {{"ceiling_gbps", finite_or_null(in.ceiling_gbps)},
          {"ceiling_samples_gbps", in.ceiling_samples_gbps},
          {"ceiling_bytes", in.ceiling_bytes},
          {"launch_floor_ms", finite_or_null(in.launch_floor_ms)},
          {"timer_resolution_ms", finite_or_null(in.timer_resolution_ms)},
          {"flush_bytes", in.flush_bytes},
          {"flush_method", in.flush_method},
          {"llc_bytes", in.llc_bytes},
          {"clock_start_mhz", finite_or_null(in.clock_start_mhz)}};
}

json correctness_json(const correctness_record &c) {
  return {{"arm", c.key.arm},
          {"pass", std::string(to_string(c.key.pass))},
          {"rows", c.key.rows},
          {"cols", c.key.cols},
          {"max_abs_error", finite_or_null(c.max_abs_error)},
          {"max_rel_error", finite_or_null(c.max_rel_error)},
          {"unwritten", c.unwritten},
          {"passed", c.passed},
          {"detail", c.detail}};
}

} // namespace

std::vector<json> judge_predictions(const protocol &proto, const std::string &hash,
                                    const raw_run &raw) {
  std::vector<std::string> arm_ids;
  for (const auto &a : proto.arms) arm_ids.push_back(a.id);
  std::vector<expectation> parsed;
  parsed.reserve(proto.predictions.size());
  for (const auto &p : proto.predictions)
    parsed.push_back(expectation::parse(p.expect, arm_ids, "prediction " + p.id));
  std::vector<prediction_check> checks;
  for (const auto &e : parsed)
    checks.push_back({[&e](const metric_lookup &value) { return e.holds(value); },
                      e.references()});
  std::vector<json> out;
  for (const auto &r : evaluate_predictions(proto, hash, checks, raw)) out.push_back(to_json(r));
  return out;
}

json build_report(const frozen_protocol &fp, const raw_run &raw, const run_meta &meta) {
  const protocol &proto = fp.proto;
  const auto stats = compute_cell_statistics(proto, raw);
  json cells = json::array();
  for (std::size_t i = 0; i < raw.cells.size(); ++i) cells.push_back(to_json(raw.cells[i], stats[i]));
  json correctness = json::array();
  for (const auto &c : raw.correctness) correctness.push_back(correctness_json(c));
  json deviations = json::array();
  for (const auto &d : raw.deviations) deviations.push_back(d);
  for (const auto &d : meta.deviations) deviations.push_back(d);
  json tool = {{"name", "prereg"},
               {"version", build_info::version},
               {"git_commit", build_info::git_commit},
               {"build_flags", build_info::build_flags}};
  return {{"schema_version", report_schema_version},
          {"tool", tool},
          {"protocol", {{"hash", fp.hash}, {"body", fp.body}, {"freeze", fp.freeze}}},
          {"run",
           {{"run_id", meta.run_id},
            {"started_at", meta.started_at},
            {"finished_at", meta.finished_at},
            {"device_ordinal", meta.device_ordinal}}},
          {"environment", raw.environment},
          {"instrument", instrument_json(raw.instrument)},
          {"cells", cells},
          {"correctness", correctness},
          {"predictions", judge_predictions(proto, fp.hash, raw)},
          {"defects", detect_defects(proto, raw, stats)},
          {"deviations", deviations},
          {"attempt", meta.attempt}};
}

std::string make_envelope(const std::string &payload, const signing_key &key) {
  const std::string sig = key.sign(dsse_pae(dsse_payload_type, payload));
  const json env = {{"payloadType", dsse_payload_type},
                    {"payload", base64_encode(payload)},
                    {"signatures", json::array({{{"keyid", key.fingerprint()},
                                                 {"sig", base64_encode(sig)}}})}};
  return canonical_json(env);
}

} // namespace prereg
