// The tables of what the run concluded: predictions, defects, deviations, correctness.
#include "report/render/verdict_tables.hpp"

#include "report/render/body.hpp"
#include "report/render/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace prereg::render {
namespace {

// Over named axes, each axis in the operation's order, then the pass.
std::string at_text(const view &v, const json &at) {
  std::vector<std::string> keys{"rows", "cols"};
  if (is_named(v))
    keys = v.axis_names;
  keys.emplace_back("pass");
  std::vector<std::string> parts;
  for (const auto &k : keys)
    if (at.is_object() && at.contains(k))
      parts.push_back(fmt::format("{} {}", k, list_text(at[k])));
  return parts.empty() ? std::string("every cell") : join(parts, "; ");
}

const json &spec_json(const view &v, const std::string &id) {
  for (const json &p : child(*v.body, "predictions"))
    if (text(p, "id") == id)
      return p;
  return null_json();
}

std::string cell_ref_text(const std::optional<cell_key> &cell) {
  if (!cell)
    return "whole run";
  return fmt::format("{} {} {}", cell->arm, to_string(cell->pass), key_shape_text(*cell));
}

std::string evidence_text(const json &evidence) {
  if (!evidence.is_object())
    return evidence.is_null() ? "" : value_text(evidence);
  std::vector<std::string> items;
  for (const auto &[k, x] : evidence.items())
    items.push_back(k + " = " + value_text(x));
  return join(items, "; ");
}

// The checks of one arm and pass, summed.
struct arm_checks {
  std::size_t checks = 0, failed = 0, unwritten = 0;
  std::optional<double> abs, rel;
};

std::string failure_text(const report_correctness &c) {
  std::string f =
      fmt::format("{} {} {}: max abs error {}, max rel error {}", c.key.arm, to_string(c.key.pass),
                  key_shape_text(c.key), error_text(finite(c.max_abs_error)),
                  error_text(finite(c.max_rel_error)));
  if (c.unwritten)
    f += ", some output unwritten";
  if (!c.detail.empty())
    f += " — " + c.detail;
  return f;
}

void add(arm_checks &a, const report_correctness &c) {
  ++a.checks;
  if (c.unwritten)
    ++a.unwritten;
  if (const auto e = finite(c.max_abs_error))
    a.abs = std::max(a.abs.value_or(*e), *e);
  if (const auto e = finite(c.max_rel_error))
    a.rel = std::max(a.rel.value_or(*e), *e);
  if (!c.passed)
    ++a.failed;
}

std::vector<span> per_arm_row(const std::pair<std::string, std::string> &key, const arm_checks &a) {
  span failed = plain(fmt::format("{}", a.failed));
  if (a.failed > 0) {
    failed.strong = true;
    failed.cls = "fail";
  }
  return {code(key.first), plain(key.second),        plain(fmt::format("{}", a.checks)),
          failed,          plain(error_text(a.abs)), plain(error_text(a.rel))};
}

} // namespace

std::string prediction_at(const view &v, const std::string &id) {
  return at_text(v, child(spec_json(v, id), "at"));
}

table prediction_summary(const view &v) {
  table t{{plain("prediction"), plain("verdict"), plain("criterion"), plain("at")},
          {},
          {},
          true,
          "predictions"};
  for (const prediction_result &p : v.report->predictions) {
    const std::string verdict_name(to_string(p.verdict));
    span verdict = plain(verdict_name);
    verdict.strong = true;
    verdict.cls = "verdict " + verdict_name;
    t.rows.push_back({code(p.id), verdict, code(p.expect), plain(prediction_at(v, p.id))});
  }
  return t;
}

table prediction_cells(const prediction_result &p) {
  table t{{plain("cell"), plain("p")}, {false, true}, {}, false, "pcells"};
  for (const cell_p &c : p.cells)
    t.rows.push_back({plain(fmt::format("{} {}", to_string(c.pass),
                                        key_shape_text({"", c.pass, c.rows, c.cols, c.shape}))),
                      plain(p_text(c.p))});
  return t;
}

table defects_table(const view &v) {
  table t{
      {plain("code"), plain("cell"), plain("message"), plain("evidence")}, {}, {}, true, "defects"};
  for (const report_defect &d : v.report->defects)
    t.rows.push_back({code(d.code), plain(cell_ref_text(d.cell)), plain(d.message),
                      plain(evidence_text(d.evidence))});
  return t;
}

table deviations_table(const view &v) {
  table t{{plain("kind"), plain("cell"), plain("message"), plain("details")},
          {},
          {},
          true,
          "deviations"};
  for (const report_deviation &d : v.report->deviations)
    t.rows.push_back({code(d.kind), plain(cell_ref_text(d.cell)), plain(d.message),
                      plain(evidence_text(d.extra))});
  return t;
}

correctness_summary summarise_correctness(const view &v) {
  std::map<std::pair<std::string, std::string>, arm_checks> by;
  std::vector<std::pair<std::string, std::string>> order;
  correctness_summary s;
  for (const report_correctness &c : v.report->correctness) {
    const std::pair key{c.key.arm, std::string(to_string(c.key.pass))};
    if (!by.contains(key))
      order.push_back(key);
    add(by[key], c);
    ++s.checks;
    if (!c.passed) {
      ++s.failed;
      s.failures.push_back(failure_text(c));
    }
  }
  s.per_arm = {{plain("arm"), plain("pass"), plain("shapes checked"), plain("failed"),
                plain("max abs error"), plain("max rel error")},
               {false, false, true, true, true, true},
               {},
               true,
               "correctness"};
  for (const auto &key : order)
    s.per_arm.rows.push_back(per_arm_row(key, by.at(key)));
  return s;
}

} // namespace prereg::render
