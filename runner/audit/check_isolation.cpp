// The `isolation` check: the isolation a report claims follows from the escapes its sandbox's
// probes tried (docs/audit.md, "isolation"; since schema_version 8).
#include "audit/checks.hpp"

#include <fmt/format.h>

namespace prereg::audit_detail {

std::string check_isolation(const audit_context &ctx) {
  const report_document &doc = ctx.doc(report_part::run);
  if (!doc.run.isolation)
    return "no isolation recorded (measured in the run's own process, or written before "
           "run.isolation existed)";
  const report_isolation &i = *doc.run.isolation;
  if (i.level.empty()) // schema_version 4 to 7: layers as configured, no probes
    return fmt::format("{} with {} layer(s), as recorded before schema_version 8 (no probes to "
                       "check it against)",
                       isolation_mode(i), i.layers.size());
  if (const auto problems = isolation_problems(i); !problems.empty())
    fail(join_some(problems));
  std::size_t contained = 0, escaped = 0, not_tried = 0;
  for (const auto &p : i.probes) {
    contained += p.outcome == "contained" ? 1 : 0;
    escaped += p.outcome == "escaped" ? 1 : 0;
    not_tried += p.outcome == "not-tried" ? 1 : 0;
  }
  return fmt::format("{} follows from its {} layer(s) and {} probe(s): {} escape(s) refused, {} "
                     "got past a wall no layer of the report claims, {} not tried",
                     i.level, i.layers.size(), i.probes.size(), contained, escaped, not_tried);
}

} // namespace prereg::audit_detail
