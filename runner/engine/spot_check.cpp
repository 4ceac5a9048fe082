// The spot checks of a group's timed samples (docs/engine.md): seeded repetitions (and the
// last) whose window gets fresh host inputs with their float64 reference; after the window,
// the outputs are compared with it (a failure fails the cell's correctness record) and the
// inputs with what was uploaded (input-mutated).
#include "engine/gate.hpp"
#include "engine/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace prereg::engine_detail {
namespace {

/// Mixed into a group's input seed for the spot checks' choice and inputs.
constexpr std::uint64_t spot_stream = 0x5907c4ec5ull;

/// The input-mutated message for element j of tensor t: `was` and `now` hold its bytes.
std::string mutation(const operation_desc &op, std::size_t t, dtype et, std::size_t j,
                     const std::vector<std::uint8_t> &was, const std::vector<std::uint8_t> &now,
                     const shape &s, const std::string &context) {
  return fmt::format("{}{}: {} was {:.9g} before the call and {:.9g} after it", context,
                     op.tensors[t].name, element_name(op, t, static_cast<std::int64_t>(j), s),
                     reference::unpack(was, et)[0], reference::unpack(now, et)[0]);
}

/// The first element of tensor t that differs between `before` and `now` (which differ), as
/// the input-mutated message.
std::string mutation(const operation_desc &op, std::size_t t, dtype et,
                     const std::vector<std::uint8_t> &before, const std::vector<std::uint8_t> &now,
                     const shape &s, const std::string &context) {
  const std::size_t width = element_bytes(et);
  std::size_t j = 0;
  while (std::memcmp(&now[j * width], &before[j * width], width) == 0)
    ++j;
  const auto element = [&](const std::vector<std::uint8_t> &b) {
    const auto at = b.begin() + static_cast<std::ptrdiff_t>(j * width);
    return std::vector<std::uint8_t>(at, at + static_cast<std::ptrdiff_t>(width));
  };
  return mutation(op, t, et, j, element(before), element(now), s, context);
}

} // namespace

/// The spot-checked repetitions of this group (the same for every arm): seeded, and the last;
/// input_sets() - 1 of them (3 unless a grading asks otherwise). A grading's are distinct.
void group_timing::choose_spots() {
  // Under a stopping rule the spots lie among the stop.min samples every cell takes.
  const auto &stop = m_ctx.proto.measurement.stop;
  const std::int64_t reps = stop ? stop->min : m_ctx.proto.measurement.repetitions;
  const std::int64_t spots = m_ctx.proto.input_sets() - 1;
  if (reps <= 0)
    return;
  rng pick(m_group_seed ^ spot_stream);
  const bool distinct = m_ctx.proto.grading && spots <= reps; // the validator ensures it
  while (static_cast<std::int64_t>(m_spots.size()) + 1 < spots) {
    const auto r = static_cast<std::int64_t>(pick.below(static_cast<std::uint64_t>(reps)));
    if (distinct &&
        (r == reps - 1 || std::find(m_spots.begin(), m_spots.end(), r) != m_spots.end()))
      continue;
    m_spots.push_back(r);
  }
  m_spots.push_back(reps - 1);
}

/// The spot slot of repetition r, or -1.
std::int64_t group_timing::spot_slot(std::int64_t r) const {
  for (std::size_t m = 0; m < m_spots.size(); ++m)
    if (m_spots[m] == r)
      return static_cast<std::int64_t>(m);
  return -1;
}

/// The spot data of `slot`: made when it is not the one held.
const spot_data &group_timing::spot_for(std::int64_t slot) {
  const operation_desc &op = m_ctx.op;
  if (!m_spot || m_spot->slot != slot) {
    m_spot.reset();
    spot_data d;
    d.slot = slot;
    const std::uint64_t seed =
        shape_seed(m_ctx.plan.seed, m_pass, m_k0) ^
        rng(m_group_seed ^ spot_stream ^ static_cast<std::uint64_t>(slot + 1)).next();
    if (spot_on_device(d, seed)) {
      m_spot = std::move(d);
      return *m_spot;
    }
    d.ref = reference::random_tensors(op, m_shape, m_ctx.proto.type, seed);
    d.referenced = false; // computed after the window (reference_spot)
    d.bytes.resize(op.tensors.size());
    for (std::size_t t = 0; t < op.tensors.size(); ++t)
      if (op.tensors[t].role == tensor_role::input && op.used_in(t, m_pass))
        d.bytes[t] = reference::pack(d.ref[t], element_type(op, t, m_ctx.proto.type));
    m_spot = std::move(d);
  }
  return *m_spot;
}

/// The held slot's host reference, computed once, after its first checked window returned: no
/// part of it exists in the process while the arm's call runs (docs/engine.md).
void group_timing::reference_spot() {
  if (!m_spot || m_spot->referenced)
    return;
  const watched_call w(-1, -1, static_cast<int>(call_phase::reference));
  m_ctx.op.reference(m_ctx.op, m_shape, m_pass, m_spot->ref);
  m_spot->referenced = true;
}

