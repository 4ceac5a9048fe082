// Cell-by-cell comparison of two reports: ratio of medians with a percentile-bootstrap interval.
#include "analysis/compare.hpp"

#include "base/rng.hpp"
#include "base/stats.hpp"
#include "prereg/error.hpp"
#include "spec/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

namespace prereg {
namespace {

// The R-7 median of `x` (non-empty); reorders `x`. Equal to quantile(x, 0.5) of stats.hpp.
double median_inplace(std::vector<double> &x) {
  const std::size_t lo = (x.size() - 1) / 2;
  std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(lo), x.end());
  const double a = x[lo];
  if (x.size() % 2 == 1)
    return a;
  const double b = *std::min_element(x.begin() + static_cast<std::ptrdiff_t>(lo) + 1, x.end());
  // For an even count h = (n-1)/2 = lo + 0.5 falls between the two middle values, which is the
  // R-7 quantile 0.5 of just those two (sorted): a + 0.5·(b − a).
  const std::array<double, 2> middle{a, b};
  return quantile_sorted(middle, 0.5);
}

/// arm, pass, rows, cols and, over named axes, the shape label (rows, cols then 0).
using cell_id = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::string>;

std::uint64_t rotl1(std::uint64_t x) { return (x << 1) | (x >> 63); }

std::uint64_t fnv1a64(const std::string &s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string label(const cell_id &k) {
  if (!std::get<4>(k).empty())
    return fmt::format("{}|{}|{}", std::get<0>(k), std::get<1>(k), std::get<4>(k));
  return fmt::format("{}|{}|{}x{}", std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k));
}

// A ratio of two medians: 0/0 is 1 (both instantaneous), x/0 is +infinity.
double ratio_of(double b, double a) {
  if (a == 0.0)
    return b == 0.0 ? 1.0 : std::numeric_limits<double>::infinity();
  return b / a;
}

struct side {
  std::string hash;
  std::string run_id;
  std::string protocol_id;
  std::map<cell_id, const std::vector<double> *> cells;
  std::vector<cell_id> order; ///< cells in report order
};

side read_side(const report_document &report, const std::string &who) {
  side s;
  s.hash = report.protocol.hash;
  s.run_id = report.run.run_id;
  s.protocol_id = report.protocol.body.value("id", "");
  if (report.cells.size() > static_cast<std::size_t>(max_cells))
    throw invalid_input(fmt::format("{}: {} cells, more than the protocol limit of {}", who,
                                    report.cells.size(), max_cells));
  for (std::size_t i = 0; i < report.cells.size(); ++i) {
    const report_cell &c = report.cells[i];
    if (c.samples_ms.size() > static_cast<std::size_t>(max_repetitions))
      throw invalid_input(fmt::format("{}: cells[{}] has {} samples, more than the protocol limit "
                                      "of {} repetitions",
                                      who, i, c.samples_ms.size(), max_repetitions));
    cell_id k{c.key.arm, std::string(to_string(c.key.pass)), c.key.rows, c.key.cols,
              c.key.named() ? shape_label(c.key) : std::string()};

    if (!s.cells.emplace(k, &c.samples_ms).second)
      throw invalid_input(fmt::format("{}: cells[{}] repeats cell {}", who, i, label(k)));
    s.order.push_back(k);
  }
  return s;
}

/// `report` parsed by the report model; errors name the report ("report A: cells[2] ...").
report_document parse_side(const json &report, const std::string &who) {
  try {
    return report_from_json(report, "");
  } catch (const error &e) {
    throw invalid_input(fmt::format("{}: {}", who, e.what()));
  }
}

json key_json(const cell_id &k) {
  if (!std::get<4>(k).empty()) { // the label "a=1 b=2" back to the key's shape
    cell_key key;
    std::string_view rest = std::get<4>(k);
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      const std::string_view item = rest.substr(0, space);
      const auto eq = item.find('=');
      key.shape.push_back(
          {std::string(item.substr(0, eq)), std::stoll(std::string(item.substr(eq + 1)))});
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    json j = shape_json(key);
    j["arm"] = std::get<0>(k);
    j["pass"] = std::get<1>(k);
    return j;
  }
  return {{"arm", std::get<0>(k)},
          {"pass", std::get<1>(k)},
          {"rows", std::get<2>(k)},
          {"cols", std::get<3>(k)}};
}

std::vector<side> read_sides(const std::vector<report_document> &runs, const char *name) {
  std::vector<side> out;
  for (std::size_t i = 0; i < runs.size(); ++i)
    out.push_back(read_side(runs[i], runs.size() == 1 ? fmt::format("report {}", name)
                                                      : fmt::format("report {}{}", name, i + 1)));
  return out;
}

/// What the comparison reads from report A's protocol, and the bounds it derives.
struct settings {
  double confidence = 0;
  std::size_t resamples = 0;
  double p_lo = 0, p_hi = 0;       ///< the interval's quantiles
  double same_lo = 0, same_hi = 0; ///< a ratio within is "same" whatever its interval
};

/// The two members of report A's protocol body the comparison reads, checked.
settings read_settings(const json &body, double min_effect) {
  // The protocol body is the protocol's format, not the report's: only the two members the
  // comparison reads are checked here, so that reports of retired kernels still compare.
  const json *analysis = body.contains("analysis") ? &body.at("analysis") : nullptr;
  const auto analysis_member = [&](const char *key) -> const json & {
    if (analysis == nullptr || !analysis->is_object() || !analysis->contains(key))
      throw invalid_input(fmt::format("report A has no protocol.body.analysis.{}", key));
    return analysis->at(key);
  };
  const json &conf_j = analysis_member("confidence");
  const json &res_j = analysis_member("bootstrap_resamples");
  if (!conf_j.is_number() || !(conf_j.get<double>() > 0.0 && conf_j.get<double>() < 1.0))
    throw invalid_input("report A: protocol.body.analysis.confidence is not in (0, 1)");
  // Bounded by the protocol schema's limit: the count sizes an allocation and the work.
  if (!res_j.is_number_integer() || res_j.get<std::int64_t>() < 1 ||
      res_j.get<std::int64_t>() > max_bootstrap_resamples)
    throw invalid_input(fmt::format("report A: protocol.body.analysis.bootstrap_resamples is not "
                                    "between 1 and {}",
                                    max_bootstrap_resamples));
  settings s;
  s.confidence = conf_j.get<double>();
  s.resamples = static_cast<std::size_t>(res_j.get<std::int64_t>());
  s.p_lo = (1.0 - s.confidence) / 2.0;
  s.p_hi = (1.0 + s.confidence) / 2.0;
  // A ratio within [1/(1 + e), 1 + e] is "same" whatever its interval: a smaller difference is
  // not one the comparison claims.
  s.same_hi = 1.0 + min_effect;
  s.same_lo = 1.0 / s.same_hi;
  return s;
}

/// One cell's samples, one list per run.
using run_samples = std::vector<const std::vector<double> *>;

// A cell is compared when every run of both sides has it; its samples, one list per run.
run_samples runs_of(const std::vector<side> &sides, const cell_id &k) {
  run_samples out;
  for (const side &s : sides) {
    const auto it = s.cells.find(k);
    if (it == s.cells.end())
      return run_samples{};
    out.push_back(it->second);
  }
  return out;
}

std::vector<double> pooled(const run_samples &runs) {
  std::vector<double> all;
  for (const auto *r : runs)
    all.insert(all.end(), r->begin(), r->end());
  return all;
}

// One side of one resample: with one run, its samples redrawn; with several, runs redrawn
// first (as many as there are), then each drawn run's samples.
void redraw(rng &gen, const run_samples &runs, const std::vector<double> &all,
            std::vector<double> &out) {
  if (runs.size() == 1) {
    for (auto &v : out)
      v = all[gen.below(all.size())];
    return;
  }
  out.clear();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::vector<double> &run = *runs[gen.below(runs.size())];
    for (std::size_t j = 0; j < run.size(); ++j)
      out.push_back(run[gen.below(run.size())]);
  }
}

