// The raw facts to and from the JSON the measuring process sends, read strictly through
// json_node with a fault that names the member.
#include "run/raw_json.hpp"

#include "prereg/error.hpp"
#include "spec/device_state.hpp"
#include "spec/roofs.hpp"
#include "spec/sched.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace prereg {
namespace detail {
namespace {

class child_fault final : public json_fault {
public:
  [[noreturn]] void fail(const std::string &path, std::string_view problem) const override {
    throw io_error(
        fmt::format("the measuring process sent an invalid result: {} {}", path, problem));
  }
};

} // namespace

const json_fault &child_result_fault() {
  static const child_fault fault;
  return fault;
}

json_node child_node(const json &j, std::string path) {
  return {j, std::move(path), child_result_fault()};
}

void bad_result(const std::string &path, std::string_view problem) {
  child_result_fault().fail(path, problem);
  std::abort(); // a json_fault throws; reaching here is a bug in the fault
}

std::uint64_t strict_count(const json_node &n) {
  const json &j = n.value();
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0))
    n.fail("is not a non-negative integer");
  return j.get<std::uint64_t>();
}

} // namespace detail

namespace {

using detail::bad_result;
using detail::strict_count;

// --- reading ---------------------------------------------------------------------------------

/// A number, or NaN for null.
double number_or_nan(const json_node &n) {
  if (n.value().is_null())
    return std::numeric_limits<double>::quiet_NaN();
  return n.number();
}

/// An array of numbers (finite or not: the callers say what they need).
std::vector<double> number_array(const json_node &n) {
  std::vector<double> v;
  const std::size_t size = n.array_size();
  for (std::size_t i = 0; i < size; ++i)
    v.push_back(n.at(i).number());
  return v;
}

std::vector<std::int64_t> count_array(const json_node &n) {
  std::vector<std::int64_t> v;
  const std::size_t size = n.array_size();
  for (std::size_t i = 0; i < size; ++i)
    v.push_back(static_cast<std::int64_t>(strict_count(n.at(i))));
  return v;
}

/// The string member `key` of `o`, or nullopt for null.
std::optional<std::string> optional_text(const json_node &o, std::string_view key) {
  const json_node n = o[key];
  if (n.value().is_null())
    return std::nullopt;
  return n.str();
}

cell_key planned_key(const json_node &n, const std::vector<cell_key> &cells) {
  cell_key k;
  k.arm = n["arm"].str();
  const json_node pass = n["pass"];
  if (pass.str() != "fwd" && pass.str() != "fwd+bwd")
    pass.fail("is not a pass");
  k.pass = pass.str() == "fwd" ? pass_kind::fwd : pass_kind::fwd_bwd;
  if (n.has("shape")) {
    if (const std::string why = read_shape_json(n.value(), true, k); !why.empty())
      n.fail(why);
  } else {
    const json &rows = n["rows"].value(), &cols = n["cols"].value();
    if (!rows.is_number_integer() || !cols.is_number_integer())
      n.fail("has a non-integer shape");
    k.rows = rows.get<std::int64_t>();
    k.cols = cols.get<std::int64_t>();
  }
  if (std::find(cells.begin(), cells.end(), k) == cells.end())
    n.fail("is not a planned cell");
  return k;
}

/// The planned cells a list names, each at most once.
class planned_once {
public:
  explicit planned_once(const std::vector<cell_key> &planned) : m_planned(planned) {}
  /// The planned key at `record["key_member"]`; fails at `record` when it repeats.
  cell_key key(const json_node &record, std::string_view key_member) {
    const cell_key k = planned_key(record[key_member], m_planned);
    if (std::find(m_seen.begin(), m_seen.end(), k) != m_seen.end())
      record.fail("repeats a cell");
    m_seen.push_back(k);
    return k;
  }
  void restart() { m_seen.clear(); }

private:
  const std::vector<cell_key> &m_planned;
  std::vector<cell_key> m_seen;
};

instrument_record read_instrument(const json_node &in) {
  instrument_record r;
  r.ceiling_gbps = number_or_nan(in["ceiling_gbps"]);
  r.ceiling_samples_gbps = number_array(in["ceiling_samples_gbps"]);
  r.ceiling_bytes = strict_count(in["ceiling_bytes"]);
  r.launch_floor_ms = number_or_nan(in["launch_floor_ms"]);
  r.timer_resolution_ms = number_or_nan(in["timer_resolution_ms"]);
  r.flush_bytes = strict_count(in["flush_bytes"]);
  r.flush_method = in["flush_method"].str();
  r.llc_bytes = strict_count(in["llc_bytes"]);
  r.clock_start_mhz = number_or_nan(in["clock_start_mhz"]);
  r.kernel_clock = in["kernel_clock"].str();
  r.kernel_clock_floor_ms = number_or_nan(in["kernel_clock_floor_ms"]);
  r.kernel_records_dropped = strict_count(in["kernel_records_dropped"]);
  if (in.has("roofs")) {
    r.roofs.emplace();
    if (const std::string bad = read_roofs_json(in["roofs"].value(), *r.roofs); !bad.empty())
      in["roofs"].fail(bad);
  }
  if (in.has("ceiling_reused")) // the parent checks it is the entry it gave (run/ceiling_cache)
    r.ceiling_reused = in["ceiling_reused"].object().value();
  return r;
}

kernel_name_record read_kernel_name(const json_node &q, std::size_t samples) {
  kernel_name_record k;
  k.name = q["name"].str();
  k.calls = static_cast<std::int64_t>(strict_count(q["calls"]));
  k.samples_ms = number_array(q["samples_ms"]);
  if (k.samples_ms.size() != samples)
    q["samples_ms"].fail("does not have one value per sample");
  return k;
}

// The kernel clock's per-sample facts of one cell: as many as its samples, or none.
void read_kernel_facts(const json_node &c, cell_record &rec) {
  rec.kernel_ms = number_array(c["kernel_ms"]);
  rec.kernel_counts = count_array(c["kernel_counts"]);
  const std::size_t n = rec.kernel_ms.size();
  if (n != 0 && n != rec.samples_ms.size())
    c["kernel_ms"].fail("does not have one value per sample");
  if (rec.kernel_counts.size() != n)
    c["kernel_counts"].fail("does not have one value per kernel_ms");
  if (c.has("graph_kernel_counts")) {
    rec.graph_kernel_counts = count_array(c["graph_kernel_counts"]);
    if (rec.graph_kernel_counts.size() != n)
      c["graph_kernel_counts"].fail("does not have one value per kernel_ms");
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(rec.kernel_ms[i]) || rec.kernel_ms[i] < 0)
      c["kernel_ms"].at(i).fail("is not a finite time");
  const json_node names = c["kernel_names"];
  const std::size_t count = names.array_size();
  for (std::size_t i = 0; i < count; ++i)
    rec.kernel_names.push_back(read_kernel_name(names.at(i), n));
}

/// regions_ms and region_kernels_ms, when present: label -> one finite time per sample.
void read_regions(const json_node &c, cell_record &rec) {
  for (const char *member_name : {"regions_ms", "region_kernels_ms"}) {
    if (!c.has(member_name))
      continue;
    const json_node regions = c[member_name];
    regions.object();
    auto &into =
        std::string_view(member_name) == "regions_ms" ? rec.regions_ms : rec.region_kernels_ms;
    for (const auto &[label, times] : regions.value().items()) {
      const json_node rp = regions[label];
      into[label] = number_array(rp);
      if (into[label].size() != rec.samples_ms.size())
        rp.fail("is not one time per sample");
      for (const double t : into[label])
        if (!std::isfinite(t) || t < 0)
          rp.fail("holds a time that is not finite and non-negative");
    }
  }
  for (const auto &[label, times] : rec.region_kernels_ms)
    if (!rec.regions_ms.contains(label))
      c["region_kernels_ms"][label].fail("names a region the arm did not time");
}

cell_record read_cell(const json_node &c, planned_once &keys) {
  cell_record rec;
  rec.key = keys.key(c, "key");
  rec.samples_ms = number_array(c["samples_ms"]);
  for (std::size_t s = 0; s < rec.samples_ms.size(); ++s)
    if (!std::isfinite(rec.samples_ms[s]) || rec.samples_ms[s] < 0)
      c["samples_ms"].at(s).fail("is not a finite time");
  rec.peak_bytes = strict_count(c["peak_bytes"]);
  rec.harness_bytes_in_window = strict_count(c["harness_bytes_in_window"]);
  rec.clock_mhz = number_or_nan(c["clock_mhz"]);
  rec.error = optional_text(c, "error");
  rec.first_call_ms = number_or_nan(c["first_call_ms"]);
  rec.warmup_calls = static_cast<std::int64_t>(strict_count(c["warmup_calls"]));
  rec.off_window_ms = number_or_nan(c["off_window_ms"]);
  rec.spot_checks = static_cast<std::int64_t>(strict_count(c["spot_checks"]));
  rec.input_mutated = optional_text(c, "input_mutated");
  read_kernel_facts(c, rec);
  read_regions(c, rec);
  if (c.has("states"))
    if (const std::string bad =
            read_states_json(c["states"].value(), rec.samples_ms.size(), rec.states);
        !bad.empty())
      c["states"].fail(bad);
  if (c.has("stop")) {
    rec.stop.emplace();
    if (const std::string bad = read_stop_json(c["stop"].value(), *rec.stop); !bad.empty())
      c["stop"].fail(bad);
  }
  if (c.has("sched"))
    if (const std::string bad =
            read_sched_json(c["sched"].value(), rec.samples_ms.size(), rec.sched);
        !bad.empty())
      c["sched"].fail(bad);
  return rec;
}

correctness_record read_correctness(const json_node &c, planned_once &keys) {
  correctness_record rec;
  rec.key = keys.key(c, "key");
  rec.max_abs_error = number_or_nan(c["max_abs_error"]);
  rec.max_rel_error = number_or_nan(c["max_rel_error"]);
  const json &u = c["unwritten"].value(), &ok = c["passed"].value();
  if (!u.is_boolean() || !ok.is_boolean())
    c.fail("has a non-boolean flag");
  rec.unwritten = u.get<bool>();
  rec.passed = ok.get<bool>();
  rec.detail = c["detail"].str();
  return rec;
}

json read_deviation(const json_node &d, const std::vector<cell_key> &planned) {
  if (d["kind"].str() != "cell-skipped")
    d["kind"].fail("is not a deviation the engine records");
  (void)d["message"].str();
  (void)planned_key(d["cell"], planned);
  return d.value();
}

// --- writing ---------------------------------------------------------------------------------

json kernel_names_json(const std::vector<kernel_name_record> &names) {
  json out = json::array();
  for (const auto &n : names)
    out.push_back({{"name", n.name}, {"calls", n.calls}, {"samples_ms", n.samples_ms}});
  return out;
}

json cell_json(const cell_record &c) {
  json out = {{"key", to_json(c.key)},
              {"samples_ms", c.samples_ms},
              {"peak_bytes", c.peak_bytes},
              {"harness_bytes_in_window", c.harness_bytes_in_window},
              {"clock_mhz", finite_or_null(c.clock_mhz)},
              {"error", c.error ? json(*c.error) : json(nullptr)},
              {"first_call_ms", finite_or_null(c.first_call_ms)},
              {"warmup_calls", c.warmup_calls},
              {"off_window_ms", finite_or_null(c.off_window_ms)},
              {"spot_checks", c.spot_checks},
              {"input_mutated", c.input_mutated ? json(*c.input_mutated) : json(nullptr)},
              {"kernel_ms", c.kernel_ms},
              {"kernel_counts", c.kernel_counts},
              {"kernel_names", kernel_names_json(c.kernel_names)}};
  if (!c.graph_kernel_counts.empty())
    out["graph_kernel_counts"] = c.graph_kernel_counts;
  if (!c.regions_ms.empty())
    out["regions_ms"] = c.regions_ms;
  if (!c.region_kernels_ms.empty())
    out["region_kernels_ms"] = c.region_kernels_ms;
  if (!c.states.empty())
    out["states"] = states_json(c.states);
  if (c.stop)
    out["stop"] = stop_json(*c.stop);
  if (!c.sched.empty())
    out["sched"] = sched_json(c.sched);
  return out;
}

/// [{name, ms}] of a run's phases (raw_run::phases, timing_parts).
json phases_json(const std::vector<phase_time> &phases) {
  json out = json::array();
  for (const auto &p : phases)
    out.push_back({{"name", p.name}, {"ms", finite_or_null(p.ms)}});
  return out;
}

/// The phases at `n` (absent: none, as a measuring side of an older build sends).
std::vector<phase_time> read_phases(const json_node &root, const char *key) {
  std::vector<phase_time> out;
  if (!root.has(key))
    return out;
  const json_node n = root[key];
  const std::size_t size = n.array_size();
  for (std::size_t i = 0; i < size; ++i)
    out.push_back({n.at(i)["name"].str(), number_or_nan(n.at(i)["ms"])});
  return out;
}

json instrument_json(const instrument_record &in) {
  json j = {{"ceiling_gbps", finite_or_null(in.ceiling_gbps)},
            {"ceiling_samples_gbps", in.ceiling_samples_gbps},
            {"ceiling_bytes", in.ceiling_bytes},
            {"launch_floor_ms", finite_or_null(in.launch_floor_ms)},
            {"timer_resolution_ms", finite_or_null(in.timer_resolution_ms)},
            {"flush_bytes", in.flush_bytes},
            {"flush_method", in.flush_method},
            {"llc_bytes", in.llc_bytes},
            {"clock_start_mhz", finite_or_null(in.clock_start_mhz)},
            {"kernel_clock", in.kernel_clock},
            {"kernel_clock_floor_ms", finite_or_null(in.kernel_clock_floor_ms)},
            {"kernel_records_dropped", in.kernel_records_dropped}};
  if (in.roofs)
    j["roofs"] = roofs_json(*in.roofs);
  if (in.ceiling_reused)
    j["ceiling_reused"] = *in.ceiling_reused;
  return j;
}

} // namespace

