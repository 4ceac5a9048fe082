// The report (docs/report.md): report.json assembled from a run's raw record by the
// analysis modules, and the DSSE envelope that signs it.
#pragma once

#include "prereg/backend.hpp"
#include "prereg/crypto.hpp"
#include "prereg/json.hpp"
#include "prereg/store.hpp"

#include <string>
#include <vector>

namespace prereg {

inline constexpr int report_schema_version = 1;
inline constexpr const char *dsse_payload_type = "application/vnd.prereg.report+json";

/// Facts about the run that are not measurements.
struct run_meta {
  std::string run_id;      ///< the report folder's name
  std::int64_t attempt = 0; ///< this run's number among the protocol's runs in the ledger
  std::string started_at;  ///< RFC 3339 UTC
  std::string finished_at; ///< RFC 3339 UTC
  int device_ordinal = 0;
  std::vector<json> deviations; ///< found by the engine (skipped cells, device changes, ...)
};

/// The prediction checks of a protocol: each `expect` parsed against its arm ids.
[[nodiscard]] std::vector<json> judge_predictions(const protocol &proto, const std::string &hash,
                                                  const raw_run &raw);

/// The whole report.json object; analysis (statistics, defects, verdicts) happens here.
[[nodiscard]] json build_report(const frozen_protocol &fp, const raw_run &raw,
                                const run_meta &meta);

/// The DSSE envelope over `payload` (report.json's bytes), as canonical JSON bytes.
[[nodiscard]] std::string make_envelope(const std::string &payload, const signing_key &key);

} // namespace prereg
