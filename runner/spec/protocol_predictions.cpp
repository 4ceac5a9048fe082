// The protocol's predictions: ids, claims, the cells `at` selects and the `expect` expression
// (parsed against the arms and the schema), and the refusal of an analysis too long to run.
#include "spec/protocol_budget.hpp"
#include "spec/protocol_sections.hpp"

#include "base/expr.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>

namespace prereg::protocol_detail {
namespace {

constexpr std::size_t max_predictions = 256;
constexpr std::size_t max_claim_bytes = 1024;
constexpr std::size_t max_expect_bytes = 1024;

// One `at` dimension: a scalar or a list of values that must exist in `all`; normalised to
// the protocol's order. A missing key selects every value.
template <typename T, typename Parse>
std::vector<T> select(const node *n, const std::vector<T> &all, std::string_view what,
                      Parse parse_value, const std::function<std::string(const T &)> &show) {
  if (n == nullptr)
    return all;
  std::vector<const node *> values;
  if (n->k == node::kind::sequence) {
    for (const node &item : as_list(*n, what, strict_yaml::max_list_items))
      values.push_back(&item);
  } else {
    values.push_back(n);
  }
  std::vector<T> chosen;
  for (const node *v : values) {
    const T value = parse_value(*v);
    if (std::find(all.begin(), all.end(), value) == all.end()) {
      std::string listed;
      for (const auto &a : all)
        listed += (listed.empty() ? "" : ", ") + show(a);
      fail(*v, fmt::format("{} selects {}, which the protocol does not have (it has {})", what,
                           show(value), listed));
    }
    if (std::find(chosen.begin(), chosen.end(), value) != chosen.end())
      fail(*v, fmt::format("{} lists {} twice", what, show(value)));
    chosen.push_back(value);
  }
  std::vector<T> ordered;
  for (const auto &a : all)
    if (std::find(chosen.begin(), chosen.end(), a) != chosen.end())
      ordered.push_back(a);
  return ordered;
}

std::string show_int(const std::int64_t &v) { return std::to_string(v); }
std::string show_pass(const pass_kind &p) { return std::string(to_string(p)); }

// `at`: every dimension defaults to all of the protocol's values.
cell_selector read_at(const fields &pred, const operation_desc &op, const protocol &p) {
  cell_selector out{p.rows, p.cols, p.passes, {}};
  for (const auto &a : p.axes)
    out.named.push_back(a.extents);
  const node *at_node = pred.optional("at");
  if (at_node == nullptr)
    return out;
  std::vector<std::string_view> at_keys(op.axes.begin(), op.axes.end());
  if (!p.axes.empty()) {
    at_keys.clear();
    for (const auto &a : p.axes)
      at_keys.push_back(a.name);
  }
  at_keys.push_back("pass");
  const fields at(*at_node, pred.path("at"), at_keys);
  out.passes = select<pass_kind>(
      at.optional("pass"), p.passes, at.path("pass"),
      [&](const node &n) { return as_pass(n, at.path("pass")); }, show_pass);
  for (std::size_t i = 0; i < p.axes.size(); ++i) {
    const std::string &axis = p.axes[i].name;
    out.named[i] = select<std::int64_t>(
        at.optional(axis), p.axes[i].extents, at.path(axis),
        [&](const node &n) { return as_int(n, at.path(axis), 1, max_extent); }, show_int);
  }
  if (!p.axes.empty())
    return out;
  out.rows = select<std::int64_t>(
      at.optional("rows"), p.rows, at.path("rows"),
      [&](const node &n) { return as_int(n, at.path("rows"), 1, max_extent); }, show_int);
  out.cols = select<std::int64_t>(
      at.optional("cols"), p.cols, at.path("cols"),
      [&](const node &n) { return as_int(n, at.path("cols"), 1, max_extent); }, show_int);
  return out;
}

// The roofs' metrics: prereg: 2 only; tflops and pct_compute read the operation's FLOPs, which
// it must declare for every pass the prediction selects.
void check_roof_references(const expectation &parsed, const protocol &p, const operation_desc &op,
                           const std::vector<pass_kind> &passes, const std::string &where) {
  for (const auto &ref : parsed.references()) {
    if (!is_roof_metric(ref.what))
      continue;
    if (p.schema == 1)
      throw invalid_input(
          fmt::format("{}() reads the roofs and needs prereg: 2", to_string(ref.what)), where);
    // pct_roof reads no FLOPs; an operation file's stand-in (not loaded yet) declares nothing.
    if (ref.what == metric::pct_roof || op.tensors.empty())
      continue;
    for (const pass_kind pass : passes) {
      const op_pass_formulas *f = op.formulas_of(pass);
      if (f == nullptr || f->flops.empty())
        throw invalid_input(fmt::format("{}() reads the operation's FLOPs, and operation {} "
                                        "declares none for pass {}",
                                        to_string(ref.what), op.name, to_string(pass)),
                            where);
    }
  }
}

// What `parsed` reads that the protocol cannot supply: the kernel clock and regions in
// prereg: 1, the kernel clock when measurement.kernel_clock is false.
void check_references(const expectation &parsed, const protocol &p, const std::string &where) {
  if (p.schema == 1)
    for (const auto &ref : parsed.references())
      if (is_kernel_metric(ref.what) && ref.what != metric::kernel_share)
        throw invalid_input(
            fmt::format("{}() reads the kernel clock and needs prereg: 2", to_string(ref.what)),
            where);
  if (!p.measurement.kernel_clock)
    for (const auto &ref : parsed.references())
      if (is_kernel_metric(ref.what))
        throw invalid_input(fmt::format("{}() reads the kernel clock, which "
                                        "measurement.kernel_clock: false switches off",
                                        to_string(ref.what)),
                            where);
  if (p.schema == 1)
    for (const auto &r : parsed.references())
      if (r.what == metric::share || r.what == metric::kernel_share)
        throw invalid_input(fmt::format("{}(arm, \"label\") needs prereg: 2", to_string(r.what)),
                            where);
}

// The names an author may write in `expect` instead of an arm's id: its kernel, or the
// function or symbol and the file (without its extension) an outside arm runs.
arm_aliases expect_aliases(const protocol &p) {
  arm_aliases out;
  for (const auto &a : p.arms) {
    if (!a.outside()) {
      out.emplace_back(a.kernel, a.id);
      continue;
    }
    out.emplace_back(a.entry, a.id);
    out.emplace_back(std::filesystem::path(a.file).stem().string(), a.id);
  }
  return out;
}

// Parses `expect`; returns how many arms it involves (at least 1). A refusal names the
// prediction.
std::size_t parse_expect(const prediction_spec &s, const node &expect_node, const protocol &p,
                         const operation_desc &op, const std::vector<std::string> &arm_ids) {
  try {
    const expectation parsed =
        expectation::parse(s.expect, arm_ids, expect_node.where, expect_aliases(p));
    check_references(parsed, p, expect_node.where);
    check_roof_references(parsed, p, op, s.at.passes, expect_node.where);
    return std::max<std::size_t>(1, parsed.arms().size());
  } catch (const error &e) {
    throw invalid_input(fmt::format("prediction {}: expect: {}", s.id, e.what()), e.where());
  }
}

// One prediction; `analysis_s` grows by a lower bound on its bootstrap's time [s].
prediction_spec read_prediction(const node &item, std::size_t i, const operation_desc &op,
                                const protocol &p, const std::vector<std::string> &arm_ids,
                                double &analysis_s) {
  const fields pred(item, fmt::format("predictions[{}]", i), {"id", "claim", "at", "expect"});
  prediction_spec s;
  const node &id_node = pred.required("id");
  s.id = as_prediction_id(id_node, pred.path("id"));
  for (const auto &other : p.predictions)
    if (other.id == s.id)
      fail(id_node, fmt::format("duplicate prediction id '{}'", s.id));
  s.claim = as_text(pred.required("claim"), pred.path("claim"), max_claim_bytes);
  s.at = read_at(pred, op, p);
  const node &expect_node = pred.required("expect");
  s.expect = as_text(expect_node, pred.path("expect"), max_expect_bytes);
  const std::size_t involved = parse_expect(s, expect_node, p, op, arm_ids);
  analysis_s += static_cast<double>(s.at.passes.size() * s.at.shapes() * involved) *
                static_cast<double>(p.analysis.bootstrap_resamples) *
                static_cast<double>(p.measurement.repetitions) * assumed_resample_s;
  return s;
}

} // namespace

double read_predictions(const fields &top, const operation_desc &op, protocol &p) {
  std::vector<std::string> arm_ids;
  for (const auto &a : p.arms)
    arm_ids.push_back(a.id);
  const bool may_be_absent = top.optional("task") != nullptr || top.optional("grading") != nullptr;
  if (may_be_absent && top.optional("predictions") == nullptr)
    return 0; // a task or a grading's protocol (docs/grading.md)
  const auto &prediction_nodes =
      as_list(top.required("predictions"), "predictions", max_predictions);
  double analysis_s = 0; // a lower bound on the bootstrap's time [s]
  for (std::size_t i = 0; i < prediction_nodes.size(); ++i) {
    prediction_spec s = read_prediction(prediction_nodes[i], i, op, p, arm_ids, analysis_s);
    p.predictions.push_back(std::move(s));
  }
  return analysis_s;
}

void check_analysis_time(const fields &top, const protocol &p, double analysis_s) {
  if (analysis_s > max_estimated_s && top.optional("predictions") != nullptr)
    fail(top.required("predictions"),
         fmt::format("the analysis alone would take {} (bootstrap: {} resamples of {} samples "
                     "per involved arm and selected cell, at 1 ns a sample), more than the "
                     "limit of {} days: lower bootstrap_resamples, the repetitions or the cells "
                     "the predictions select",
                     human_duration(analysis_s), p.analysis.bootstrap_resamples,
                     p.measurement.repetitions, max_estimated_s / 86400));
}

} // namespace prereg::protocol_detail
