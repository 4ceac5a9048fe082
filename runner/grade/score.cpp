// A submission's score: the graded cells, the exclusions, the score and its percentile-bootstrap
// interval, and the ranks (docs/grading.md, "The score", "Exclusions", "Ranks").
#include "grade/score.hpp"

#include "base/rng.hpp"
#include "base/stats.hpp"
#include "prereg/error.hpp"
#include "spec/operation.hpp"
#include "spec/shard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace prereg::grade {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

/// The defects that exclude a submission's cell: what a correct but dishonest step leaves.
constexpr const char *excluding_defects[] = {"input-mutated", "off-window-work",
                                             "kernel-above-step", "no-arm-kernel"};

const report_cell *find_cell(const report_document &d, const std::string &arm, const cell_key &k) {
  for (const auto &c : d.cells)
    if (c.key.arm == arm && c.key.pass == k.pass && c.key.same_shape(k))
      return &c;
  return nullptr;
}

const correctness_record *find_record(const report_document &d, const cell_key &k) {
  for (const auto &r : d.correctness)
    if (r.key == k)
      return &r;
  return nullptr;
}

/// Whether every extent of `k` is one of the task's public extents.
bool is_public(const protocol &task, const cell_key &k) {
  const std::vector<std::string> names = axis_names(task);
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::int64_t v = 0;
    if (!k.named())
      v = i == 0 ? k.rows : k.cols;
    else
      for (const auto &a : k.shape)
        if (a.axis == names[i])
          v = a.extent;
    const auto &list = axis_extents(task, i);
    if (std::find(list.begin(), list.end(), v) == list.end())
      return false;
  }
  return true;
}

/// FLOPs of one step of `k` by the operation's declared formula; NaN where none is declared.
double flops_of(const protocol &task, const cell_key &k, std::int64_t repeat) {
  const operation_desc *op = find_operation(task.op);
  if (op == nullptr || !op->formulas_of(k.pass))
    return nan;
  try {
    const auto f = op->flops_per_invocation(task.type, k.pass, key_shape(*op, k));
    return f ? static_cast<double>(*f) * static_cast<double>(repeat) : nan;
  } catch (const std::exception &) {
    return nan;
  }
}

/// The reasons the submission's report excludes `cell` (its cell `c`, possibly missing).
void cell_exclusions(const report_document &sub, const graded_cell &g, const report_cell *c,
                     std::vector<exclusion> &out) {
  const cell_key &k = g.key;
  if (c == nullptr || c->samples_ms.empty()) {
    std::string why = "no samples";
    for (const auto &d : sub.deviations)
      if (d.cell && *d.cell == k)
        why = fmt::format("{}: {}", d.kind, d.message);
    if (c != nullptr && c->error)
      out.push_back({"arm-error", k, *c->error});
    else
      out.push_back({"not-measured", k, why});
    return;
  }
  if (c->error)
    out.push_back({"arm-error", k, *c->error});
  const correctness_record *r = find_record(sub, k);
  if (r == nullptr)
    out.push_back({"correctness", k, "no correctness record"});
  else if (!r->passed)
    out.push_back({"correctness", k, r->detail});
  for (const char *code : excluding_defects)
    for (const auto &d : sub.defects)
      if (d.code == code && d.cell && *d.cell == k)
        out.push_back({code, k, d.message});
  if (std::isfinite(g.floor_ms) && !(g.submission_ms >= g.floor_ms))
    out.push_back({"below-floor", k,
                   fmt::format("{:.6g} ms is below the physical floor of {:.6g} ms",
                               g.submission_ms, g.floor_ms)});
}

/// The instrument a submission's process must report: the baseline's floor and ceiling.
void check_instrument(const report_document &base, const report_document &sub,
                      std::vector<exclusion> &out) {
  const auto &a = base.instrument;
  const auto &b = sub.instrument;
  if (a.ceiling_gbps != b.ceiling_gbps || a.ceiling_samples_gbps != b.ceiling_samples_gbps ||
      a.launch_floor_ms != b.launch_floor_ms || a.ceiling_bytes != b.ceiling_bytes)
    out.push_back(
        {"instrument-not-given", std::nullopt,
         fmt::format("the report's copy ceiling {:g} GB/s and launch floor {:g} ms are "
                     "not the baseline's {:g} GB/s and {:g} ms that the grading gave",
                     b.ceiling_gbps, b.launch_floor_ms, a.ceiling_gbps, a.launch_floor_ms)});
}

