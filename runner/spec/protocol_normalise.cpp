// The normalised protocol (docs/protocol.md, "Normalisation"): the JSON object with every
// default explicit that is hashed; what a schema leaves out stays absent so no hash moves.
#include "spec/protocol.hpp"

#include <string>
#include <utility>

namespace prereg {
namespace {

std::string_view name_of(launch_mode m) { return m == launch_mode::stream ? "stream" : "graph"; }
std::string_view name_of(order_mode m) {
  return m == order_mode::interleaved ? "interleaved" : "sequential";
}

json passes_json(const std::vector<pass_kind> &passes) {
  json out = json::array();
  for (const auto pass : passes)
    out.push_back(std::string(to_string(pass)));
  return out;
}

json arm_json(const arm_spec &a, std::int64_t schema) {
  json arm = {{"id", a.id}, {"launch", std::string(name_of(a.launch))}, {"repeat", a.repeat}};
  switch (a.source) {
  case arm_source::kernel:
    arm["kernel"] = a.kernel;
    break;
  case arm_source::plugin:
    arm["plugin"] = a.file;
    arm["name"] = a.entry;
    break;
  case arm_source::python:
    arm["python"] = a.file;
    arm["function"] = a.entry;
    break;
  }
  if (schema >= 2) { // prereg: 1 has no options: its JSON (and hash) stays as it was
    json options = json::object();
    for (const auto &[name, value] : a.options)
      options[name] = value;
    arm["options"] = std::move(options);
  }
  return arm;
}

// `at` with every list explicit: rows, cols and pass, or each named axis and pass.
json at_json(const protocol &p, const cell_selector &at) {
  json out = {{"pass", passes_json(at.passes)}};
  if (p.axes.empty()) {
    out["rows"] = at.rows;
    out["cols"] = at.cols;
  }
  for (std::size_t i = 0; i < p.axes.size() && i < at.named.size(); ++i)
    out[p.axes[i].name] = at.named[i];
  return out;
}

// The extents: {rows, cols} or {axis: [...]} over named axes.
json shapes_json(const protocol &p) {
  if (p.axes.empty())
    return {{"rows", p.rows}, {"cols", p.cols}};
  json out = json::object();
  for (const auto &a : p.axes)
    out[a.name] = a.extents;
  return out;
}

json operating_point_json(const protocol &p) {
  if (p.operating_point)
    return {{"rows", p.operating_point->first}, {"cols", p.operating_point->second}};
  if (p.named_operating_point.empty())
    return nullptr;
  json out = json::object();
  for (std::size_t i = 0; i < p.axes.size(); ++i)
    out[p.axes[i].name] = p.named_operating_point.at(i);
  return out;
}

json predictions_json(const protocol &p, const std::vector<prediction_spec> &predictions) {
  json out = json::array();
  for (const auto &s : predictions)
    out.push_back(
        {{"id", s.id}, {"claim", s.claim}, {"at", at_json(p, s.at)}, {"expect", s.expect}});
  return out;
}

std::string_view name_of(score_rule r) {
  return r == score_rule::geomean_speedup ? "geomean_speedup" : "speedup_at";
}

// prereg: 2 `task`, every default explicit; `at`, `floor.tflops` and `heldout` absent when unset.
json task_json(const protocol &p, const task_spec &t) {
  json floor = {{"margin", t.floor_margin}};
  if (t.tflops)
    floor["tflops"] = *t.tflops;
  json out = {{"baseline", t.baseline},
              {"score", std::string(name_of(t.score))},
              {"entry", t.entry},
              {"input_sets", t.input_sets},
              {"floor", std::move(floor)}};
  if (t.score == score_rule::speedup_at) {
    json at = {{"pass", std::string(to_string(t.at_pass))}};
    const std::vector<std::string> names = axis_names(p);
    for (std::size_t i = 0; i < names.size() && i < t.at.size(); ++i)
      at[names[i]] = t.at[i];
    out["at"] = std::move(at);
  }
  if (t.commitment)
    out["heldout"] = {{"commitment", *t.commitment}};
  return out;
}

// prereg: 2 `grading`; `submission` and `seed` absent when empty.
json grading_json(const grading_spec &g) {
  json out = {{"task", g.task},
              {"grade", g.grade},
              {"role", g.role},
              {"nonce", g.nonce},
              {"input_sets", g.input_sets}};
  if (!g.submission.empty())
    out["submission"] = g.submission;
  if (!g.seed.empty())
    out["seed"] = g.seed;
  return out;
}

} // namespace

json to_json(const protocol &p) {
  json arms = json::array();
  for (const auto &a : p.arms)
    arms.push_back(arm_json(a, p.schema));
  const json operating_point = operating_point_json(p);
  json out = {
      {"prereg", p.schema},
      {"id", p.id},
      {"title", p.title},
      {"hypothesis", p.hypothesis},
      {"device", p.device},
      {"operation", p.op},
      {"dtype", std::string(to_string(p.type))},
      {"shapes", shapes_json(p)},
      {"passes", passes_json(p.passes)},
      {"operating_point", operating_point},
      {"arms", arms},
      {"measurement",
       {{"repetitions", p.measurement.repetitions},
        {"warmup", p.measurement.warmup},
        {"l2_flush", p.measurement.l2_flush},
        {"order", std::string(name_of(p.measurement.order))}}},
      {"analysis",
       {{"statistic", std::string(statistic_name(p.analysis.statistic))},
        {"confidence", p.analysis.confidence},
        {"bootstrap_resamples", p.analysis.bootstrap_resamples},
        {"unstable_iqr_ratio", p.analysis.unstable_iqr_ratio}}},
      {"correctness", {{"rtol", p.correctness.rtol}, {"atol", p.correctness.atol}}},
      {"predictions", predictions_json(p, p.predictions)},
  };
  if (!p.op_file.empty()) // an operation file's: absent otherwise, so every earlier hash stays
    out["operation"] = {{"python", p.op_file}, {"name", p.op}};
  if (p.schema >= 2) { // the same extents under the operation's axis names
    out["axes"] = std::move(out["shapes"]);
    out.erase("shapes");
  }
  if (!p.measurement.kernel_clock) // the default (on) is absent: every earlier hash stays
    out["measurement"]["kernel_clock"] = false;
  if (p.measurement.reuse_ceiling) // likewise the default `measure`
    out["measurement"]["ceiling"] = "reuse";
  if (const auto &stop = p.measurement.stop) { // absent under fixed repetitions: hashes stay
    out["measurement"].erase("repetitions");
    out["measurement"]["stop"] = {{"rel_ci", stop->rel_ci},
                                  {"min", stop->min},
                                  {"max", stop->max},
                                  {"max_seconds", stop->max_seconds}};
  }
  if (const auto &limit = p.measurement.call_timeout_s) // absent when not declared: hashes stay
    out["measurement"]["call_timeout_s"] = *limit;
  if (p.revision > 1) // revision 1 is the first version: absent, so earlier hashes stay
    out["revision"] = p.revision;
  if (p.replication) // absent when not declared: every earlier hash stays
    out["replication"] = {{"devices", p.replication->devices}, {"rule", p.replication->rule}};
  if (p.task) // a grading task (docs/grading.md); absent otherwise
    out["task"] = task_json(p, *p.task);
  if (p.grading) // a grading's protocol, written by prereg
    out["grading"] = grading_json(*p.grading);
  if ((p.task || p.grading) && p.predictions.empty()) // they may have none: the key is absent
    out.erase("predictions");
  return out;
}

} // namespace prereg
