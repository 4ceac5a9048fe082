// The raw facts of a run: what the measurement engine (engine/measure.hpp) records on a device
// (device/device.hpp). Measurement only records; analysis (stats, defects, verdicts) computes.
#pragma once

#include "base/json.hpp"
#include "prereg/arm.hpp"
#include "spec/operation.hpp"
#include "spec/protocol.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// One axis of a cell's shape: its name and its extent.
struct axis_extent {
  std::string axis;
  std::int64_t extent = 0;
  friend bool operator==(const axis_extent &, const axis_extent &) = default;
};

/// One cell of the experiment: an arm of the protocol, a pass and a shape.
/// The shape of an operation whose axes are exactly (rows, cols) is `rows`, `cols` (`shape`
/// empty); any other operation's is `shape`, every axis in the operation's order (`rows` and
/// `cols` then 0). docs/report.md, "Cell keys".
struct cell_key {
  std::string arm; ///< the protocol's arm id (not the kernel name)
  pass_kind pass = pass_kind::fwd;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<axis_extent> shape; ///< named axes (non-empty only off rows x cols)
  friend bool operator==(const cell_key &, const cell_key &) = default;
  /// Whether the shape is over named axes (not rows x cols).
  [[nodiscard]] bool named() const { return !shape.empty(); }
  /// The same shape (pass and arm aside).
  [[nodiscard]] bool same_shape(const cell_key &o) const {
    return rows == o.rows && cols == o.cols && shape == o.shape;
  }
};

/// {"arm", "pass", "rows", "cols"} or, over named axes, {"arm", "pass", "shape": [{"axis",
/// "extent"}, ...]}: a cell as reports, deviations and defects name it.
[[nodiscard]] json to_json(const cell_key &k);
/// The shape's members alone: {"rows", "cols"} or {"shape": [...]}.
[[nodiscard]] json shape_json(const cell_key &k);
/// Reads a shape's members (as shape_json writes them) into `k`; returns what is wrong, or "".
/// `expect_named`: the shape must be a "shape" list (else rows, cols).
[[nodiscard]] std::string read_shape_json(const json &j, bool expect_named, cell_key &k);
/// The shape as a label: "ROWSxCOLS" or "a=1 b=2 c=3" (axis order).
[[nodiscard]] std::string shape_label(const cell_key &k);
/// "ARM PASS ROWSxCOLS" or "ARM PASS a=1 b=2", for messages and report labels.
[[nodiscard]] std::string cell_label(const cell_key &k);

/// The shape of `k` as the descriptor's extents (in `op`'s axis order); throws logic_error
/// when the key's axes are not the operation's.
[[nodiscard]] shape key_shape(const operation_desc &op, const cell_key &k);
/// The key of arm `arm`, pass `pass` at shape `s` of `op` (rows, cols where the operation's
/// axes are exactly those, else named).
[[nodiscard]] cell_key key_of(std::string arm, pass_kind pass, const operation_desc &op,
                              const shape &s);
/// The cell's shape seen as rows x cols, as arms see it (`rows`, `cols` of their call): itself
/// for a rows x cols operation; over named axes, rows the product of every axis but the last,
/// cols the last (docs/operations.md, "Axes").
[[nodiscard]] std::pair<std::int64_t, std::int64_t> flat_rows_cols(const cell_key &k);
/// The seed of a shape's random inputs: reference::cell_seed for rows x cols; over named axes
/// the same fold over every extent in axis order.
[[nodiscard]] std::uint64_t shape_seed(std::uint64_t plan_seed, pass_kind pass, const cell_key &k);

/// The protocol's shapes in plan order (rows x cols, or the named axes' product, the first
/// axis outermost), as keys without arm (pass fwd).
[[nodiscard]] std::vector<cell_key> protocol_shapes(const protocol &p);
/// Whether `at` selects pass `k.pass` and the shape of `k` of protocol `p`.
[[nodiscard]] bool selects(const protocol &p, const cell_selector &at, const cell_key &k);

/// What the engine asks a backend to do: the protocol, the cells that can run (in protocol
/// order: arms x passes x rows x cols), and the seed for arm order and random inputs.
class outside_arm;