/// The parent-side wall-time bound: the report's samples cannot add up to more than the time its
/// whole process took on the parent's clock.
void check_wall(const report_document &sub, double wall_ms, std::vector<exclusion> &out) {
  if (!std::isfinite(wall_ms))
    return;
  double sum = 0;
  for (const auto &c : sub.cells)
    for (double v : c.samples_ms)
      sum += v;
  if (sum > wall_ms)
    out.push_back({"beyond-wall-time", std::nullopt,
                   fmt::format("its samples add up to {:.6g} ms, more than the {:.6g} ms its whole "
                               "process took",
                               sum, wall_ms)});
}

retime_side side_of(const report_cell *c) {
  retime_side out;
  if (c == nullptr || c->samples_ms.empty())
    return out;
  std::vector<double> v = c->samples_ms;
  std::sort(v.begin(), v.end());
  out.n = v.size();
  out.q25 = quantile_sorted(v, 0.25);
  out.median = quantile_sorted(v, 0.5);
  out.q75 = quantile_sorted(v, 0.75);
  return out;
}

/// One re-timing's failures at `want` (none: it confirms the first process's timing), its
/// facts in `f`: the second process must have measured the cell, left a report that the
/// first's checks pass at it, and not be slower beyond the rule.
std::vector<std::string> judge_retime(const report_document &baseline, const entry_score &e,
                                      const retime_run &rt, const cell_key &want, retime_facts &f) {
  std::vector<std::string> fails;
  if (!(rt.cell == want)) {
    fails.push_back(
        fmt::format("the re-timing measured {} instead of {}, the cell of the largest speed-up",
                    cell_label(rt.cell), cell_label(want)));
  } else if (rt.report == nullptr) {
    fails.push_back("the re-timing left no report: " +
                    (rt.failure.empty() ? std::string("its run failed") : rt.failure));
  } else {
    const report_document &second = *rt.report;
    std::vector<exclusion> found;
    check_instrument(baseline, second, found);
    check_wall(second, rt.wall_ms, found);
    const report_cell *c = find_cell(second, want.arm, want);
    for (const auto &g : e.cells)
      if (g.key == want) {
        graded_cell g2 = g;
        g2.submission_ms = c != nullptr && !c->samples_ms.empty() ? c->statistic_ms : nan;
        cell_exclusions(second, g2, c, found);
      }
    for (const auto &x : found)
      fails.push_back(fmt::format("the re-timing: {}: {}", x.code, x.detail));
    f.second = side_of(c);
    if (found.empty() && f.second.q25 > retime_factor * f.first.q75) {
      fails.push_back(fmt::format("the second process's lower quartile {:.6g} ms is more than "
                                  "{:g} x the first's upper quartile {:.6g} ms (medians {:.6g} "
                                  "and {:.6g} ms)",
                                  f.second.q25, retime_factor, f.first.q75, f.second.median,
                                  f.first.median));
      f.slower_only = true;
    }
  }
  f.confirmed = fails.empty();
  return fails;
}

/// The re-timings' exclusions (docs/grading.md, "The re-timing"), after a first process that
/// excludes nothing: the last re-timing decides; each earlier one must have failed the factor
/// rule alone (the reason to re-time), and at most retime_attempts ran.
void check_retime(const report_document &baseline, const graded_run &run, const cell_key &want,
                  entry_score &e) {
  retime_facts base;
  base.cell = want;
  base.first = side_of(find_cell(*run.report, want.arm, want));
  const auto fail = [&](const std::string &why) {
    e.exclusions.push_back({"not-confirmed", want, why});
  };
  if (run.retimes.empty()) {
    e.retimes.push_back(base);
    fail("its first process's timing was not re-timed in a second process");
    return;
  }
  const std::size_t n = run.retimes.size();
  for (std::size_t i = 0; i < n; ++i) {
    retime_facts f = base;
    const std::vector<std::string> fails = judge_retime(baseline, e, *run.retimes[i], want, f);
    e.retimes.push_back(f);
    if (i + 1 == n)
      for (const auto &why : fails)
        fail(n == 1 ? why : fmt::format("re-timing {} of {}: {}", n, n, why));
    else if (!f.slower_only)
      fail(fmt::format("re-timing {} of {} was followed by another though it {}", i + 1, n,
                       fails.empty() ? std::string("confirmed") : "failed: " + fails.front()));
  }
  if (n > retime_attempts)
    fail(fmt::format("{} re-timings ran, more than the {} a grading makes", n, retime_attempts));
}