/// The marks so far, and the log ratios of the geometric mean.
struct tally {
  std::size_t faster = 0, slower = 0, same = 0;
  double log_sum = 0.0;
  std::size_t log_n = 0;
};

json summary_json(const tally &t) {
  return {{"faster", t.faster},
          {"slower", t.slower},
          {"same", t.same},
          {"geomean_ratio",
           t.log_n == 0 ? json(nullptr)
                        : finite_or_null(std::exp(t.log_sum / static_cast<double>(t.log_n)))}};
}

/// A cell that some run has no sample of: its medians where there are samples, no ratio.
json no_samples_row(json row, std::vector<double> ra, std::vector<double> rb) {
  row["median_a_ms"] = ra.empty() ? json(nullptr) : json(median_inplace(ra));
  row["median_b_ms"] = rb.empty() ? json(nullptr) : json(median_inplace(rb));
  row["ratio"] = nullptr;
  row["ci_lo"] = nullptr;
  row["ci_hi"] = nullptr;
  row["mark"] = "no-samples";
  return row;
}

/// The sorted bootstrap ratios of one cell: `resamples` redraws of both sides.
std::vector<double> bootstrap_ratios(const run_samples &xa_runs, const run_samples &xb_runs,
                                     const std::vector<double> &xa, const std::vector<double> &xb,
                                     std::uint64_t seed, std::size_t resamples) {
  rng gen(seed);
  std::vector<double> ra = xa, rb = xb, ratios(resamples);
  for (std::size_t r = 0; r < resamples; ++r) {
    redraw(gen, xa_runs, xa, ra);
    redraw(gen, xb_runs, xb, rb);
    ratios[r] = ratio_of(median_inplace(rb), median_inplace(ra));
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios;
}

/// One compared cell's row; counts its mark in `t`.
json compare_cell(const cell_id &k, const run_samples &xa_runs, const run_samples &xb_runs,
                  std::uint64_t seed, const settings &set, tally &t) {
  const std::vector<double> xa = pooled(xa_runs);
  const std::vector<double> xb = pooled(xb_runs);
  json row = key_json(k);
  row["n_a"] = xa.size();
  row["n_b"] = xb.size();
  const auto empty = [](const std::vector<double> *r) { return r->empty(); };
  if (std::any_of(xa_runs.begin(), xa_runs.end(), empty) ||
      std::any_of(xb_runs.begin(), xb_runs.end(), empty))
    return no_samples_row(std::move(row), xa, xb);
  std::vector<double> ra = xa, rb = xb;
  const double ma = median_inplace(ra);
  const double mb = median_inplace(rb);
  const double ratio = ratio_of(mb, ma);
  const std::vector<double> ratios =
      bootstrap_ratios(xa_runs, xb_runs, xa, xb, seed, set.resamples);
  const double lo = quantile_sorted(ratios, set.p_lo);
  const double hi = quantile_sorted(ratios, set.p_hi);
  const bool small = ratio > set.same_lo && ratio < set.same_hi;
  const char *mark = small ? "same" : hi < 1.0 ? "faster" : lo > 1.0 ? "slower" : "same";
  (std::string_view(mark) == "faster"   ? t.faster
   : std::string_view(mark) == "slower" ? t.slower
                                        : t.same) += 1;
  if (std::isfinite(ratio) && ratio > 0.0) {
    t.log_sum += std::log(ratio);
    ++t.log_n;
  }
  row["median_a_ms"] = ma;
  row["median_b_ms"] = mb;
  row["ratio"] = finite_or_null(ratio);
  row["ci_lo"] = finite_or_null(lo);
  row["ci_hi"] = finite_or_null(hi);
  row["mark"] = mark;
  return row;
}

json side_json(const std::vector<side> &runs) {
  const side &s = runs.front();
  json out{{"protocol_hash", s.hash}, {"protocol_id", s.protocol_id}, {"run_id", s.run_id}};
  if (runs.size() > 1) {
    json ids = json::array();
    for (const side &r : runs)
      ids.push_back(r.run_id);
    out["run_ids"] = ids;
  }
  return out;
}

/// An arm's code as the freeze record pins it: the built-in kernel's source hash or the outside
/// file's hash, with what it is ("kernel layernorm.fused", "python f.py:fn"); nullopt without.
std::optional<std::pair<std::string, std::string>> arm_code(const json &freeze,
                                                            const std::string &arm) {
  if (!freeze.is_object() || !freeze.contains("kernels") || !freeze["kernels"].is_object())
    return std::nullopt;
  const json &kernels = freeze["kernels"];
  if (!kernels.contains(arm) || !kernels[arm].is_object())
    return std::nullopt;
  const json &k = kernels[arm];
  const auto text = [&](const char *key) {
    return k.contains(key) && k[key].is_string() ? k[key].get<std::string>() : std::string();
  };
  const std::string hash = text("source_sha256").empty() ? text("sha256") : text("source_sha256");
  if (hash.empty())
    return std::nullopt;
  for (const char *kind : {"kernel", "python", "plugin"})
    if (!text(kind).empty())
      return std::pair{hash, fmt::format("{} {}{}", kind, text(kind),
                                         text("entry").empty() ? "" : ":" + text("entry"))};
  return std::pair{hash, std::string()};
}

/// The arms of both first reports whose code differs between them (its freeze-record hash).
json code_changes(const report_document &a, const report_document &b) {
  json out = json::array();
  const json &arms = a.protocol.body.contains("arms") ? a.protocol.body["arms"] : json::array();
  if (!arms.is_array())
    return out;
  for (const json &arm : arms) {
    if (!arm.is_object() || !arm.contains("id") || !arm["id"].is_string())
      continue;
    const std::string id = arm["id"].get<std::string>();
    const auto ca = arm_code(a.protocol.freeze, id);
    const auto cb = arm_code(b.protocol.freeze, id);
    if (ca && cb && ca->first != cb->first)
      out.push_back({{"arm", id},
                     {"a", {{"sha256", ca->first}, {"code", ca->second}}},
                     {"b", {{"sha256", cb->first}, {"code", cb->second}}}});
  }
  return out;
}

} // namespace

