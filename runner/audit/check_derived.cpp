// The `statistics`, `verdicts` and `defects` checks: what the report derived, derived again
// from its raw data.
#include "audit/checks.hpp"

#include "analysis/cell_stats.hpp"
#include "analysis/defects.hpp"
#include "report/report.hpp"
#include "spec/roofs.hpp"
#include "spec/shard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

namespace prereg::audit_detail {
namespace {

/// FAILs unless the report's cells are plan cells in plan order and every plan cell that is
/// absent is named by a deviation (skipped).
void check_cell_coverage(const protocol &proto, const raw_run &raw,
                         const std::vector<report_deviation> &deviations,
                         const std::optional<shard_spec> &shard) {
  const auto plan = shard ? shard_cells(proto, *shard) : all_cells(proto); // a shard: its cells
  std::size_t next = 0;
  std::vector<bool> present(plan.size(), false);
  for (const auto &c : raw.cells) {
    const auto it = std::find(plan.begin() + static_cast<std::ptrdiff_t>(next), plan.end(), c.key);
    if (it == plan.end())
      fail(fmt::format("cell {} is not a cell of the protocol, or is out of order or repeated",
                       cell_label(c.key)));
    next = static_cast<std::size_t>(it - plan.begin()) + 1;
    present[next - 1] = true;
  }
  std::vector<cell_key> excused;
  for (const auto &d : deviations)
    if (d.cell)
      excused.push_back(*d.cell);
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (!present[i] && std::find(excused.begin(), excused.end(), plan[i]) == excused.end())
      fail(fmt::format("cell {} of the protocol is neither in cells[] nor named by a deviation",
                       cell_label(plan[i])));
}

/// The report's `shard` member, if it has one (FAIL if it does not parse).
std::optional<shard_spec> read_shard(const audit_context &ctx) {
  const auto it = ctx.report().find("shard");
  if (it == ctx.report().end())
    return std::nullopt;
  try {
    return shard_from_json(*it, "report.json");
  } catch (const error &e) {
    fail(e.what());
  }
}

/// Codes the audit recomputes from the cells and the instrument, so a reported one must be
/// recomputed too: derivable_from_raw, and from schema_version 2 (whose cells carry clock_mhz
/// and harness_bytes_in_window) clock-throttle and harness-allocation, from schema_version 3
/// (off_window_ms) off-window-work, from schema_version 4 (the kernel clock's records)
/// kernel-records-dropped, kernel-above-step and no-arm-kernel.
bool derivable_from_cells(std::string_view code, int schema_version) {
  return derivable_from_raw(code) ||
         (schema_version >= 2 && (code == "clock-throttle" || code == "harness-allocation")) ||
         (schema_version >= 3 && code == "off-window-work") ||
         (schema_version >= 4 && (code == "kernel-records-dropped" || code == "kernel-above-step" ||
                                  code == "no-arm-kernel" || code == "graph-under-kernel-clock")) ||
         (schema_version >= 7 && code == "throttled") || // the device's state per sample
         (schema_version >= 8 && (code == "measuring-process-stopped" || // the scheduling
                                  code == "measuring-process-descheduled"));
}

/// Codes whose every input is in the report itself, so the audit requires them too.
bool derivable_from_report(std::string_view code, int schema_version) {
  return derivable_from_cells(code, schema_version) || code == "correctness-failure" ||
         code == "device-contention" || code == "flush-too-small";
}

/// The canonical bytes of every reported defect (FAIL at one of an unknown code).
std::set<std::string> reported_defects(const std::vector<report_defect> &reported) {
  const auto codes = defect_codes();
  std::set<std::string> have;
  for (std::size_t i = 0; i < reported.size(); ++i) {
    const std::string &code = reported[i].code;
    if (std::find(codes.begin(), codes.end(), code) == codes.end())
      fail(fmt::format("report.defects[{}] has the unknown code '{}'", i, message_excerpt(code)));
    have.insert(canonical_json(to_json(reported[i])));
  }
  return have;
}

/// Schema 8: the roofs' rates re-derive from their samples (FAIL otherwise); "; ..." for the
/// PASS line, or "" without roofs.
std::string check_roofs(const instrument_record &in) {
  if (!in.roofs)
    return "";
  if (const std::string why = roofs_problem(*in.roofs); !why.empty())
    fail(why);
  std::vector<std::string> compute;
  for (const auto &[type, c] : in.roofs->compute)
    compute.push_back(c.unknown.empty() ? fmt::format("{} {:.4g} TFLOP/s", type, c.tflops)
                                        : fmt::format("{} unknown", type));
  return fmt::format("; the roofs re-derive from their samples (read {:.4g} GB/s, write {:.4g} "
                     "GB/s{}{})",
                     in.roofs->read.gbps, in.roofs->write.gbps, compute.empty() ? "" : ", ",
                     fmt::join(compute, ", "));
}

} // namespace

std::string check_statistics(const audit_context &ctx) {
  const protocol proto = ctx.proto();
  const raw_run raw = ctx.raw();
  const report_document &doc = ctx.doc(report_part::cells | report_part::deviations);
  check_cell_coverage(proto, raw, doc.deviations, read_shard(ctx));
  const std::string roofs = check_roofs(raw.instrument); // schema 8: before the cells they judge
  std::vector<std::string> bad;
  for (std::size_t i = 0; i < raw.cells.size(); ++i) {
    const cell_statistics st =
        compute_cell_statistics(raw.cells[i], proto, raw.instrument, raw.correctness);
    const json recomputed = to_json(to_report_cell(raw.cells[i], st, doc.schema_version));
    const json reported = to_json(doc.cells[i]);
    if (canonical_json(recomputed) != canonical_json(reported))
      bad.push_back(fmt::format("cells[{}] ({}): {}", i, cell_label(raw.cells[i].key),
                                describe_difference(recomputed, reported)));
  }
  if (!bad.empty())
    fail(join_some(bad));
  std::size_t samples = 0;
  for (const auto &c : raw.cells)
    samples += c.samples_ms.size();
  std::string line = fmt::format("{} cells ({} samples): every statistic recomputed from "
                                 "samples_ms equals the report's",
                                 raw.cells.size(), samples);
  line += roofs;
  line += check_stop_rule(ctx);
  line += check_ceiling(ctx);
  // Schema 5: the recorded phases add up to the run's wall time (docs/audit.md).
  if (const auto &phases = ctx.doc(report_part::phases).phases) {
    if (const std::string why = phases_problem(*phases); !why.empty())
      fail("phases: " + why);
    line += fmt::format("; its {} phases add up to its wall time {:.3f} s", phases->list.size(),
                        phases->wall_ms / 1000.0);
  }
  return line;
}

namespace {

// The verdict rules the report names (tool.analysis; absent: 1), read on its own so that a
// renderer this build lacks fails the pages, not the verdicts.
int verdict_rules(const audit_context &ctx) {
  const json_node tool = ctx.report_node()["tool"];
  if (!tool.has("analysis"))
    return 1;
  const std::int64_t v = tool["analysis"].integer();
  if (v < 2 || v > report_analysis_version)
    fail(fmt::format("tool.analysis is {}; this build judges by analysis 1 to {}", v,
                     report_analysis_version));
  return static_cast<int>(v);
}

} // namespace

std::string check_verdicts(const audit_context &ctx) {
  const protocol proto = ctx.proto();
  const raw_run raw = ctx.raw();
  const std::string hash = ctx.hash();
  const auto &reported = ctx.doc(report_part::predictions).predictions;
  const int analysis = verdict_rules(ctx);
  const std::vector<prediction_result> recomputed = judge_predictions(proto, hash, raw, analysis);
  if (reported.size() != recomputed.size())
    fail(fmt::format("the report holds {} predictions, the protocol has {}", reported.size(),
                     recomputed.size()));
  std::vector<std::string> bad;
  std::vector<std::string> verdicts;
  for (std::size_t i = 0; i < recomputed.size(); ++i) {
    const std::string &id = recomputed[i].id;
    verdicts.push_back(fmt::format("{} {}", id, to_string(recomputed[i].verdict)));
    const json mine = to_json(recomputed[i]);
    const json theirs = to_json(reported[i]);
    if (canonical_json(mine) != canonical_json(theirs))
      bad.push_back(
          fmt::format("predictions[{}] ({}): {}", i, id, describe_difference(mine, theirs)));
  }
  if (!bad.empty())
    fail(join_some(bad));
  return fmt::format("{} prediction(s) recomputed with the seeded bootstrap ({} resamples) equal "
                     "the report's: {}",
                     recomputed.size(), proto.analysis.bootstrap_resamples,
                     fmt::join(verdicts, ", "));
}

std::string check_defects(const audit_context &ctx) {
  const protocol proto = ctx.proto();
  const raw_run raw = ctx.raw();
  const report_document &doc = ctx.doc(report_part::schema_version | report_part::defects);
  const std::vector<report_defect> &reported = doc.defects;
  const int version = doc.schema_version;
  const std::set<std::string> have = reported_defects(reported);
  const auto stats = compute_cell_statistics(proto, raw);
  const std::vector<report_defect> recomputed = detect_defects(proto, raw, stats);
  std::set<std::string> derived;
  std::vector<std::string> missing;
  std::size_t required = 0;
  for (const auto &d : recomputed) {
    if (!derivable_from_report(d.code, version))
      continue;
    ++required;
    const std::string bytes = canonical_json(to_json(d));
    derived.insert(bytes);
    if (!have.count(bytes))
      missing.push_back(fmt::format("{}{} is missing", d.code,
                                    d.cell ? " at " + cell_label(*d.cell) : std::string()));
  }
  if (!missing.empty())
    fail("recomputed defect(s) absent from the report: " + join_some(missing));
  std::vector<std::string> unsupported;
  for (const auto &d : reported) {
    const json j = to_json(d);
    if (derivable_from_cells(d.code, version) && !derived.count(canonical_json(j)))
      unsupported.push_back(fmt::format("{}: {}", d.code, excerpt(j, 120)));
  }
  if (!unsupported.empty())
    fail("the report holds defect(s) the raw data does not give: " + join_some(unsupported));
  return fmt::format("{} defect(s) recomputed from the raw data are all in the report ({} in all)",
                     required, reported.size());
}

} // namespace prereg::audit_detail