/// The score of speed-ups `s` by the task's rule (geometric mean, or the `at` cell's).
double rule_score(const task_spec &t, const std::vector<graded_cell> &cells,
                  const std::vector<double> &s) {
  if (t.score == score_rule::speedup_at) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const cell_key &k = cells[i].key;
      const std::vector<std::int64_t> at =
          k.named() ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{k.rows, k.cols};
      std::vector<std::int64_t> ext = at;
      if (k.named())
        for (const auto &a : k.shape)
          ext.push_back(a.extent);
      if (k.pass == t.at_pass && ext == t.at)
        return s[i];
    }
    return nan;
  }
  double log_sum = 0;
  for (double v : s)
    log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(s.size()));
}

/// The rule's score over one resample of every cell's baseline and submission samples.
double resampled_score(const protocol &task, const std::vector<graded_cell> &cells,
                       const std::vector<const report_cell *> &base,
                       const std::vector<const report_cell *> &sub, rng &g,
                       std::vector<double> &scratch) {
  std::vector<double> s(cells.size());
  const auto draw = [&](const report_cell &c) {
    const std::size_t n = c.samples_ms.size();
    scratch.resize(n);
    for (std::size_t j = 0; j < n; ++j)
      scratch[j] = c.samples_ms[static_cast<std::size_t>(g.below(n))];
    return statistic(scratch, task.analysis.statistic);
  };
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const double b = draw(*base[i]);
    s[i] = b / draw(*sub[i]);
  }
  return rule_score(*task.task, cells, s);
}

/// The score and its interval: B resamples (the task's bootstrap_resamples) from one generator
/// seeded by the submission's grading protocol hash; the quantiles of the finite ones.
void score_with_interval(const protocol &task, const report_document &baseline,
                         const graded_run &run, entry_score &e) {
  std::vector<double> s;
  std::vector<const report_cell *> base, sub;
  for (const auto &c : e.cells) {
    s.push_back(c.speedup);
    base.push_back(find_cell(baseline, task.task->baseline, c.key));
    sub.push_back(find_cell(*run.report, c.key.arm, c.key));
  }
  e.score = rule_score(*task.task, e.cells, s);
  rng g(stream_seed(seed_from_hash(run.grading_hash), stream_id::bootstrap) ^ 0x73636f7265ull);
  std::vector<double> kept, scratch;
  for (std::int64_t b = 0; b < task.analysis.bootstrap_resamples; ++b) {
    const double v = resampled_score(task, e.cells, base, sub, g, scratch);
    if (std::isfinite(v))
      kept.push_back(v);
  }
  std::sort(kept.begin(), kept.end());
  const double tail = (1.0 - task.analysis.confidence) / 2.0;
  e.lo = kept.empty() ? nan : quantile_sorted(kept, tail);
  e.hi = kept.empty() ? nan : quantile_sorted(kept, 1.0 - tail);
}

/// The graded cells: the grading protocol's cells in plan order with both sides' statistics.
std::vector<graded_cell> graded_cells(const protocol &task, const report_document &baseline,
                                      const graded_run &run) {
  std::vector<graded_cell> out;
  const double ceiling = baseline.instrument.ceiling_gbps;
  for (const cell_key &k : all_cells(*run.grading)) {
    graded_cell g;
    g.key = k;
    g.heldout = !is_public(task, k);
    const report_cell *b = find_cell(baseline, task.task->baseline, k);
    if (b == nullptr || b->samples_ms.empty() || b->error)
      throw invalid_input(fmt::format("the baseline's report has no samples of {} at {} {}: the "
                                      "grading cannot score it",
                                      task.task->baseline, to_string(k.pass), shape_label(k)));
    const correctness_record *br = find_record(baseline, b->key);
    if (br == nullptr || !br->passed)
      throw invalid_input(fmt::format("the baseline {} failed correctness at {} {}: fix the task",
                                      task.task->baseline, to_string(k.pass), shape_label(k)));
    g.baseline_ms = b->statistic_ms;
    const arm_spec *arm = find_arm_spec(*run.grading, k.arm);
    const std::int64_t repeat = arm != nullptr ? arm->repeat : 1;
    g.floor_ms = floor_ms(*task.task, ceiling, b->bytes_per_step, flops_of(task, k, repeat));
    if (run.report != nullptr)
      if (const report_cell *c = find_cell(*run.report, k.arm, k);
          c != nullptr && !c->samples_ms.empty()) {
        g.submission_ms = c->statistic_ms;
        g.speedup = g.baseline_ms / g.submission_ms;
        const correctness_record *r = find_record(*run.report, k);
        g.correct = r != nullptr && r->passed;
      }
    out.push_back(std::move(g));
  }
  return out;
}

} // namespace