struct run_plan {
  const protocol *proto = nullptr;
  std::vector<cell_key> cells;
  std::uint64_t seed = 0;
  /// Loads a protocol's outside arm (plugin, python) where the engine runs: in the measuring
  /// process, never in one that holds the signing key. Unset: outside arms are cell-skipped.
  std::function<std::shared_ptr<outside_arm>(const arm_spec &)> load_outside;
  /// Arms left out by the watchdog (docs/engine.md, "The watchdog"): arm id -> the reason each
  /// of its cells fails with. Never loaded, bound or called; their cells keep their place in
  /// the order, with that error, no samples and no correctness record.
  std::map<std::string, std::string> excluded;
  /// Record the measuring thread's scheduling around every kept sample (cell_record::sched):
  /// set in the isolated measuring process.
  bool record_sched = false;
  /// A copy ceiling measured earlier on this device and build (a verified, signed cache entry:
  /// docs/engine.md, "Reusing the copy ceiling"), or null. The instrument takes its values
  /// instead of measuring when its copy size and flush are this instrument's.
  json reuse_ceiling = nullptr;
};

/// The kernel clock's facts about one kernel name at one cell (docs/engine.md, kernel clock).
struct kernel_name_record {
  std::string name;               ///< the kernel's demangled name as the device reported it
  std::int64_t calls = 0;         ///< its executions inside the cell's timed windows
  std::vector<double> samples_ms; ///< per sample: the sum of its executions' device times
};

/// One reading of the device's state after a kept sample's window (docs/engine.md, "Device
/// state"): NaN (and reasons nullopt) where the device or NVML could not say.
struct device_state_sample {
  double sm_mhz = std::numeric_limits<double>::quiet_NaN();  ///< SM clock [MHz]
  double mem_mhz = std::numeric_limits<double>::quiet_NaN(); ///< memory clock [MHz]
  double power_w = std::numeric_limits<double>::quiet_NaN(); ///< board power [W]
  double temp_c = std::numeric_limits<double>::quiet_NaN();  ///< GPU temperature [C]
  /// NVML's clocks-event (throttle) reasons, a bit mask (nvmlClocksEventReason*).
  std::optional<std::uint64_t> reasons;
  friend bool operator==(const device_state_sample &a, const device_state_sample &b) {
    const auto same = [](double x, double y) { return x == y || (x != x && y != y); };
    return same(a.sm_mhz, b.sm_mhz) && same(a.mem_mhz, b.mem_mhz) && same(a.power_w, b.power_w) &&
           same(a.temp_c, b.temp_c) && a.reasons == b.reasons;
  }
};

/// The measuring thread's scheduling around one kept sample's flush and window (docs/engine.md,
/// "Stopped or descheduled"): its host time, the time it was runnable but not running, and
/// how many times the process was continued after a stop (SIGCONT) in between.
struct sched_sample {
  double wall_ms = 0;
  double run_delay_ms = std::numeric_limits<double>::quiet_NaN(); ///< NaN: the kernel did not say
  std::int64_t stops = 0;
  friend bool operator==(const sched_sample &a, const sched_sample &b) {
    const auto same = [](double x, double y) { return x == y || (x != x && y != y); };
    return a.wall_ms == b.wall_ms && same(a.run_delay_ms, b.run_delay_ms) && a.stops == b.stops;
  }
};

/// Why and where a cell's sampling stopped under a protocol's stopping rule (docs/protocol.md,
/// `measurement.stop`): the reason, the precision reached at the last sample (the bootstrap
/// interval of the median, relative half-width; NaN below 2 samples) and the host time the
/// cell's samples took [s].
struct stop_record {
  std::string reason; ///< "precision" | "max" | "max_seconds" | "error"
  double rel_ci = std::numeric_limits<double>::quiet_NaN();
  double ci_lo_ms = std::numeric_limits<double>::quiet_NaN();
  double ci_hi_ms = std::numeric_limits<double>::quiet_NaN();
  double seconds = 0;
};

