// The bytes model: every operation's is derived from its descriptor (spec/operation.hpp;
// docs/analysis.md states the rule and each operation's formula).
#include "spec/bytes_model.hpp"

#include "prereg/error.hpp"
#include "spec/operation.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace prereg {
namespace {

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) {
    throw invalid_input("bytes model overflows 64 bits");
  }
  return a * b;
}

} // namespace

std::uint64_t bytes_per_invocation(const std::string &op, dtype type, pass_kind pass,
                                   std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0) {
    throw invalid_input(fmt::format("negative shape {}x{} in the bytes model", rows, cols));
  }
  const operation_desc *d = find_operation(op);
  if (d == nullptr)
    throw invalid_input(fmt::format("the bytes model knows no operation '{}'", op));
  return d->bytes_per_invocation(type, pass, d->shape_of(rows, cols));
}

std::uint64_t bytes_per_step(const std::string &op, dtype type, pass_kind pass, std::int64_t rows,
                             std::int64_t cols, std::int64_t repeat) {
  if (repeat < 1)
    throw invalid_input(fmt::format("repeat {} is below 1", repeat));
  return checked_mul(bytes_per_invocation(op, type, pass, rows, cols),
                     static_cast<std::uint64_t>(repeat));
}

std::uint64_t bytes_per_step(const std::string &op, dtype type, const cell_key &k,
                             std::int64_t repeat) {
  if (!k.named())
    return bytes_per_step(op, type, k.pass, k.rows, k.cols, repeat);
  if (repeat < 1)
    throw invalid_input(fmt::format("repeat {} is below 1", repeat));
  const operation_desc *d = find_operation(op);
  if (d == nullptr)
    throw invalid_input(fmt::format("the bytes model knows no operation '{}'", op));
  return checked_mul(d->bytes_per_invocation(type, k.pass, key_shape(*d, k)),
                     static_cast<std::uint64_t>(repeat));
}

namespace {

const operation_desc &known(const std::string &op) {
  const operation_desc *d = find_operation(op);
  if (d == nullptr)
    throw invalid_input(fmt::format("the bytes model knows no operation '{}'", op));
  return *d;
}

shape shape_of_key(const operation_desc &d, const cell_key &k) {
  if (k.named())
    return key_shape(d, k);
  if (k.rows < 0 || k.cols < 0)
    throw invalid_input(fmt::format("negative shape {}x{} in the bytes model", k.rows, k.cols));
  return d.shape_of(k.rows, k.cols);
}

} // namespace

op_traffic traffic_per_step(const std::string &op, dtype type, const cell_key &k,
                            std::int64_t repeat) {
  if (repeat < 1)
    throw invalid_input(fmt::format("repeat {} is below 1", repeat));
  const operation_desc &d = known(op);
  const op_traffic one = d.traffic_per_invocation(type, k.pass, shape_of_key(d, k));
  const auto r = static_cast<std::uint64_t>(repeat);
  return {checked_mul(one.read, r), checked_mul(one.write, r)};
}

std::optional<std::uint64_t> flops_per_step(const std::string &op, dtype type, const cell_key &k,
                                            std::int64_t repeat) {
  if (repeat < 1)
    throw invalid_input(fmt::format("repeat {} is below 1", repeat));
  const operation_desc &d = known(op);
  const auto one = d.flops_per_invocation(type, k.pass, shape_of_key(d, k));
  if (!one)
    return std::nullopt;
  return checked_mul(*one, static_cast<std::uint64_t>(repeat));
}

std::string compute_type(const std::string &op, dtype type, pass_kind pass) {
  return known(op).compute_type(type, pass);
}

double tflops(std::uint64_t flops, double time_ms) {
  if (!(time_ms > 0.0) || !std::isfinite(time_ms))
    return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(flops) / (time_ms * 1e-3) / 1e12;
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
