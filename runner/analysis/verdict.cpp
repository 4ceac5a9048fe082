// The decision rule: seeded bootstrap per selected cell, then confirmed/refuted/inconclusive.
#include "analysis/verdict.hpp"

#include "analysis/cell_stats.hpp"
#include "analysis/roofline.hpp"
#include "base/stats.hpp"
#include "prereg/error.hpp"
#include "spec/bytes_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace prereg {
namespace {

// One involved arm's data at one selected cell.
struct arm_cell {
  const arm_spec *spec = nullptr;
  const cell_record *record = nullptr;
  std::uint64_t bytes_per_step = 0;
  std::vector<double> resample;    // scratch, reused across resamples
  std::vector<std::size_t> picked; // the resample's sample indices (kept when a share is read)
  bool reads_share = false;
  double time_ms = 0;  // this resample's statistic
  bool kernel = false; // a kernel metric of this arm is read
  bool roofs = false;  // a roof metric of this arm is read
  std::vector<double> kernel_resample, share_resample, count_resample;
  double kernel_ms = 0; // this resample's statistic of kernel_ms
  double gap_share = 0; // ... median of per-sample gap shares [%]
  double kernels = 0;   // ... median of per-sample kernel counts
  // The roofs (read only when the expression reads tflops, pct_compute or pct_roof):
  std::optional<std::uint64_t> flops_per_step;
  std::string compute; // the compute ceiling's element type
  double compute_tflops = std::numeric_limits<double>::quiet_NaN(); // that ceiling
  double roof_gbps = std::numeric_limits<double>::quiet_NaN();      // the cell's mix roof
};

/// One selected cell of a prediction: the arms vary, the shape does not (a key without arm).
using cell_shape = cell_key;

std::string pass_shape_label(const cell_shape &cell) {
  return fmt::format("{} {}", to_string(cell.pass), shape_label(cell));
}

const cell_record *find_record(const raw_run &run, const cell_key &key) {
  const auto it = std::find_if(run.cells.begin(), run.cells.end(),
                               [&](const cell_record &c) { return c.key == key; });
  return it == run.cells.end() ? nullptr : &*it;
}

std::vector<std::string> involved_arms(const std::vector<metric_ref> &refs) {
  std::vector<std::string> arms;
  for (const auto &r : refs) {
    if (std::find(arms.begin(), arms.end(), r.arm) == arms.end())
      arms.push_back(r.arm);
  }
  return arms;
}

// Analysis 2: what excludes the arm's cell from verdicts as a failed correctness check does
// (docs/analysis.md section 5): work it left pending after its timed windows, an input it changed
// inside a timed call, a reading beyond the physical margin over the copy ceiling.
void excluded_problems(const protocol &proto, const raw_run &run, const arm_cell &a,
                       const std::string &where, double median_ms, int analysis,
                       std::vector<std::string> &out) {
  const cell_record &r = *a.record;
  const std::string &arm = a.spec->id;
  if (has_off_window_work(r.off_window_ms, r.samples_ms.size(), median_ms))
    out.push_back(fmt::format("arm {} left {:g} ms of device work pending after a timed window at "
                              "{} (median {:g} ms)",
                              arm, r.off_window_ms, where, median_ms));
  if (r.input_mutated)
    out.push_back(fmt::format("arm {} changed an input inside a timed call at {}", arm, where));
  const double pct =
      pct_ceiling(gbps(a.bytes_per_step, statistic(r.samples_ms, proto.analysis.statistic)),
                  run.instrument.ceiling_gbps);
  const double margin = thresholds::excluded_above_ceiling_pct_for(analysis);
  if (std::isfinite(pct) && pct > margin)
    out.push_back(fmt::format("arm {} reads {:.1f}% of the measured copy ceiling at {}, beyond "
                              "the physical margin of {:g}%",
                              arm, pct, where, margin));
}

// Why this arm's data at this cell cannot support a verdict, or empty.
std::vector<std::string> problems(const protocol &proto, const raw_run &run, const arm_cell &a,
                                  const cell_key &key, const std::string &where, int analysis) {
  std::vector<std::string> out;
  const std::string &arm = key.arm;
  if (a.record == nullptr) {
    out.push_back(fmt::format("arm {} has no measurement at {} (cannot run)", arm, where));
    return out;
  }
  if (a.record->error) {
    out.push_back(fmt::format("arm {} failed at {}: {}", arm, where, *a.record->error));
  }
  if (a.record->samples_ms.empty()) {
    out.push_back(fmt::format("arm {} has no samples at {}", arm, where));
    return out;
  }
  const correctness_record *check = find_correctness(run.correctness, key);
  if (check == nullptr) {
    out.push_back(fmt::format("arm {} has no correctness check at {}", arm, where));
  } else if (!check->passed) {
    out.push_back(fmt::format("arm {} failed correctness at {}{}", arm, where,
                              check->detail.empty() ? "" : " (" + check->detail + ")"));
  }
  const std::span<const double> s = a.record->samples_ms;
  const double med = median(s);
  if (analysis >= 2)
    excluded_problems(proto, run, a, where, med, analysis, out);
  if (analysis >= 4) // the measuring-process-stopped defect's rule
    if (const auto stopped = stopped_samples(a.record->sched); !stopped.empty())
      out.push_back(fmt::format("arm {} was stopped during {} of its {} timed samples at {}", arm,
                                stopped.size(), a.record->sched.size(), where));
  const double spread = iqr(s);
  if (is_unstable(spread, med, proto.analysis.unstable_iqr_ratio)) {
    out.push_back(fmt::format("arm {} is unstable at {} (IQR/median = {:g} > {:g})", arm, where,
                              med > 0.0 ? spread / med : spread,
                              proto.analysis.unstable_iqr_ratio));
  }
  return out;
}

std::string join(const std::vector<std::string> &parts) {
  std::string out;
  for (const auto &p : parts) {
    if (!out.empty())
      out += "; ";
    out += p;
  }
  return out;
}

/// The arms `check` reads, in first-use order, and what of each it reads.
std::vector<arm_cell> involved_arm_cells(const protocol &proto, const prediction_spec &spec,
                                         const prediction_check &check) {
  std::vector<arm_cell> arms;
  for (const auto &id : involved_arms(check.refs)) {
    const arm_spec *found = find_arm_spec(proto, id);
    if (found == nullptr) {
      throw invalid_input(
          fmt::format("prediction {} reads arm '{}', which the protocol lacks", spec.id, id));
    }
    arm_cell a;
    a.spec = found;
    for (const auto &r : check.refs)
      if (r.arm == id && is_kernel_metric(r.what))
        a.kernel = true;
      else if (r.arm == id && is_roof_metric(r.what))
        a.roofs = true;
    a.reads_share = std::any_of(check.refs.begin(), check.refs.end(), [&](const metric_ref &r) {
      return r.arm == id && (r.what == metric::share || r.what == metric::kernel_share);
    });
    arms.push_back(std::move(a));
  }
  return arms;
}

/// The arm's roofs at the cell: its FLOPs, its compute ceiling and its read/write mix's roof.
void prepare_roofs(arm_cell &a, const protocol &proto, const raw_run &run, const cell_key &key) {
  a.flops_per_step = flops_per_step(proto.op, proto.type, key, a.spec->repeat);
  a.compute = compute_type(proto.op, proto.type, key.pass);
  a.compute_tflops = compute_ceiling_tflops(run.instrument, a.compute);
  if (!run.instrument.roofs) {
    a.roof_gbps = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const op_traffic t = traffic_per_step(proto.op, proto.type, key, a.spec->repeat);
  a.roof_gbps = mix_roof_gbps(t.read, t.write, run.instrument.ceiling_gbps,
                              run.instrument.roofs->read.gbps, run.instrument.roofs->write.gbps);
}

/// Why the roofs' metrics `check` reads of this arm are missing at this cell, added to
/// `blocked`: a compute ceiling or a bandwidth roof the instrument did not measure.
void missing_roofs(const arm_cell &a, const prediction_check &check, const std::string &where,
                   std::vector<std::string> &blocked) {
  const auto reads = [&](metric m) {
    return std::any_of(check.refs.begin(), check.refs.end(),
                       [&](const metric_ref &r) { return r.arm == a.spec->id && r.what == m; });
  };
  if (reads(metric::tflops) && !a.flops_per_step)
    blocked.push_back(fmt::format("arm {} has no FLOPs at {}", a.spec->id, where));
  if (reads(metric::pct_compute) && !(a.flops_per_step && std::isfinite(a.compute_tflops)))
    blocked.push_back(fmt::format("arm {} has no measured {} compute ceiling at {}", a.spec->id,
                                  a.compute, where));
  if (reads(metric::pct_roof) && !std::isfinite(a.roof_gbps))
    blocked.push_back(
        fmt::format("arm {} has no measured bandwidth roof at {}", a.spec->id, where));
}

/// Why the metrics `check` reads of this arm are missing at this cell (its kernel clock, a
/// region's times, the roofs), added to `blocked`.
void missing_metrics(const arm_cell &a, const prediction_check &check, const std::string &where,
                     std::vector<std::string> &blocked) {
  if (a.record == nullptr || a.record->samples_ms.empty())
    return;
  if (a.kernel && a.record->kernel_ms.size() != a.record->samples_ms.size())
    blocked.push_back(fmt::format("arm {} has no kernel clock at {}", a.spec->id, where));
  for (const auto &r : check.refs) {
    if (r.what == metric::share && r.arm == a.spec->id && !a.record->regions_ms.contains(r.label))
      blocked.push_back(fmt::format("arm {} has no region \"{}\" at {}", r.arm, r.label, where));
    else if (r.what == metric::kernel_share && r.arm == a.spec->id &&
             !a.record->region_kernels_ms.contains(r.label))
      blocked.push_back(
          fmt::format("arm {} has no kernel time for region \"{}\" at {}", r.arm, r.label, where));
  }
  missing_roofs(a, check, where, blocked);
}

/// Points every arm at its record of the cell, adding what blocks a verdict there to
/// `blocked`; true if every arm has samples at the cell.
bool prepare_arms(std::vector<arm_cell> &arms, const protocol &proto, const raw_run &run,
                  const prediction_check &check, const cell_shape &cell, const std::string &where,
                  int analysis, std::vector<std::string> &blocked) {
  bool all_sampled = true;
  for (auto &a : arms) {
    cell_key key = cell;
    key.arm = a.spec->id;
    a.record = find_record(run, key);
    a.bytes_per_step = bytes_per_step(proto.op, proto.type, key, a.spec->repeat);
    if (a.roofs)
      prepare_roofs(a, proto, run, key);
    for (auto &p : problems(proto, run, a, key, where, analysis))
      blocked.push_back(std::move(p));
    missing_metrics(a, check, where, blocked);
    if (a.record == nullptr || a.record->samples_ms.empty())
      all_sampled = false;
  }
  return all_sampled;
}

/// The value of `ref` in the current resample (every ref's arm is in `arms` by construction).
double metric_value(const std::vector<arm_cell> &arms, const metric_ref &ref, const raw_run &run) {
  const auto it = std::find_if(arms.begin(), arms.end(),
                               [&](const arm_cell &a) { return a.spec->id == ref.arm; });
  const arm_cell &a = *it;
  switch (ref.what) {
  case metric::time:
    return a.time_ms;
  case metric::peak_mb:
    return static_cast<double>(a.record->peak_bytes) / 1e6;
  case metric::gbps:
    return gbps(a.bytes_per_step, a.time_ms);
  case metric::pct_ceiling:
    return pct_ceiling(gbps(a.bytes_per_step, a.time_ms), run.instrument.ceiling_gbps);
  case metric::kernel_time:
    return a.kernel_ms;
  case metric::gap_share:
    return a.gap_share;
  case metric::kernels:
    return a.kernels;
  case metric::share: {
    const auto r = a.record->regions_ms.find(ref.label);
    if (r == a.record->regions_ms.end())
      return std::numeric_limits<double>::quiet_NaN();
    return region_share_pct(a.record->samples_ms, r->second, a.picked);
  }
  case metric::kernel_share: {
    const auto r = a.record->region_kernels_ms.find(ref.label);
    if (r == a.record->region_kernels_ms.end())
      return std::numeric_limits<double>::quiet_NaN();
    return region_share_pct(a.record->kernel_ms, r->second, a.picked);
  }
  case metric::tflops:
    return a.flops_per_step ? tflops(*a.flops_per_step, a.time_ms)
                            : std::numeric_limits<double>::quiet_NaN();
  case metric::pct_compute:
    return a.flops_per_step ? pct_ceiling(tflops(*a.flops_per_step, a.time_ms), a.compute_tflops)
                            : std::numeric_limits<double>::quiet_NaN();
  case metric::pct_roof:
    return pct_ceiling(gbps(a.bytes_per_step, a.time_ms), a.roof_gbps);
  }
  return 0.0;
}

/// One resample of one arm's samples at the cell, and its statistics.
void resample_arm(arm_cell &a, rng &gen, const protocol &proto) {
  const auto &samples = a.record->samples_ms;
  const std::size_t n = samples.size();
  a.resample.resize(n);
  a.picked.resize(a.reads_share ? n : 0);
  // One draw per resampled element, as always: a kernel metric or a region's share reads the
  // same resampled samples, so adding one changes no other p value.
  const bool k = a.kernel && a.record->kernel_ms.size() == n;
  if (k) {
    a.kernel_resample.resize(n);
    a.share_resample.resize(n);
    a.count_resample.resize(n);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = gen.below(n);
    a.resample[i] = samples[j];
    if (a.reads_share)
      a.picked[i] = j;
    if (k) {
      a.kernel_resample[i] = a.record->kernel_ms[j];
      a.share_resample[i] = gap_share_pct(samples[j], a.record->kernel_ms[j]);
      a.count_resample[i] = static_cast<double>(a.record->kernel_counts[j]);
    }
  }
  a.time_ms = statistic(a.resample, proto.analysis.statistic);
  if (k) {
    a.kernel_ms = statistic(a.kernel_resample, proto.analysis.statistic);
    a.gap_share = median(a.share_resample);
    a.kernels = median(a.count_resample);
  }
}

/// p: the fraction of the protocol's resamples in which the prediction holds at the cell.
double bootstrap_p(std::vector<arm_cell> &arms, const protocol &proto,
                   const prediction_check &check, const raw_run &run, rng &gen) {
  const std::int64_t resamples = proto.analysis.bootstrap_resamples;
  const metric_lookup lookup = [&](const metric_ref &ref) { return metric_value(arms, ref, run); };
  std::int64_t hits = 0;
  for (std::int64_t b = 0; b < resamples; ++b) {
    for (auto &a : arms)
      resample_arm(a, gen, proto);
    if (check.holds(lookup))
      ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(resamples);
}

/// What the cells of one prediction said so far.
struct judgement {
  std::vector<std::string> blocked;   ///< problems that force inconclusive
  std::vector<std::string> refuting;  ///< clean cells with p <= 1 - confidence
  std::vector<std::string> undecided; ///< clean cells with 1 - confidence < p < confidence
};

/// Judges one selected cell: its p (when every arm has samples there), and what it adds to `j`.
cell_p judge_cell(std::vector<arm_cell> &arms, const protocol &proto, const prediction_check &check,
                  const raw_run &run, rng &gen, const cell_shape &cell, int analysis,
                  judgement &j) {
  const std::string where = pass_shape_label(cell);
  const std::size_t blocked_before = j.blocked.size();
  cell_p cp{cell.pass, cell.rows, cell.cols, std::nullopt, cell.shape};
  if (!prepare_arms(arms, proto, run, check, cell, where, analysis, j.blocked))
    return cp;
  const double p = bootstrap_p(arms, proto, check, run, gen);
  cp.p = p;
  const double confidence = proto.analysis.confidence;
  const double refute_at = 1.0 - confidence;
  if (j.blocked.size() == blocked_before) {
    if (p <= refute_at) {
      j.refuting.push_back(fmt::format("p = {:g} <= {:g} at {}", p, refute_at, where));
    } else if (p < confidence) {
      j.undecided.push_back(
          fmt::format("p = {:g} at {} is between {:g} and {:g}", p, where, refute_at, confidence));
    }
  }
  return cp;
}

/// The verdict and its reason from every cell's judgement.
void decide(prediction_result &result, const judgement &j, double confidence) {
  if (result.cells.empty()) {
    result.verdict = verdict_kind::inconclusive;
    result.reason = "no cell selected";
  } else if (!j.blocked.empty()) {
    result.verdict = verdict_kind::inconclusive;
    result.reason = join(j.blocked);
    if (!j.refuting.empty())
      result.reason += "; a usable cell alone would refute: " + join(j.refuting);
  } else if (j.refuting.empty() && j.undecided.empty()) {
    result.verdict = verdict_kind::confirmed;
    result.reason =
        fmt::format("p >= {:g} in every selected cell ({})", confidence, result.cells.size());
  } else if (!j.refuting.empty()) {
    result.verdict = verdict_kind::refuted;
    result.reason = join(j.refuting);
  } else {
    result.verdict = verdict_kind::inconclusive;
    result.reason = join(j.undecided);
  }
}

} // namespace

std::uint64_t bootstrap_seed(std::string_view protocol_hash) {
  return stream_seed(seed_from_hash(protocol_hash), stream_id::bootstrap);
}

prediction_result evaluate_prediction(const protocol &proto, const prediction_spec &spec,
                                      const prediction_check &check, const raw_run &run, rng &gen,
                                      int analysis) {
  const std::int64_t resamples = proto.analysis.bootstrap_resamples;
  if (resamples < 1) {
    throw invalid_input(fmt::format("bootstrap_resamples {} is below 1", resamples));
  }
  std::vector<arm_cell> arms = involved_arm_cells(proto, spec, check);
  prediction_result result{spec.id, spec.claim, spec.expect, verdict_kind::inconclusive, {}, {}};
  judgement j;
  const std::vector<cell_key> shapes = protocol_shapes(proto);
  for (const pass_kind pass : spec.at.passes)
    for (cell_shape cell : shapes) {
      cell.pass = pass;
      if (selects(proto, spec.at, cell))
        result.cells.push_back(judge_cell(arms, proto, check, run, gen, cell, analysis, j));
    }
  decide(result, j, proto.analysis.confidence);
  return result;
}

std::vector<prediction_result> evaluate_predictions(const protocol &proto,
                                                    std::string_view protocol_hash,
                                                    std::span<const prediction_check> checks,
                                                    const raw_run &run, int analysis) {
  if (checks.size() != proto.predictions.size()) {
    throw io_error(fmt::format("{} prediction checks for {} predictions", checks.size(),
                               proto.predictions.size()));
  }
  rng gen(bootstrap_seed(protocol_hash));
  std::vector<prediction_result> out;
  out.reserve(checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    out.push_back(evaluate_prediction(proto, proto.predictions[i], checks[i], run, gen, analysis));
  }
  return out;
}

} // namespace prereg