/// Raw facts about one cell.
struct cell_record {
  cell_key key;
  std::vector<double> samples_ms; ///< one per repetition, in measurement order; one step each
  std::uint64_t peak_bytes = 0;   ///< largest total the arm's step_allocator held at once
  std::uint64_t harness_bytes_in_window = 0; ///< device memory the harness gained inside a
                                             ///< timed window (should be 0)
  double clock_mhz = std::numeric_limits<double>::quiet_NaN(); ///< SM clock read after the cell
  std::optional<std::string> error; ///< the arm failed during measurement (samples may be short)
  /// Host time of the arm's first call at this cell [ms]: binding, first call (JIT, module
  /// load, graph capture) and its synchronisation, in the correctness gate (NaN: not run).
  double first_call_ms = std::numeric_limits<double>::quiet_NaN();
  std::int64_t warmup_calls = 0; ///< untimed warm-up windows before the first sample
  /// Largest time a device-wide synchronise after a sample's window took beyond the idle
  /// bracket [ms]: work left running outside the window (NaN: the device cannot tell).
  double off_window_ms = std::numeric_limits<double>::quiet_NaN();
  std::int64_t spot_checks = 0; ///< timed samples whose outputs were checked
  /// The first input a spot-checked timed call changed ("x: element 3 (row 0, col 3) ..."),
  /// or nullopt.
  std::optional<std::string> input_mutated;
  /// The kernel clock (docs/engine.md): per sample, the union of the device intervals of the
  /// kernels that ran inside the window [ms], and how many kernels ran; both empty when the
  /// device has no kernel clock (then the cell has no kernel facts at all).
  std::vector<double> kernel_ms;
  std::vector<std::int64_t> kernel_counts;
  /// Per sample, how many of the window's kernels ran as nodes of a CUDA graph (defect
  /// graph-under-kernel-clock, docs/analysis.md); as long as kernel_counts, or empty where a
  /// report left it out (no sample had one).
  std::vector<std::int64_t> graph_kernel_counts;
  std::vector<kernel_name_record> kernel_names; ///< per distinct name, in first-seen order
  /// Named regions inside the step (docs/python-arms.md, "Regions"): label -> the region's
  /// time summed over the step, one per sample (same order and length as samples_ms) [ms].
  /// Empty when the arm marks no region.
  std::map<std::string, std::vector<double>> regions_ms;
  /// With the kernel clock: label -> the kernel time inside the region, summed over the step,
  /// one per sample [ms] (the kernels between the region's marks; docs/python-arms.md).
  /// Empty without the clock, or when its marks did not line up with the arm's regions.
  std::map<std::string, std::vector<double>> region_kernels_ms;
  /// Engine-internal, per sample: the kernel clock's regions of the window in mark order
  /// (window_kernels::region_kernel_ms; nullopt where the marks did not pair). attach_regions()
  /// turns them into region_kernels_ms and clears them; never serialised.
  std::vector<std::optional<std::vector<double>>> region_kernel_marks;
  /// The device's state after each kept sample's window (same order and length as samples_ms),
  /// or empty where the device has no state reader (docs/engine.md, "Device state").
  std::vector<device_state_sample> states;
  /// Under a stopping rule: why the cell stopped; nullopt under fixed repetitions.
  std::optional<stop_record> stop;
  /// The measuring thread's scheduling per kept sample (same order and length as samples_ms),
  /// or empty where it was not recorded (run_plan::record_sched).
  std::vector<sched_sample> sched;
};

/// Correctness of one arm x pass x shape against the float64 reference.
struct correctness_record {
  cell_key key;
  double max_abs_error = 0;
  double max_rel_error = 0;
  bool unwritten = false; ///< some output element kept its poison value
  bool passed = false;
  std::string detail; ///< which output failed first, or empty
};

/// One bandwidth roof of the instrument (docs/engine.md, "The roofs"): a read-only or a
/// write-only stream over `bytes`, timed `samples_ms` (each window flushed first, as the copy
/// ceiling's), and its bandwidth `gbps(bytes, median(samples_ms))` (spec/roofs.hpp).
struct stream_roof {
  std::string method; ///< what ran, e.g. "read-sweep kernel: 16-byte loads ..."
  std::uint64_t bytes = 0;
  std::vector<double> samples_ms;
  double gbps = std::numeric_limits<double>::quiet_NaN();
};

