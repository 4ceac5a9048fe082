// The JSON of a cell's per-sample device state and of its stop record, one form for the
// measuring process's pipe and for report.json (docs/report.md, schema_version 7), and the
// clocks-event reasons that count as throttling (docs/analysis.md, `throttled`).
#pragma once

#include "base/json.hpp"
#include "spec/records.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace prereg {

/// NVML clocks-event reasons that lower the clocks against the kernel's will: software power
/// cap (0x4), hardware slowdown (0x8), software thermal (0x20), hardware thermal (0x40),
/// hardware power brake (0x80). Idle (0x1), application clocks (0x2), sync boost (0x10) and
/// display clocks (0x100) are not.
inline constexpr std::uint64_t throttle_reason_mask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// "sw-power-cap+hw-slowdown": the names of the throttling bits of `reasons`, in the mask's
/// order; "" when none.
[[nodiscard]] std::string throttle_reason_names(std::uint64_t reasons);

/// {sm_mhz, mem_mhz, power_w, temp_c, reasons}: one array per quantity, one value per sample
/// (null: unknown).
[[nodiscard]] json states_json(const std::vector<device_state_sample> &states);
/// Reads states_json's form with `samples` values each into `out`; returns what is wrong
/// ("sm_mhz has 3 values for 4 samples"), or "".
[[nodiscard]] std::string read_states_json(const json &j, std::size_t samples,
                                           std::vector<device_state_sample> &out);

/// {reason, rel_ci, ci_lo_ms, ci_hi_ms, seconds} (null: not computed).
[[nodiscard]] json stop_json(const stop_record &s);
/// Reads stop_json's form into `out`; returns what is wrong, or "".
[[nodiscard]] std::string read_stop_json(const json &j, stop_record &out);

} // namespace prereg
