// The engine's memory estimate of a cell (device_cannot_run, measure.hpp; docs/engine.md):
// its buffer sets, the arm's scratch and the instrument against the device's budget.
#include "engine/buffers.hpp"
#include "engine/measure.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {
namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;

} // namespace

std::optional<std::string> device_cannot_run(const device &dev, const operation_desc &op,
                                             const arm_info &arm, const arm_spec &spec,
                                             pass_kind pass, std::int64_t rows, std::int64_t cols,
                                             dtype type) {
  return device_cannot_run(dev, op, arm, spec, cell_key{{}, pass, rows, cols, {}}, type);
}

std::optional<std::string> device_cannot_run(const device &dev, const operation_desc &op,
                                             const arm_info &arm, const arm_spec &spec,
                                             const cell_key &k, dtype type) {
  using engine_detail::rotation_blocks;
  const pass_kind pass = k.pass;
  const auto [rows, cols] = flat_rows_cols(k);
  if (auto why = dev.cannot_take(arm, pass, rows, cols))
    return why;
  if (spec.launch == launch_mode::graph)
    if (auto why = dev.cannot_capture())
      return fmt::format("launch: graph: {}", *why);
  const shape s = key_shape(op, k);
  const auto sets =
      static_cast<double>(rotation_blocks * std::max<std::int64_t>(spec.repeat, 1) + 1);
  const auto set = static_cast<long double>(engine_detail::set_bytes(op, type, pass, s));
  long double reference = 0; // inputs and reference outputs in float64, on the host
  for (std::size_t i = 0; i < op.tensors.size(); ++i)
    if (op.used_in(i, pass))
      reference += 2 * 8 * static_cast<long double>(op.elements(i, s));
  const long double scratch =
      static_cast<long double>(scratch_bytes(arm, pass, rows, cols, dev.processors()));
  const long double instrument = static_cast<long double>(dev.instrument().flush_bytes);
  long double need = static_cast<long double>(sets) * set + scratch + instrument;
  if (dev.kind() == "cpu")
    need += reference; // host memory is the device's memory
  const auto budget = static_cast<long double>(dev.memory_budget());
  if (need <= budget)
    return std::nullopt;
  return fmt::format("{} {} needs about {:.2f} GiB ({} buffer set(s) of {:.3f} GiB, {:.3f} GiB "
                     "the arm allocates, {:.3f} GiB instrument{}), more than the {:.2f} GiB the "
                     "{} device allows a cell",
                     arm.name, shape_label(k), static_cast<double>(need) / gib, sets,
                     static_cast<double>(set) / gib, static_cast<double>(scratch) / gib,
                     static_cast<double>(instrument) / gib,
                     dev.kind() == "cpu" ? fmt::format(", {:.3f} GiB float64 reference",
                                                       static_cast<double>(reference) / gib)
                                         : std::string(),
                     static_cast<double>(budget) / gib, dev.kind());
}

} // namespace prereg
