// The protocol's decision criteria: `analysis` (statistic, confidence, bootstrap, stability),
// `correctness` (tolerances) and prereg: 2 `replication` (how devices' verdicts pool).
#include "spec/protocol_sections.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace prereg::protocol_detail {

analysis_spec read_analysis(const fields &top) {
  analysis_spec out;
  const node *analysis_node = top.optional("analysis");
  if (analysis_node == nullptr)
    return out;
  const fields a(*analysis_node, "analysis",
                 {"statistic", "confidence", "bootstrap_resamples", "unstable_iqr_ratio"});
  if (const node *n = a.optional("statistic"))
    out.statistic = as_enum<statistic_kind>(*n, "analysis.statistic",
                                            {{"median", statistic_kind::median},
                                             {"mean", statistic_kind::mean},
                                             {"min", statistic_kind::min}});
  if (const node *n = a.optional("confidence")) {
    out.confidence = as_float(*n, "analysis.confidence");
    if (!(out.confidence > 0.5 && out.confidence < 1))
      fail(*n, fmt::format("analysis.confidence must be above 0.5 and below 1, got {}",
                           message_excerpt(n->value)));
  }
  if (const node *n = a.optional("bootstrap_resamples"))
    out.bootstrap_resamples =
        as_int(*n, "analysis.bootstrap_resamples", 100, max_bootstrap_resamples);
  if (const node *n = a.optional("unstable_iqr_ratio")) {
    out.unstable_iqr_ratio = as_float(*n, "analysis.unstable_iqr_ratio");
    if (!(out.unstable_iqr_ratio > 0))
      fail(*n, fmt::format("analysis.unstable_iqr_ratio must be above 0, got {}",
                           message_excerpt(n->value)));
  }
  return out;
}

correctness_spec read_correctness(const fields &top, dtype type, const operation_desc &op) {
  correctness_spec out = default_tolerance(type);
  for (const auto &t : op.tolerances) // an operation file's own default for the dtype
    if (t.type == type)
      out = {t.rtol, t.atol};
  const node *correctness_node = top.optional("correctness");
  if (correctness_node == nullptr)
    return out;
  const fields c(*correctness_node, "correctness", {"rtol", "atol"});
  for (auto [key, target] : {std::pair{"rtol", &out.rtol}, std::pair{"atol", &out.atol}}) {
    if (const node *n = c.optional(key)) {
      *target = as_float(*n, c.path(key));
      if (*target < 0)
        fail(*n,
             fmt::format("{} must be 0 or more, got {}", c.path(key), message_excerpt(n->value)));
    }
  }
  return out;
}

replication_spec read_replication(const node &n) {
  const fields r(n, "replication", {"devices", "rule"});
  replication_spec out;
  out.devices = as_int(r.required("devices"), "replication.devices", 2, 1000);
  const node &rule = r.required("rule");
  const std::string text = as_string(rule, "replication.rule");
  if (text == "all") {
    out.threshold = out.devices;
  } else if (text == "majority") {
    out.threshold = out.devices / 2 + 1;
  } else if (text.starts_with("at least ") && text.size() > 9 && text.size() <= 13 &&
             std::all_of(text.begin() + 9, text.end(),
                         [](char c) { return c >= '0' && c <= '9'; }) &&
             text[9] != '0') {
    out.threshold = std::stoll(text.substr(9));
    if (out.threshold > out.devices)
      fail(rule, fmt::format("replication.rule {} asks more devices than replication.devices {}",
                             message_excerpt(text), out.devices));
  } else {
    fail(rule, fmt::format("replication.rule must be all | majority | \"at least K\" (K from 1 "
                           "to devices), got {}",
                           strict_yaml::describe(rule)));
  }
  out.rule = text;
  return out;
}

} // namespace prereg::protocol_detail
