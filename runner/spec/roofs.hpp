// The instrument's roofs (docs/engine.md, "The roofs"; docs/report.md, schema_version 8): their
// one JSON form for the measuring process's pipe and for report.json, and the rates each
// derives from its samples.
#pragma once

#include "base/json.hpp"
#include "spec/records.hpp"

#include <string>

namespace prereg {

/// A stream roof's bandwidth: gbps(bytes, median(samples_ms)) [GB/s]; NaN without samples.
[[nodiscard]] double stream_roof_gbps(const stream_roof &r);
/// A compute ceiling's rate: tflops(flops, median(samples_ms)) [TFLOP/s]; NaN when unknown or
/// without samples.
[[nodiscard]] double compute_roof_tflops(const compute_roof &r);
/// Sets every derived rate of `r` from its samples (stream_roof_gbps, compute_roof_tflops).
void derive_roofs(roofs_record &r);

/// {read: {method, bytes, samples_ms, gbps}, write: {...}, compute: {TYPE: {method, shape,
/// flops, samples_ms, tflops} | "unknown: WHY"}} (null: not finite).
[[nodiscard]] json roofs_json(const roofs_record &r);
/// Reads roofs_json's form into `out`; returns what is wrong ("read.samples_ms[2] is not a
/// finite, non-negative number"), or "".
[[nodiscard]] std::string read_roofs_json(const json &j, roofs_record &out);

/// What the recorded rates of `r` do not re-derive from its samples ("read.gbps is 3, its
/// samples give 4"), or "".
[[nodiscard]] std::string roofs_problem(const roofs_record &r);

} // namespace prereg