std::uint64_t compare_cell_seed(const std::string &hash_a, const std::string &hash_b,
                                const std::string &cell_label) {
  const std::uint64_t base =
      stream_seed(seed_from_hash(hash_a) ^ rotl1(seed_from_hash(hash_b)), stream_id::bootstrap);
  return base ^ fnv1a64(cell_label);
}

json compare_reports(const json &a, const json &b, double min_effect) {
  const report_document da = parse_side(a, "report A");
  const report_document db = parse_side(b, "report B");
  return compare_reports(da, db, min_effect);
}

json compare_reports(const report_document &a, const report_document &b, double min_effect) {
  return compare_reports(std::vector<report_document>{a}, std::vector<report_document>{b},
                         min_effect);
}

json compare_reports(const std::vector<report_document> &runs_a,
                     const std::vector<report_document> &runs_b, double min_effect) {
  if (runs_a.empty() || runs_b.empty())
    throw invalid_input("compare needs at least one report on each side");
  if (!(min_effect >= 0.0 && min_effect < 1.0))
    throw invalid_input(
        fmt::format("--min-effect must be from 0 to 1 (a fraction), got {}", min_effect));
  const std::vector<side> sa = read_sides(runs_a, "A");
  const std::vector<side> sb = read_sides(runs_b, "B");
  const settings set = read_settings(runs_a.front().protocol.body, min_effect);
  json cells = json::array();
  json only_a = json::array();
  tally t;
  for (const cell_id &k : sa.front().order) {
    const auto xa_runs = runs_of(sa, k);
    const auto xb_runs = runs_of(sb, k);
    if (xa_runs.empty() || xb_runs.empty()) {
      only_a.push_back(key_json(k));
      continue;
    }
    const std::uint64_t seed = compare_cell_seed(sa.front().hash, sb.front().hash, label(k));
    cells.push_back(compare_cell(k, xa_runs, xb_runs, seed, set, t));
  }
  json only_b = json::array();
  for (const cell_id &k : sb.front().order)
    if (runs_of(sa, k).empty() || runs_of(sb, k).empty())
      only_b.push_back(key_json(k));
  const bool by_runs = sa.size() > 1 || sb.size() > 1;
  return {{"a", side_json(sa)},
          {"b", side_json(sb)},
          {"method", by_runs ? "percentile bootstrap of median(B*)/median(A*), resampling "
                               "runs, then samples within each drawn run"
                             : "percentile bootstrap of median(B*)/median(A*)"},
          {"confidence", set.confidence},
          {"bootstrap_resamples", set.resamples},
          {"min_effect", min_effect},
          {"runs_a", sa.size()},
          {"runs_b", sb.size()},
          {"cells", cells},
          {"only_in_a", only_a},
          {"only_in_b", only_b},
          {"code_changed", code_changes(runs_a.front(), runs_b.front())},
          {"summary", summary_json(t)}};
}

} // namespace prereg
