// The protocol's `measurement` section, and the refusal of a protocol that has too many timed
// invocations or would take too long to measure.
#include "spec/protocol_budget.hpp"
#include "spec/protocol_sections.hpp"

namespace prereg::protocol_detail {
namespace {

// At `reps` (measurement.repetitions): too many invocations, or too long to measure.
void check_measuring_budget(const node &reps, const protocol &p) {
  std::int64_t invocations = 0;
  const auto per_arm_cells = static_cast<std::int64_t>(p.passes.size() * p.shape_count());
  std::int64_t repeat_sum = 0;
  for (const auto &a : p.arms)
    repeat_sum += a.repeat;
  invocations = per_arm_cells * (p.measurement.repetitions + p.measurement.warmup) * repeat_sum;
  if (invocations > max_invocations)
    fail(reps, fmt::format("too many timed invocations: {} cells per arm x ({} repetitions + {} "
                           "warmup) x {} summed repeat over arms = {}, more than the limit of "
                           "{}; it would take {}",
                           per_arm_cells, p.measurement.repetitions, p.measurement.warmup,
                           repeat_sum, invocations, max_invocations, estimate_text(p)));
  if (estimated_seconds(p) > max_estimated_s)
    fail(reps, fmt::format("measuring would take {}, more than the limit of {} days: lower "
                           "the repetitions or the shapes",
                           estimate_text(p), max_estimated_s / 86400));
}

/// prereg: 2 `measurement.stop` (docs/protocol.md): {rel_ci, min, max, max_seconds}.
stop_spec read_stop(const node &n, const protocol &p) {
  if (p.schema == 1)
    fail(n, "measurement.stop needs prereg: 2");
  const fields f(n, "measurement.stop", {"rel_ci", "min", "max", "max_seconds"});
  stop_spec s;
  const node &rel = f.required("rel_ci");
  s.rel_ci = as_float(rel, "measurement.stop.rel_ci");
  if (!(s.rel_ci > 0 && s.rel_ci < 1))
    fail(rel,
         fmt::format("measurement.stop.rel_ci must be above 0 and below 1, got {:g}", s.rel_ci));
  s.min = as_int(f.required("min"), "measurement.stop.min", 3, max_repetitions);
  const node &mx = f.required("max");
  s.max = as_int(mx, "measurement.stop.max", 3, max_repetitions);
  if (s.max < s.min)
    fail(mx,
         fmt::format("measurement.stop.max ({}) is below measurement.stop.min ({})", s.max, s.min));
  const node &secs = f.required("max_seconds");
  s.max_seconds = as_float(secs, "measurement.stop.max_seconds");
  if (!(s.max_seconds > 0 && s.max_seconds <= 86400))
    fail(secs, fmt::format("measurement.stop.max_seconds must be above 0 and at most 86400, "
                           "got {:g}",
                           s.max_seconds));
  return s;
}

/// prereg: 2 `measurement.call_timeout_s`: above 0, at most a day.
double read_call_timeout(const node &n, const protocol &p) {
  if (p.schema == 1)
    fail(n, "measurement.call_timeout_s needs prereg: 2");
  const double s = as_float(n, "measurement.call_timeout_s");
  if (!(s > 0 && s <= 86400))
    fail(n,
         fmt::format("measurement.call_timeout_s must be above 0 and at most 86400, got {:g}", s));
  return s;
}

} // namespace

void read_measurement(const fields &top, protocol &p) {
  const fields m(top.required("measurement"), "measurement",
                 {"repetitions", "warmup", "l2_flush", "order", "kernel_clock", "stop", "ceiling",
                  "call_timeout_s"});
  const node *stop = m.optional("stop");
  if (stop != nullptr && m.optional("repetitions") != nullptr)
    fail(*m.optional("repetitions"),
         "measurement.repetitions and measurement.stop exclude each other: the stopping rule "
         "decides the repetitions (up to stop.max)");
  const node &reps = stop != nullptr ? *stop : m.required("repetitions");
  if (stop != nullptr) {
    p.measurement.stop = read_stop(*stop, p);
    p.measurement.repetitions = p.measurement.stop->max;
  } else {
    p.measurement.repetitions = as_int(reps, "measurement.repetitions", 3, max_repetitions);
  }
  if (const node *n = m.optional("warmup"))
    p.measurement.warmup = as_int(*n, "measurement.warmup", 0, 100000);
  if (const node *n = m.optional("l2_flush"))
    p.measurement.l2_flush = as_bool(*n, "measurement.l2_flush");
  if (const node *n = m.optional("kernel_clock")) {
    if (p.schema == 1)
      fail(*n, "measurement.kernel_clock needs prereg: 2");
    p.measurement.kernel_clock = as_bool(*n, "measurement.kernel_clock");
  }
  if (const node *n = m.optional("call_timeout_s"))
    p.measurement.call_timeout_s = read_call_timeout(*n, p);
  if (const node *n = m.optional("ceiling")) {
    if (p.schema == 1)
      fail(*n, "measurement.ceiling needs prereg: 2");
    p.measurement.reuse_ceiling =
        as_enum<bool>(*n, "measurement.ceiling", {{"measure", false}, {"reuse", true}});
  }
  if (const node *n = m.optional("order"))
    p.measurement.order = as_enum<order_mode>(
        *n, "measurement.order",
        {{"interleaved", order_mode::interleaved}, {"sequential", order_mode::sequential}});
  check_measuring_budget(reps, p);
}

} // namespace prereg::protocol_detail

namespace prereg {

double measurement_spec::call_timeout() const {
  return call_timeout_s.value_or(default_call_timeout_s);
}

} // namespace prereg