/// The spot's inputs drawn on the device and their reference computed there, where the device
/// knows the operation; false (nothing held) where it does not or it could not be set up.
bool group_timing::spot_on_device(spot_data &d, std::uint64_t seed) {
  device_checks *checks = device_checks_for(m_ctx);
  if (checks == nullptr)
    return false;
  const operation_desc &op = m_ctx.op;
  const dtype type = m_ctx.proto.type;
  try {
    d.inputs = std::make_unique<input_copy>(m_ctx.dev, op, m_shape, type, m_pass);
    fill_checked_inputs(*checks, op, m_shape, type, m_pass, seed, d.inputs->ptrs());
    const watched_call w(-1, -1, static_cast<int>(call_phase::reference));
    d.on_device = reference_on_device(m_ctx, *checks, m_shape, m_pass, d.inputs->ptrs());
    m_ctx.dev.synchronize();
  } catch (const reference_failure &f) { // as the host path's call would fail
    std::rethrow_exception(f.original);
  } catch (const std::exception &) {
    if (m_ctx.dev.broken())
      throw;
    d.on_device.reset();
  }
  if (!d.on_device)
    d.inputs.reset();
  return d.on_device != nullptr;
}

/// The spot check after a window on `block`: outputs an outside arm returned are collected
/// first; then each invocation's outputs and inputs.
void group_timing::spot_check(cell_state &c, std::int64_t block, const spot_data &d) {
  ++c.record.spot_checks;
  const std::int64_t repeat_k = m_ctx.arms[c.index].spec->repeat;
  bool collected = false; // outputs an outside arm returned rather than wrote
  for (const auto &v :
       m_args[static_cast<std::size_t>(&c - m_cells.data())][static_cast<std::size_t>(block)])
    if (v.bound) {
      v.bound->collect();
      collected = true;
    }
  if (collected)
    m_ctx.dev.synchronize();
  const std::string sample = fmt::format("timed sample {}", c.samples);
  for (std::int64_t k = 0; k < repeat_k; ++k) {
    const buffer_set &set = set_of(block, k);
    const std::string context =
        repeat_k > 1 ? fmt::format("{} (invocation {}): ", sample, k) : sample + ": ";
    check_spot_outputs(c, set, d, context);
    check_spot_inputs(c, set, d, context);
  }
}

/// The outputs in `set` against the spot's reference, while the cell's correctness record
/// still passes: the first failure fails it.
void group_timing::check_spot_outputs(cell_state &c, const buffer_set &set, const spot_data &d,
                                      const std::string &context) {
  auto &records = m_ctx.raw.correctness;
  auto rec = std::find_if(records.begin(), records.end(),
                          [&](const correctness_record &r) { return r.key == c.record.key; });
  if (rec == records.end() || !rec->passed)
    return;
  correctness_record got;
  got.passed = true;
  const checked_reference ref = d.on_device ? checked_reference{nullptr, d.on_device.get()}
                                            : checked_reference{&d.ref, nullptr};
  check_outputs(m_ctx, m_pass, m_shape, set, ref, got, context, m_ctx.arms[c.index]);
  if (!got.passed) {
    rec->passed = false;
    rec->detail = got.detail;
    rec->unwritten = got.unwritten;
    rec->max_abs_error = std::max(rec->max_abs_error, got.max_abs_error);
    rec->max_rel_error = std::max(rec->max_rel_error, got.max_rel_error);
  }
}

/// The inputs in `set` against the spot's (the uploaded bytes, or the device's copy), until the
/// cell's first mutated input.
void group_timing::check_spot_inputs(cell_state &c, const buffer_set &set, const spot_data &d,
                                     const std::string &context) {
  const operation_desc &op = m_ctx.op;
  for (std::size_t t = 0; t < op.tensors.size() && !c.record.input_mutated; ++t) {
    const dtype et = element_type(op, t, m_ctx.proto.type);
    if (d.inputs) {
      if (d.inputs->at(t) == nullptr)
        continue;
      const std::size_t width = element_bytes(et);
      const std::int64_t j = device_checks_for(m_ctx)->first_difference(
          d.inputs->at(t), set.at(t), static_cast<std::size_t>(op.elements(t, m_shape)), width);
      if (j < 0)
        continue;
      std::vector<std::uint8_t> was(width), now(width);
      const std::size_t at = static_cast<std::size_t>(j) * width;
      m_ctx.dev.download(was.data(), static_cast<const std::uint8_t *>(d.inputs->at(t)) + at,
                         width);
      m_ctx.dev.download(now.data(), static_cast<const std::uint8_t *>(set.at(t)) + at, width);
      c.record.input_mutated =
          mutation(op, t, et, static_cast<std::size_t>(j), was, now, m_shape, context);
      continue;
    }
    if (d.bytes[t].empty())
      continue;
    std::vector<std::uint8_t> now(d.bytes[t].size());
    m_ctx.dev.download(now.data(), set.at(t), now.size());
    if (now == d.bytes[t])
      continue;
    c.record.input_mutated = mutation(op, t, et, d.bytes[t], now, m_shape, context);
  }
}

} // namespace prereg::engine_detail
