// The lower bounds on a protocol's measuring and analysis time (protocol_budget.hpp).
#include "spec/protocol_budget.hpp"
#include "spec/records.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg::protocol_detail {
namespace {

// A lower bound on the time a protocol takes to measure, to refuse one that could never finish
// and to say how long one refused by count would take. Assumptions (docs/hardening.md): every
// timed or warm-up invocation takes at least 1 us and moves at least 2 (fwd) or 5 (fwd+bwd)
// [rows, cols] tensors at 10 TB/s on cuda or 1 TB/s on cpu, faster than any device today;
// cache flushes, correctness checks and the analysis are not counted. Over named axes (no
// rows x cols) the tensors' sizes are the operation's, unknown here: only the 1 us floor counts.
constexpr double assumed_floor_s = 1e-6;

double assumed_bytes_per_s(const std::string &device) { return device == "cuda" ? 10e12 : 1e12; }

double shape_elements(const cell_key &k) {
  return k.named() ? 0.0 : static_cast<double>(k.rows) * static_cast<double>(k.cols);
}

} // namespace

std::string human_duration(double s) {
  if (s < 120)
    return fmt::format("{:.0f} seconds", s);
  if (s < 2 * 3600.0)
    return fmt::format("{:.0f} minutes", s / 60);
  if (s < 2 * 86400.0)
    return fmt::format("{:.0f} hours", s / 3600);
  if (s < 2 * 365.25 * 86400)
    return fmt::format("{:.0f} days", s / 86400);
  return fmt::format("{:.3g} years", s / (365.25 * 86400));
}

double estimated_seconds(const protocol &p) {
  const double bandwidth = assumed_bytes_per_s(p.device);
  const double element = static_cast<double>(element_bytes(p.type));
  double total = 0;
  for (const auto &arm : p.arms)
    for (const auto pass : p.passes)
      for (const auto &k : protocol_shapes(p)) {
        const double tensors = pass == pass_kind::fwd ? 2 : 5;
        const double bytes = tensors * shape_elements(k) * element;
        const double per_invocation = std::max(assumed_floor_s, bytes / bandwidth);
        total += per_invocation * static_cast<double>(arm.repeat) *
                 static_cast<double>(p.measurement.repetitions + p.measurement.warmup);
      }
  return total;
}

std::string estimate_text(const protocol &p) {
  return fmt::format("at the very least {} (assuming 1 us per invocation and {:g} TB/s, flushes "
                     "not counted)",
                     human_duration(estimated_seconds(p)), assumed_bytes_per_s(p.device) / 1e12);
}

} // namespace prereg::protocol_detail
