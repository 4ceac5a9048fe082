// The bytes model of each operation and pass; the formulas are documented in docs/analysis.md.
#include "prereg/bytes_model.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace prereg {
namespace {

constexpr std::uint64_t stat_bytes = 4; // mean and rstd are fp32

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) {
    throw invalid_input("bytes model overflows 64 bits");
  }
  return a * b;
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a) {
    throw invalid_input("bytes model overflows 64 bits");
  }
  return a + b;
}

} // namespace

std::uint64_t bytes_per_invocation(std::string_view op, dtype type, pass_kind pass,
                                   std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0) {
    throw invalid_input(fmt::format("negative shape {}x{} in the bytes model", rows, cols));
  }
  const auto m = static_cast<std::uint64_t>(rows);
  const auto n = static_cast<std::uint64_t>(cols);
  const std::uint64_t s = element_bytes(type);
  const std::uint64_t mns = checked_mul(checked_mul(m, n), s); // one [rows, cols] tensor
  const std::uint64_t ns = checked_mul(n, s);                  // one [cols] vector
  const std::uint64_t m4 = checked_mul(m, stat_bytes);         // one [rows] fp32 vector
  // Temporary: a switch on the name until the model moves onto the operation descriptor.
  if (op != "layernorm" && op != "rmsnorm")
    throw std::logic_error("no bytes model for operation " + std::string(op));
  const bool layernorm = op == "layernorm";
  // fwd: read x, write y; read gamma (and beta); write rstd (and mean).
  const std::uint64_t vectors = layernorm ? 2 : 1;
  std::uint64_t total = checked_add(checked_mul(mns, 2), checked_mul(ns, vectors));
  total = checked_add(total, checked_mul(m4, vectors));
  if (pass == pass_kind::fwd_bwd) {
    // bwd: read x and dy, write dx; read gamma; read rstd (and mean); write dgamma (and dbeta).
    total = checked_add(total, checked_mul(mns, 3));
    total = checked_add(total, ns);
    total = checked_add(total, checked_mul(m4, vectors));
    total = checked_add(total, checked_mul(ns, vectors));
  }
  return total;
}

std::uint64_t bytes_per_step(std::string_view op, dtype type, pass_kind pass, std::int64_t rows,
                             std::int64_t cols, std::int64_t repeat) {
  if (repeat < 1)
    throw invalid_input(fmt::format("repeat {} is below 1", repeat));
  return checked_mul(bytes_per_invocation(op, type, pass, rows, cols),
                     static_cast<std::uint64_t>(repeat));
}

double gbps(std::uint64_t bytes, double time_ms) {
  if (!(time_ms > 0.0) || !std::isfinite(time_ms))
    return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(bytes) / (time_ms * 1e-3) / 1e9;
}

double pct_ceiling(double gbps, double ceiling_gbps) {
  if (!(ceiling_gbps > 0.0) || !std::isfinite(ceiling_gbps)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return 100.0 * gbps / ceiling_gbps;
}

} // namespace prereg
