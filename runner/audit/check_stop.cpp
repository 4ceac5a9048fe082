// Part of the `statistics` check: under a protocol's stopping rule, each cell's sample count and
// stop record replayed from its samples (docs/audit.md, "The stopping rule").
#include "audit/checks.hpp"

#include "base/rng.hpp"
#include "spec/stop_rule.hpp"

#include <fmt/format.h>

namespace prereg::audit_detail {

std::string check_stop_rule(const audit_context &ctx) {
  const protocol proto = ctx.proto();
  const raw_run raw = ctx.raw();
  const auto &rule = proto.measurement.stop;
  if (!rule) {
    for (const auto &c : raw.cells)
      if (c.stop)
        fail(fmt::format("cell {} has a stop record, but the protocol has no stopping rule",
                         cell_label(c.key)));
    return "";
  }
  const std::uint64_t plan_seed = seed_from_hash(ctx.doc(report_part::protocol).protocol.hash);
  std::vector<std::string> bad;
  std::size_t precise = 0;
  for (const auto &c : raw.cells) {
    if (!c.stop) {
      bad.push_back(fmt::format("{} has no stop record", cell_label(c.key)));
      continue;
    }
    const std::string why =
        stop_replay_problem(*rule, proto.analysis.confidence, stop_seed(plan_seed, c.key),
                            c.samples_ms, *c.stop, c.error.has_value());
    if (!why.empty())
      bad.push_back(fmt::format("{} {}", cell_label(c.key), why));
    precise += c.stop->reason == "precision" ? 1 : 0;
  }
  if (!bad.empty())
    fail("the stopping rule does not explain the sample counts: " + join_some(bad));
  return fmt::format("; the stopping rule (rel_ci {:g}, min {}, max {}, max_seconds {:g}) "
                     "replayed explains every cell's count ({} of {} stopped for precision)",
                     rule->rel_ci, rule->min, rule->max, rule->max_seconds, precise,
                     raw.cells.size());
}

} // namespace prereg::audit_detail
