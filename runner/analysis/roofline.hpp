// A cell against the roofs (docs/analysis.md, "The roofs"): the bandwidth roof of its read/write
// mix, its share of it, its FLOP rate, its share of the compute ceiling and its arithmetic
// intensity, from the instrument's read, write, copy and compute ceilings.
#pragma once

#include "model/report_model.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <cstdint>

namespace prereg {

/// The bandwidth roof of a stream of `read` and `write` bytes [GB/s]: each written byte paired
/// with a read one costs what the copy ceiling's bytes cost, the rest what the read-only (or
/// write-only) stream's cost: `double(read + write) / t`, `t = (2 double(min)) / copy_gbps +
/// double(max - min) / (read_gbps or write_gbps)`, a term with no bytes left out. NaN without
/// bytes or where a ceiling the mix needs is not > 0 and finite.
[[nodiscard]] double mix_roof_gbps(std::uint64_t read, std::uint64_t write, double copy_gbps,
                                   double read_gbps, double write_gbps);

/// The compute ceiling of element type `type` [TFLOP/s]: NaN when the instrument has none, it
/// was not measured or has no samples.
[[nodiscard]] double compute_ceiling_tflops(const instrument_record &in, const std::string &type);

/// A cell's roofline numbers: `key` of `proto` at `repeat` invocations per step, whose step
/// took `statistic_ms` and moved its bytes model at `gbps`, against `in`'s roofs (which it
/// must have).
[[nodiscard]] report_roofline roofline_of(const protocol &proto, const cell_key &key,
                                          std::int64_t repeat, double statistic_ms, double gbps,
                                          std::uint64_t bytes_per_step,
                                          const instrument_record &in);

} // namespace prereg
