// The decision rule (docs/analysis.md section 5): a seeded bootstrap per selected cell gives p, the
// fraction of resamples in which a prediction's `expect` holds; p decides the verdict.
#pragma once

#include "base/expr.hpp"
#include "base/json.hpp"
#include "base/rng.hpp"
#include "model/report_model.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// The value of each (metric, arm) an expression reads, in one resample of one cell.
using metric_lookup = std::function<double(const metric_ref &)>;
/// Whether a prediction's `expect` holds for the given metric values.
using predicate = std::function<bool(const metric_lookup &)>;

/// A prediction ready to judge: its predicate and every reference it reads, in first-use
/// order (as `expectation::references()` gives them; this order fixes the resampling order).
struct prediction_check {
  predicate holds;
  std::vector<metric_ref> refs;
};

/// The seed of the bootstrap generator: stream_seed(seed_from_hash(hash), bootstrap).
[[nodiscard]] std::uint64_t bootstrap_seed(std::string_view protocol_hash);

/// Judges one prediction over its selected cells, advancing `gen` in the documented order, by
/// the verdict rules of `analysis` (report_analysis_version; 1: reports made before analysis 2).
/// Throws `error` (exit 2) if `check` names an arm the protocol lacks or the protocol's
/// bootstrap_resamples is below 1.
[[nodiscard]] prediction_result evaluate_prediction(const protocol &proto,
                                                    const prediction_spec &spec,
                                                    const prediction_check &check,
                                                    const raw_run &run, rng &gen,
                                                    int analysis = report_analysis_version);

/// Judges every prediction of `proto` (checks[i] belongs to proto.predictions[i]) in
/// protocol order with one generator seeded by bootstrap_seed(protocol_hash).
[[nodiscard]] std::vector<prediction_result>
evaluate_predictions(const protocol &proto, std::string_view protocol_hash,
                     std::span<const prediction_check> checks, const raw_run &run,
                     int analysis = report_analysis_version);

} // namespace prereg
