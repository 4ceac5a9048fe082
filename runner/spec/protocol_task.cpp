// prereg: 2 `task` (a grading task: its baseline, score rule, entry, input sets, physical floor
// and held-out commitment) and `grading` (what prereg writes into a grading's protocols);
// docs/grading.md.
#include "spec/protocol_sections.hpp"

#include <algorithm>
#include <string>

namespace prereg::protocol_detail {
namespace {

constexpr std::int64_t max_input_sets = 64;

/// `n` as `digits` lowercase hex digits.
std::string as_hex(const node &n, std::string_view what, std::size_t digits) {
  const std::string s = as_string(n, what);
  const bool ok = s.size() == digits && std::all_of(s.begin(), s.end(), [](char c) {
                    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                  });
  if (!ok)
    fail(n, fmt::format("{} must be {} lowercase hex digits, got {}", what, digits,
                        strict_yaml::describe(n)));
  return s;
}

/// A name a submission or a grading carries: 1 to `max` of [A-Za-z0-9_.-].
std::string as_name(const node &n, std::string_view what, std::size_t max) {
  const std::string s = as_string(n, what);
  const bool ok = !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
  if (!ok)
    fail(n, fmt::format("{} must be 1 to {} of A-Z a-z 0-9 _ . -, got {}", what, max,
                        strict_yaml::describe(n)));
  return s;
}

/// The input sets per shape: 2 to 64, and its spot checks fit the samples every cell takes.
std::int64_t as_input_sets(const node &n, std::string_view what, const protocol &p) {
  const std::int64_t k = as_int(n, what, 2, max_input_sets);
  const std::int64_t samples =
      p.measurement.stop ? p.measurement.stop->min : p.measurement.repetitions;
  if (k - 1 > samples)
    fail(n, fmt::format("{} {} asks {} spot-checked samples per cell, but every cell takes only {}",
                        what, k, k - 1, samples));
  return k;
}

/// task.at: one extent per axis, each in the axis' list, and the pass (required when the
/// protocol has more than one).
void read_task_at(const node &n, const protocol &p, task_spec &t) {
  const std::vector<std::string> names = axis_names(p);
  std::vector<std::string_view> keys(names.begin(), names.end());
  keys.push_back("pass");
  const fields at(n, "task.at", keys);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const node &v = at.required(names[i]);
    const std::int64_t extent = as_int(v, at.path(names[i]), 1, max_extent);
    const auto &list = axis_extents(p, i);
    if (std::find(list.begin(), list.end(), extent) == list.end())
      fail(v, fmt::format("task.at.{} {} is not a public extent of axes.{}", names[i], extent,
                          names[i]));
    t.at.push_back(extent);
  }
  if (const node *pass = at.optional("pass")) {
    t.at_pass = as_pass(*pass, "task.at.pass");
    if (std::find(p.passes.begin(), p.passes.end(), t.at_pass) == p.passes.end())
      fail(*pass, fmt::format("task.at.pass {} is not one of the protocol's passes",
                              to_string(t.at_pass)));
  } else if (p.passes.size() > 1) {
    fail(n, "task.at needs a pass: the protocol has more than one");
  } else {
    t.at_pass = p.passes.front();
  }
}

/// task.floor: {margin, tflops}.
void read_task_floor(const node &n, task_spec &t) {
  const fields f(n, "task.floor", {"margin", "tflops"});
  if (const node *m = f.optional("margin")) {
    t.floor_margin = as_float(*m, "task.floor.margin");
    if (!(t.floor_margin >= 1 && t.floor_margin <= 1000))
      fail(*m, fmt::format("task.floor.margin must be from 1 to 1000, got {}",
                           message_excerpt(m->value)));
  }
  if (const node *c = f.optional("tflops")) {
    t.tflops = as_float(*c, "task.floor.tflops");
    if (!(*t.tflops > 0 && *t.tflops <= 1e9))
      fail(*c, fmt::format("task.floor.tflops must be above 0 and at most 1e9, got {}",
                           message_excerpt(c->value)));
  }
}

} // namespace

task_spec read_task(const node &n, const protocol &p) {
  const fields f(n, "task", {"baseline", "score", "at", "entry", "input_sets", "floor", "heldout"});
  task_spec t;
  const node &baseline = f.required("baseline");
  t.baseline = as_id(baseline, "task.baseline");
  if (find_arm_spec(p, t.baseline) == nullptr)
    fail(baseline, fmt::format("task.baseline '{}' is not an arm of the protocol", t.baseline));
  if (const node *s = f.optional("score"))
    t.score = as_enum<score_rule>(
        *s, "task.score",
        {{"geomean_speedup", score_rule::geomean_speedup}, {"speedup_at", score_rule::speedup_at}});
  const node *at = f.optional("at");
  if (t.score == score_rule::speedup_at && at == nullptr)
    fail(n, "task.score speedup_at needs task.at: the cell whose speed-up is the score");
  if (at != nullptr && t.score != score_rule::speedup_at)
    fail(*at, "task.at belongs to task.score: speedup_at");
  if (at != nullptr)
    read_task_at(*at, p, t);
  const node &entry = f.required("entry");
  t.entry = as_string(entry, "task.entry");
  if (t.entry.empty() || t.entry.size() > 256)
    fail(entry, "task.entry must be 1 to 256 characters");
  if (const node *k = f.optional("input_sets"))
    t.input_sets = as_input_sets(*k, "task.input_sets", p);
  if (const node *fl = f.optional("floor"))
    read_task_floor(*fl, t);
  if (const node *h = f.optional("heldout")) {
    const fields hf(*h, "task.heldout", {"commitment"});
    t.commitment = as_hex(hf.required("commitment"), "task.heldout.commitment", 64);
  }
  return t;
}

grading_spec read_grading(const node &n, const protocol &p) {
  const fields f(n, "grading",
                 {"task", "grade", "role", "submission", "nonce", "seed", "input_sets"});
  grading_spec g;
  g.task = as_hex(f.required("task"), "grading.task", 64);
  g.grade = as_name(f.required("grade"), "grading.grade", 128);
  const node &role = f.required("role");
  g.role = as_enum<std::string>(role, "grading.role",
                                {{"baseline", "baseline"},
                                 {"submission", "submission"},
                                 {"reward", "reward"},
                                 {"retime", "retime"}});
  if (const node *s = f.optional("submission"))
    g.submission = as_name(*s, "grading.submission", 128);
  if (g.role == "baseline" && !g.submission.empty())
    fail(*f.optional("submission"), "grading.submission belongs to a submission's protocol");
  if (g.role != "baseline" && g.submission.empty())
    fail(n, fmt::format("grading.role {} needs grading.submission", g.role));
  if (g.role != "baseline" && p.arms.size() != 1)
    fail(role, "a submission's grading protocol has exactly one arm, the submission");
  g.nonce = as_hex(f.required("nonce"), "grading.nonce", 32);
  if (const node *s = f.optional("seed"))
    g.seed = as_hex(*s, "grading.seed", 16);
  g.input_sets = as_input_sets(f.required("input_sets"), "grading.input_sets", p);
  return g;
}

} // namespace prereg::protocol_detail

namespace prereg {

std::vector<std::string> axis_names(const protocol &p) {
  if (p.axes.empty())
    return {"rows", "cols"};
  std::vector<std::string> out;
  for (const auto &a : p.axes)
    out.push_back(a.name);
  return out;
}

const std::vector<std::int64_t> &axis_extents(const protocol &p, std::size_t i) {
  if (p.axes.empty())
    return i == 0 ? p.rows : p.cols;
  return p.axes.at(i).extents;
}

} // namespace prereg
