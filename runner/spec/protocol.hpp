// The protocol (docs/protocol.md): strict YAML validation of schema 1 and 2, normalisation
// with every default explicit, and the protocol hash.
#pragma once

#include "base/json.hpp"
#include "base/stats.hpp"
#include "prereg/arm.hpp"
#include "spec/registry.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace prereg {

/// Schema limits that also bound counts read back from reports (docs/protocol.md).
inline constexpr std::int64_t max_repetitions = 100000;
inline constexpr std::int64_t max_bootstrap_resamples = 1000000;
inline constexpr std::int64_t max_cells = 20000; ///< arms x passes x rows x cols

enum class launch_mode { stream, graph };
enum class order_mode { interleaved, sequential };

/// Where an arm's code comes from: a built-in kernel, a shared-library plugin (prereg: 2
/// `plugin:` + `name:`, docs/plugins.md) or a Python function (`python:` + `function:`,
/// docs/python-arms.md).
enum class arm_source { kernel, plugin, python };

/// One arm of the experiment: a registered kernel (or an outside arm) under a local id.
struct arm_spec {
  std::string id;
  std::string kernel; ///< the built-in kernel (empty for an outside arm)
  launch_mode launch = launch_mode::stream;
  std::int64_t repeat = 1; ///< invocations per timed step, on distinct buffers
  /// Every option the kernel declares, in its order, with the protocol's value (prereg: 2
  /// `options`) or the declared default (always the default in prereg: 1).
  std::vector<std::pair<std::string, double>> options;
  arm_source source = arm_source::kernel;
  std::string file;  ///< plugin / python: the file as written, relative to the protocol's folder
  std::string entry; ///< plugin: the arm's name in the library; python: the function
  [[nodiscard]] bool outside() const { return source != arm_source::kernel; }
  /// "kernel layernorm.fused" | "plugin libx.so:name" | "python arms.py:function"
  [[nodiscard]] std::string label() const;
};

/// The cells a prediction's `at` selects; after normalisation every list is explicit
/// (a missing key selects every value of the protocol's dimension, in protocol order).
struct cell_selector {
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> cols;
  std::vector<pass_kind> passes;
  /// Over named axes (protocol::axes non-empty): per axis, in the operation's order, the
  /// extents selected (rows and cols then empty).
  std::vector<std::vector<std::int64_t>> named;
  /// How many shapes it selects (passes aside).
  [[nodiscard]] std::size_t shapes() const {
    if (named.empty())
      return rows.size() * cols.size();
    std::size_t n = 1;
    for (const auto &a : named)
      n *= a.size();
    return n;
  }
};

struct prediction_spec {
  std::string id;
  std::string claim;
  cell_selector at;
  std::string expect; ///< the expression text as written
};

/// prereg: 2 `measurement.stop` (docs/protocol.md): samples continue per cell until the
/// bootstrap interval of the median lies within rel_ci of the median, or a limit is reached.
struct stop_spec {
  double rel_ci = 0;      ///< the precision asked: relative half-width of the interval
  std::int64_t min = 0;   ///< samples always taken
  std::int64_t max = 0;   ///< samples never exceeded
  double max_seconds = 0; ///< host time of a cell's samples after which it stops [s]
  friend bool operator==(const stop_spec &, const stop_spec &) = default;
};

struct measurement_spec {
  std::int64_t repetitions = 0;
  std::int64_t warmup = 10;
  bool l2_flush = true;
  order_mode order = order_mode::interleaved;
  /// prereg: 2: false switches the kernel clock off for the whole run (docs/protocol.md), e.g.
  /// for graph arms, whose events the clock inflates; true (the default) is left out of the JSON.
  bool kernel_clock = true;
  /// prereg: 2 `ceiling: reuse` (docs/protocol.md): the run may take its copy ceiling from a
  /// signed measurement of the same device and build made within the last hour instead of
  /// measuring it (docs/engine.md); `measure` (the default) is left out of the JSON.
  bool reuse_ceiling = false;
  /// prereg: 2: the stopping rule; absent: fixed `repetitions` (then absent from the JSON, so
  /// every earlier hash stays). With it, `repetitions` is stop->max.
  std::optional<stop_spec> stop;
  /// prereg: 2: the watchdog's limit on one call of an arm [s] (docs/engine.md, "The
  /// watchdog"); absent: default_call_timeout_s, and absent from the JSON (hashes stay).
  std::optional<double> call_timeout_s;
  /// The watchdog's limit in force: call_timeout_s, else the default.
  [[nodiscard]] double call_timeout() const;
};

/// The watchdog's limit on one call when a protocol names none [s] (docs/engine.md).
inline constexpr double default_call_timeout_s = 600;

struct analysis_spec {
  statistic_kind statistic = statistic_kind::median;
  double confidence = 0.95;
  std::int64_t bootstrap_resamples = 10000;
  double unstable_iqr_ratio = 0.5;
};

struct correctness_spec {
  double rtol = 0;
  double atol = 0;
};

/// prereg: 2 `replication` (docs/scale-out.md): how many devices' complete reports
/// `prereg merge --replication` pools, and the rule that pools their verdicts.
struct replication_spec {
  std::int64_t devices = 0;   ///< N, 2 to 1000
  std::string rule;           ///< normalised: "all" | "majority" | "at least K"
  std::int64_t threshold = 0; ///< devices that must confirm: N, N/2+1 or K (1 <= K <= N)
};

/// How a task's score is made from its shapes (docs/grading.md, "The score"): the geometric
/// mean over every graded cell of the speed-up over the baseline, or the speed-up at one cell.
enum class score_rule { geomean_speedup, speedup_at };

