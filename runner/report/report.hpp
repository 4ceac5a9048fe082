// The report (docs/report.md): report.json assembled from a run's raw record by the analysis
// modules, the one mapping between a raw run and the report model, and the DSSE envelope.
#pragma once

#include "analysis/cell_stats.hpp"
#include "base/json.hpp"
#include "crypto/crypto.hpp"
#include "model/report_model.hpp"
#include "spec/records.hpp"
#include "store/store.hpp"

#include <string>
#include <vector>

namespace prereg {

inline constexpr const char *dsse_payload_type = "application/vnd.prereg.report+json";

/// Facts about the run that are not measurements.
struct run_meta {
  std::string run_id;       ///< the report folder's name
  std::int64_t attempt = 0; ///< this run's number among the protocol's runs in the ledger
  std::string started_at;   ///< RFC 3339 UTC
  std::string finished_at;  ///< RFC 3339 UTC
  int device_ordinal = 0;
  std::optional<report_ledger_head> ledger_head; ///< the entry the run-start extended
  std::vector<json> deviations;    ///< found by the engine (skipped cells, device changes, ...)
  std::optional<shard_spec> shard; ///< `run --shard K/N`: the report is shard K's part
  std::optional<report_isolation> isolation; ///< the measuring process's walls (run.isolation)
  std::optional<report_log> arm_log;         ///< the outside arms' tracebacks (run.arm_log)
  std::optional<report_watchdog> watchdog;   ///< the watchdog's limit and stops (run.watchdog)
  std::optional<report_scratch> scratch;     ///< the measuring process's scratch (run.scratch)
};

/// The verdicts of a protocol's predictions (each `expect` parsed against its arm ids), by the
/// verdict rules of `analysis` (the report's tool.analysis).
[[nodiscard]] std::vector<prediction_result>
judge_predictions(const protocol &proto, const std::string &hash, const raw_run &raw, int analysis);

/// A cells[] entry from a raw record and its statistics; `schema_version` 1 leaves out the
/// version-2 raw fields (clock_mhz, harness_bytes_in_window), so the audit can recompute a
/// version-1 cell. With report_from_raw, the one place where raw fields meet the report.
[[nodiscard]] report_cell to_report_cell(const cell_record &cell, const cell_statistics &stats,
                                         int schema_version = report_schema_version);

/// The raw run a report records, for re-deriving its analysis: environment, instrument,
/// correctness and cells. A version-1 cell lacks clock_mhz and harness_bytes_in_window; they
/// are taken from the evidence of its clock-throttle and harness-allocation defects, if any
/// (NaN and 0 otherwise).
[[nodiscard]] raw_run report_to_raw(const report_document &r);

/// The whole report; analysis (statistics, defects, verdicts) happens here.
[[nodiscard]] report_document build_report_document(const frozen_protocol &fp, const raw_run &raw,
                                                    const run_meta &meta);

/// to_json(build_report_document(...)): the report.json object.
[[nodiscard]] json build_report(const frozen_protocol &fp, const raw_run &raw,
                                const run_meta &meta);

/// The DSSE envelope over `payload` (report.json's bytes), as canonical JSON bytes.
[[nodiscard]] std::string make_envelope(const std::string &payload, const signing_key &key);

} // namespace prereg