/// One compute ceiling (docs/engine.md, "The roofs"): a dense GEMM through cuBLASLt on CUDA,
/// an FMA loop on the CPU, of `flops` per call, timed `samples_ms`, and its rate
/// `tflops(flops, median(samples_ms))`; `unknown` non-empty when it was not measured (why).
struct compute_roof {
  std::string unknown; ///< "" : measured; else why not (the report writes "unknown: WHY")
  std::string method;  ///< e.g. "cuBLASLt 13.0.2 matmul, bf16 in and out, fp32 accumulate"
  std::string shape;   ///< e.g. "m=8192 n=8192 k=8192"
  std::uint64_t flops = 0;
  std::vector<double> samples_ms;
  double tflops = std::numeric_limits<double>::quiet_NaN();
};

/// The roofs beside the copy ceiling (schema_version 8): the read and write ceilings and a
/// compute ceiling per element type the protocol's cells compute in ("bf16", "fp32", ...).
struct roofs_record {
  stream_roof read;
  stream_roof write;
  std::map<std::string, compute_roof> compute;
};

/// The instrument's own measured properties.
struct instrument_record {
  double ceiling_gbps = 0; ///< median copy bandwidth, bytes read + written
  std::vector<double> ceiling_samples_gbps;
  std::uint64_t ceiling_bytes = 0; ///< size of the copied buffer
  double launch_floor_ms = 0;      ///< median time of an empty step
  double timer_resolution_ms = 0;  ///< smallest non-zero difference the timer shows
  std::uint64_t flush_bytes = 0;   ///< size of the buffer read to flush the cache (0: no flush)
  std::string flush_method;        ///< e.g. "read-sweep"
  std::uint64_t llc_bytes = 0;     ///< last-level cache size (0: unknown)
  double clock_start_mhz = std::numeric_limits<double>::quiet_NaN();
  /// The kernel clock (docs/engine.md): what it is ("CUPTI 13.0 ...") or empty when the device
  /// has none; the median empty step timed with it on [ms] (NaN: not measured); activity
  /// records the clock dropped during the run.
  std::string kernel_clock;
  double kernel_clock_floor_ms = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t kernel_records_dropped = 0;
  /// The read, write and compute ceilings (docs/engine.md, "The roofs"); nullopt where the
  /// device has none, and in reports before schema_version 8.
  std::optional<roofs_record> roofs;
  /// The copy ceiling was not measured but taken from an earlier measurement of this device and
  /// build (docs/engine.md, "Reusing the copy ceiling"): the signed cache entry it came from,
  /// whose values ceiling_gbps, ceiling_samples_gbps and ceiling_bytes are. Absent: measured.
  std::optional<json> ceiling_reused;
};

/// The longest a copy ceiling may be reused after it was measured [s] (docs/engine.md, "Reusing
/// the copy ceiling"): measured_at at most this long before the run's started_at.
inline constexpr double ceiling_reuse_max_age_s = 3600;

/// Everything a backend measured; analysis derives statistics, defects and verdicts from it.
/// One phase of a run and its wall time on the host (docs/report.md, "phases").
struct phase_time {
  std::string name;
  double ms = 0;
  friend bool operator==(const phase_time &, const phase_time &) = default;
};

struct raw_run {
  json environment = json::object(); ///< device_name, driver, runtime, sm_count, l2_bytes,
                                     ///< clocks, other_processes (list or "unknown"), ...
  instrument_record instrument;
  std::vector<correctness_record> correctness;
  std::vector<cell_record> cells;
  std::vector<json> deviations;   ///< {kind, cell?, message} the backend decided (e.g. skipped)
  std::vector<phase_time> phases; ///< the engine's phases, consecutive, in run order
  std::vector<phase_time> timing_parts; ///< where the timing phase went (parts of it)
  /// The outside arms' full tracebacks of their failures ("" when none): written beside the
  /// report as its arm log (run.arm_log), not part of report.json.
  std::string arm_log;
};

/// Progress callbacks; the engine prints, backends only report.
class progress_sink {
public:
  virtual ~progress_sink() = default;
  virtual void phase(std::string_view name) = 0;
  virtual void cell_done(std::size_t done, std::size_t total) = 0;
  /// Called between the steps of a long phase without cells (the instrument's set-up), so
  /// that progress stays alive and an interrupt acts within one step; may throw to stop.
  virtual void tick() {}
};

} // namespace prereg