json raw_to_json(const raw_run &raw) {
  json cells = json::array();
  for (const auto &c : raw.cells)
    cells.push_back(cell_json(c));
  json correctness = json::array();
  for (const auto &c : raw.correctness)
    correctness.push_back({{"key", to_json(c.key)},
                           {"max_abs_error", finite_or_null(c.max_abs_error)},
                           {"max_rel_error", finite_or_null(c.max_rel_error)},
                           {"unwritten", c.unwritten},
                           {"passed", c.passed},
                           {"detail", c.detail}});
  return {{"environment", raw.environment},
          {"instrument", instrument_json(raw.instrument)},
          {"cells", cells},
          {"correctness", correctness},
          {"deviations", raw.deviations},
          {"arm_log", raw.arm_log},
          {"phases", phases_json(raw.phases)},
          {"timing_parts", phases_json(raw.timing_parts)}};
}

raw_run raw_from_json(const json &j, const std::vector<cell_key> &planned) {
  const json_node root = detail::child_node(j, "raw");
  raw_run raw;
  raw.environment = root["environment"].object().value();
  raw.instrument = read_instrument(root["instrument"]);
  planned_once keys(planned);
  const json_node cells = root["cells"];
  const std::size_t n_cells = cells.array_size();
  for (std::size_t i = 0; i < n_cells; ++i)
    raw.cells.push_back(read_cell(cells.at(i), keys));
  keys.restart();
  const json_node corr = root["correctness"];
  const std::size_t n_corr = corr.array_size();
  for (std::size_t i = 0; i < n_corr; ++i)
    raw.correctness.push_back(read_correctness(corr.at(i), keys));
  const json_node devs = root["deviations"];
  const std::size_t n_devs = devs.array_size();
  for (std::size_t i = 0; i < n_devs; ++i)
    raw.deviations.push_back(read_deviation(devs.at(i), planned));
  if (root.has("arm_log"))
    raw.arm_log = root["arm_log"].str();
  raw.phases = read_phases(root, "phases");
  raw.timing_parts = read_phases(root, "timing_parts");
  return raw;
}

} // namespace prereg