/// prereg: 2 `task` (docs/grading.md): what makes a protocol a grading task. Its arms are the
/// baselines; submissions are graded against `baseline`.
struct task_spec {
  std::string baseline; ///< the arm id whose time each speed-up divides
  score_rule score = score_rule::geomean_speedup;
  /// speedup_at: the one cell, one extent per axis (the operation's axis order) and its pass.
  std::vector<std::int64_t> at;
  pass_kind at_pass = pass_kind::fwd;
  std::string entry;            ///< the function (python) or arm name (plugin, C) submitted
  std::int64_t input_sets = 4;  ///< checked input sets per shape: the gate's + spot checks
  double floor_margin = 1.5;    ///< a cell above margin x the copy ceiling is impossible
  std::optional<double> tflops; ///< a declared compute ceiling [TFLOP/s] for declared FLOPs
  std::optional<std::string> commitment; ///< SHA-256 hex of the sealed held-out secret
};

/// prereg: 2 `grading` (docs/grading.md): written by `prereg grade` and `prereg reward` into
/// the protocol of one measuring process of a grading; never a task.
struct grading_spec {
  std::string task;       ///< the task's protocol hash
  std::string grade;      ///< the grading's id
  std::string role;       ///< "baseline" | "submission" | "reward" | "retime"
  std::string submission; ///< the submission's id ("" for the baseline)
  std::string nonce;      ///< 32 hex digits drawn when the grading started
  std::string seed;       ///< the revealed held-out seed, 16 hex digits ("" without one)
  std::int64_t input_sets = 4;
};

/// A validated protocol; every field holds its explicit or default value.
struct protocol {
  std::int64_t schema = 1; ///< `prereg`: 1 or 2
  std::string id;
  std::int64_t revision = 1; ///< prereg: 2 `revision`: a new frozen version of the same experiment
  std::string title;
  std::string hypothesis;
  std::string device;           ///< "cuda" | "cpu"
  std::string op = "layernorm"; ///< the operation's name (spec/operation.hpp)
  /// prereg: 2 `operation: {python: FILE, name: NAME}`: FILE as written ("" for a built-in
  /// operation); `op` is NAME (docs/operations.md, "The operation file").
  std::string op_file;
  dtype type = dtype::fp32;
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> cols;
  std::vector<pass_kind> passes;
  std::optional<std::pair<std::int64_t, std::int64_t>> operating_point; ///< rows, cols
  /// An operation whose axes are not exactly (rows, cols): each axis and its extents, in the
  /// operation's axis order (`rows`, `cols` and `operating_point` then empty); the shapes are
  /// their product, the first axis outermost.
  struct named_axis {
    std::string name;
    std::vector<std::int64_t> extents;
  };
  std::vector<named_axis> axes;
  std::vector<std::int64_t> named_operating_point; ///< over `axes`: one extent per axis, or empty
  /// How many shapes the protocol has (rows x cols, or the named axes' product).
  [[nodiscard]] std::size_t shape_count() const {
    if (axes.empty())
      return rows.size() * cols.size();
    std::size_t n = 1;
    for (const auto &a : axes)
      n *= a.extents.size();
    return n;
  }
  std::vector<arm_spec> arms;
  measurement_spec measurement;
  analysis_spec analysis;
  correctness_spec correctness;
  std::vector<prediction_spec> predictions;
  std::optional<replication_spec> replication; ///< prereg: 2 only; absent: no rule frozen
  std::optional<task_spec> task;               ///< prereg: 2 only: a grading task
  std::optional<grading_spec> grading;         ///< prereg: 2 only: a grading's process
  /// Checked input sets per shape: the gate's and input_sets - 1 spot-checked timed samples
  /// (4 unless a grading says otherwise).
  [[nodiscard]] std::int64_t input_sets() const { return grading ? grading->input_sets : 4; }
};

/// The names of `p`'s axes: rows and cols, or the operation's named axes.
[[nodiscard]] std::vector<std::string> axis_names(const protocol &p);
/// The extents of `p`'s axis i (axis_names order).
[[nodiscard]] const std::vector<std::int64_t> &axis_extents(const protocol &p, std::size_t i);

/// The arm of `p` with id `id`, or null (the one lookup of an arm by id).
[[nodiscard]] const arm_spec *find_arm_spec(const protocol &p, std::string_view id);

/// The contract's default tolerances: fp32 1e-5/1e-5, fp16 1e-3/1e-3, bf16 1.6e-2/1e-2.
[[nodiscard]] correctness_spec default_tolerance(dtype d);

/// How the validator finds a kernel: the arm of `device` named `kernel`, or null.
using kernel_lookup =
    std::function<const arm_info *(std::string_view device, std::string_view kernel)>;

/// Parses and strictly validates a protocol YAML text, prereg: 1 or 2 (docs/protocol.md).
/// Every rejection throws `error` (exit 2) with `file:line:column` of the offending node.
/// Kernels are checked against `arms` (this build's registry unless told otherwise).
[[nodiscard]] protocol parse_protocol(std::string_view yaml_text, const std::string &file,
                                      const kernel_lookup &arms = find_arm);

/// The normalised protocol as JSON, every default explicit (the object that is hashed).
[[nodiscard]] json to_json(const protocol &p);

/// Rebuilds a protocol from its normalised JSON (a frozen copy or a report's body),
/// validating it like a YAML file; errors name `where`.
[[nodiscard]] protocol protocol_from_json(const json &body, const std::string &where,
                                          const kernel_lookup &arms = find_arm);

/// The protocol hash: SHA-256 hex of the canonical JSON of the normalised protocol
/// (protocol_hash(to_json(p))).
[[nodiscard]] std::string protocol_hash(const protocol &p);
/// The protocol hash of a normalised protocol's JSON: sha256_hex(canonical_json(normalised)).
[[nodiscard]] std::string protocol_hash(const json &normalised);

} // namespace prereg