double floor_ms(const task_spec &t, double ceiling_gbps, std::uint64_t bytes, double flops) {
  double out = nan;
  if (ceiling_gbps > 0 && std::isfinite(ceiling_gbps) && bytes > 0)
    out = static_cast<double>(bytes) / (t.floor_margin * ceiling_gbps * 1e9) * 1e3;
  if (t.tflops && std::isfinite(flops) && flops > 0) {
    const double compute_ms = flops / (*t.tflops * 1e12) * 1e3;
    out = std::isfinite(out) ? std::max(out, compute_ms) : compute_ms;
  }
  return out;
}

entry_score score_entry(const protocol &task, const report_document &baseline,
                        const graded_run &run) {
  entry_score e;
  e.cells = graded_cells(task, baseline, run);
  if (run.report == nullptr) {
    e.exclusions.push_back(
        {"run-failed", std::nullopt, run.failure.empty() ? "the run left no report" : run.failure});
    return e;
  }
  check_instrument(baseline, *run.report, e.exclusions);
  check_wall(*run.report, run.wall_ms, e.exclusions);
  for (const auto &g : e.cells)
    cell_exclusions(*run.report, g, find_cell(*run.report, g.key.arm, g.key), e.exclusions);
  if (!e.excluded() && !run.first_only)
    check_retime(baseline, run, retime_cell(*task.task, e), e);
  if (e.excluded())
    return e;
  score_with_interval(task, baseline, run, e);
  if (!std::isfinite(e.score) || !(e.score > 0)) { // a speed-up of 0 or infinity: no score
    e.exclusions.push_back(
        {"no-score", std::nullopt,
         fmt::format("the score is {} (a cell with no finite speed-up)", e.score)});
    e.score = e.lo = e.hi = 0;
  }
  return e;
}

cell_key retime_cell(const task_spec &t, const entry_score &first) {
  if (first.cells.empty())
    throw invalid_input("a grading without cells has nothing to re-time");
  std::size_t best = 0;
  for (std::size_t i = 0; i < first.cells.size(); ++i) {
    const graded_cell &g = first.cells[i];
    if (t.score == score_rule::speedup_at) {
      std::vector<double> s(first.cells.size(), nan);
      s[i] = 1;
      if (rule_score(t, first.cells, s) == 1)
        return g.key;
    } else if (g.speedup > first.cells[best].speedup) {
      best = i;
    }
  }
  return first.cells[best].key;
}

std::vector<std::int64_t> ranks_of(const std::vector<const entry_score *> &scores) {
  std::vector<std::int64_t> out(scores.size(), 0);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (scores[i]->excluded())
      continue;
    std::int64_t above = 0;
    for (std::size_t j = 0; j < scores.size(); ++j)
      if (j != i && !scores[j]->excluded() && scores[j]->lo > scores[i]->hi)
        ++above;
    out[i] = 1 + above;
  }
  return out;
}

json cells_json(const entry_score &e) {
  json out = json::array();
  for (const auto &g : e.cells) {
    json c = shape_json(g.key);
    c["pass"] = std::string(to_string(g.key.pass));
    c["heldout"] = g.heldout;
    c["baseline_ms"] = finite_or_null(g.baseline_ms);
    c["submission_ms"] = finite_or_null(g.submission_ms);
    c["floor_ms"] = finite_or_null(g.floor_ms);
    c["speedup"] = finite_or_null(g.speedup);
    c["correct"] = g.correct;
    out.push_back(std::move(c));
  }
  return out;
}

json exclusions_json(const entry_score &e) {
  json out = json::array();
  for (const auto &x : e.exclusions) {
    json j = {{"code", x.code}, {"detail", x.detail}};
    j["cell"] = x.cell ? to_json(*x.cell) : json(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

bool retime_again(const entry_score &e) {
  return !e.retimes.empty() && e.retimes.size() < retime_attempts &&
         std::all_of(e.retimes.begin(), e.retimes.end(),
                     [](const retime_facts &f) { return f.slower_only; });
}

json retime_facts_json(const retime_facts &f) {
  const auto side = [](const retime_side &s) {
    return json{{"n", s.n},
                {"q25", finite_or_null(s.q25)},
                {"median", finite_or_null(s.median)},
                {"q75", finite_or_null(s.q75)}};
  };
  return {{"first", side(f.first)},
          {"second", side(f.second)},
          {"factor", retime_factor},
          {"confirmed", f.confirmed}};
}

} // namespace prereg::grade
