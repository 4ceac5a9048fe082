// Two facts that explain a report's numbers (docs/report.md, "How the times were taken"): the
// cache policy of its samples and where its copy ceiling came from. Shown by report.md's and
// report.html's Summary (renderer 6) and by the summary `run` and `try` print.
#pragma once

#include "model/report_model.hpp"

#include <optional>
#include <string>

namespace prereg::render {

/// The cache policy: flushed before each sample (the flush's size and method, the last-level
/// cache's size) and what that means for the times, or not flushed; and how to change it.
[[nodiscard]] std::string cache_policy_text(const report_document &report);

/// Where the copy ceiling came from: "measured in this run: ..." or "reused from RUN, measured
/// N min before this run: ..." (instrument.ceiling_reused, schema_version 8).
[[nodiscard]] std::string ceiling_source_text(const report_document &report);

/// The age of a reused ceiling at the run's start [s] (run.started_at - the entry's
/// measured_at), or nullopt when the ceiling was measured or a time does not read.
[[nodiscard]] std::optional<double> reused_ceiling_age_s(const report_document &report);

} // namespace prereg::render
