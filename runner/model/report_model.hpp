// The typed report: every member of report.json as a struct, with the one serialiser and the
// one strict parser of the format (docs/report.md, docs/schema/report.schema.json).
#pragma once

#include "base/json.hpp"
#include "spec/records.hpp"
#include "spec/shard.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// The schema_version new reports are written with.
inline constexpr int report_schema_version = 5;
/// The schema_version of a report whose operation's axes are not exactly (rows, cols): its cell
/// keys name the shape as `shape: [{axis, extent}, ...]` (docs/report.md, "Cell keys"); a
/// rows x cols report keeps report_schema_version.
inline constexpr int report_schema_version_named = report_schema_version + 1;
/// The schema_version of a report whose cells carry the device's state per sample or a stopping
/// rule's stop record (docs/report.md, "Device state and stopping"): version 5's or 6's cells
/// (rows x cols, or a `shape`) plus `states` and `stop`. A report with neither keeps 5 or 6.
inline constexpr int report_schema_version_state = report_schema_version_named + 1;
/// The schema_version of a report whose run.isolation carries the probes' results and the level
/// (docs/report.md, "run.isolation"): version 7's members plus those. Every report of a sandboxed
/// run (outside arms) is one.
inline constexpr int report_schema_version_probes = report_schema_version_state + 1;
/// The schema_version of a report whose instrument measured the roofs beside the copy ceiling
/// (docs/report.md, "The roofs"): the read and write ceilings and the compute ceilings in
/// instrument.roofs, and per cell its `roofline`; cells keyed either way, as in 7. A report
/// without roofs keeps 5, 6 or 7.
inline constexpr int report_schema_version_roofs = report_schema_version_state + 1;
/// The schema_version of a report whose instrument did not measure its copy ceiling but reused
/// an earlier measurement (instrument.ceiling_reused, docs/report.md "Reused copy ceiling"):
/// version 7's members (cells with or without `shape`, `states`, `stop`) plus that one. A
/// report without it keeps 5, 6 or 7.
inline constexpr int report_schema_version_ceiling = report_schema_version_state + 1;
/// The schema_version of a report with any of the hardened run's members (docs/report.md,
/// "since 8"): the watchdog's record (run.watchdog), the measuring process's scratch space
/// (run.scratch) and the measuring thread's scheduling per sample (cells[].sched). A report
/// with none keeps 5, 6 or 7.
inline constexpr int report_schema_version_hardened = report_schema_version_state + 1;
static_assert(report_schema_version_ceiling == report_schema_version_roofs &&
                  report_schema_version_probes == report_schema_version_roofs &&
                  report_schema_version_hardened == report_schema_version_roofs,
              "version 8 carries the probes, the roofs, the reused ceiling and the hardened "
              "run's members");
/// The newest schema_version this build reads.
inline constexpr int report_schema_version_newest = report_schema_version_ceiling;
inline constexpr int report_schema_version_max = report_schema_version_newest;
/// The oldest schema_version the parser reads (version 1: cells carry no clock_mhz and no
/// harness_bytes_in_window; before version 3 no first_call_ms, warmup_calls, off_window_ms;
/// before version 4 no kernel clock: no cells[].kernel_clock, no instrument.kernel_*; before
/// version 5 no phases).
inline constexpr int report_schema_version_min = 1;
/// The newest layout of report.md/html (report_text.hpp); a new report records it in
/// tool.renderer, and the audit regenerates each report's pages with the renderer it names
/// (docs/report.md: renderer 2 moved the summary first; renderer 3 names outside arms' files,
/// entries and source hashes and says "not measured" for memory no one measured; renderer 4
/// shows cells excluded from verdicts as excluded: never fastest, no speedup, not drawn;
/// renderer 5 also shows where the run's time went, from the report's phases; renderer 6 says in
/// the Summary how the times were taken: the cache policy and where the copy ceiling came from,
/// and writes every bidirectional control of quoted text as the visible `\u202e`).
inline constexpr int report_renderer_version = 6;
/// The newest rules of the verdicts (docs/analysis.md section 5); a new report records it in
/// tool.analysis, and the audit re-judges each report by the rules it names (analysis 2: a cell
/// with off-window work, a changed input or a reading beyond the physical margin over the copy
/// ceiling cannot decide, as a failed correctness check cannot; analysis 3: that margin is 150%,
/// not 115%, since a fwd+bwd bytes model may over-count a fused kernel's traffic by 4/3;
/// analysis 4: a cell with a sample during which the measuring process was stopped cannot
/// decide either).
inline constexpr int report_analysis_version = 4;

/// What limits a cell, judged from its median (compute: schema_version 8, a report with roofs).
enum class bound_kind { launch, bandwidth, neither, compute };
/// "launch" | "bandwidth" | "neither" | "compute".
[[nodiscard]] std::string_view to_string(bound_kind b);

enum class verdict_kind { confirmed, refuted, inconclusive };
/// "confirmed" | "refuted" | "inconclusive".
[[nodiscard]] std::string_view to_string(verdict_kind v);

/// The build that wrote the report.
struct report_tool {
  std::string name;        ///< "prereg"
  std::string version;     ///< semantic version of the tool
  std::string git_commit;  ///< commit of the source tree, or "unknown"
  std::string build_flags; ///< e.g. "Release cuda=ON static=ON sanitize=OFF"
  /// The layout of report.md/html that this report was rendered with (report_text.hpp);
  /// absent in reports made before it was recorded: those are renderer 1.
  int renderer = 1;
  /// The rules the verdicts were judged by (analysis.hpp); absent in reports made before it was
  /// recorded: those are analysis 1.
  int analysis = 1;
};

/// The frozen protocol the run followed. `body` and `freeze` are other formats (the
/// normalised protocol and the signed freeze record), kept as JSON byte for byte.
struct report_protocol {
  std::string hash;             ///< SHA-256 hex of canonical_json(body)
  json body = json::object();   ///< the normalised protocol (docs/schema/protocol-v*.schema.json)
  json freeze = json::object(); ///< the store's signed freeze.json
};

/// The ledger entry a run extended (the one before its run-start): a witness of the ledger.
struct report_ledger_head {
  std::int64_t seq = 0; ///< 0: the run-start was the first entry
  std::string sha256;   ///< SHA-256 hex of that entry's line (the genesis for seq 0)
};

/// One escape a probe tried at the start of the isolated process, before any outside code
/// existed there (docs/report.md, "run.isolation"; since schema_version 8).
struct isolation_probe {
  std::string name;    ///< one of the probes the report knows (probe_layer)
  std::string outcome; ///< "contained", "escaped" or "not-tried"
  std::string error;   ///< the errno name the attempt was refused with ("" when none)
  std::string detail;  ///< what it tried and what came back, one line
};

/// The walls around the measuring process (docs/engine.md, "The measuring process"): the
/// layers that stood, in order, and why any that the design has is missing ("" when none is);
/// since schema_version 8 also the probes' results and the level they give. A run without
/// "user-namespace" is `isolation: none`.
struct report_isolation {
  std::vector<std::string> layers;
  std::string reason;
  std::vector<isolation_probe> probes; ///< empty before schema_version 8
  std::string level;                   ///< "sandboxed", "partial" or "none"; "" before 8
};
/// Whether `name` is one of the layers the report knows: no-inherited-fds, user-namespace,
/// mount-namespace, read-only-root, read-only-store, key-masked, pid-namespace, fresh-proc,
/// parent-not-dumpable, and since schema_version 8 mounts-locked, caps-dropped, no-new-privs,
/// landlock, seccomp.
[[nodiscard]] bool is_isolation_layer(std::string_view name);
/// The layer the probe `name` tests (docs/report.md, "run.isolation"); "" for an unknown probe.
[[nodiscard]] std::string_view probe_layer(std::string_view name);
/// The level the layers and probes give: "none" without user-namespace; "sandboxed" when every
/// layer of the design but landlock stands, each proven by a contained probe where one tests
/// it, and no probe escaped; else "partial".
[[nodiscard]] std::string isolation_level(const report_isolation &i);
/// What the claim of `i` (schema_version 8) does not follow from its probes: a layer listed
/// while one of its probes escaped or none was contained, a level other than the recomputed
/// one. Empty when it follows.
[[nodiscard]] std::vector<std::string> isolation_problems(const report_isolation &i);
/// One line for a process that ran outside code at `check`, `freeze` or `try` with less than
/// every wall (`what`: "the arms", "the operation file"); "" when it was sandboxed.
[[nodiscard]] std::string isolation_notice(const report_isolation &i, std::string_view what);
/// The level when recorded (schema_version 8), else "namespaces" when the measuring process had
/// its own user namespace, else "none".
[[nodiscard]] std::string_view isolation_mode(const report_isolation &i);

/// A log file written beside the report (docs/report.md, "The arms' log"): its name in the
/// report folder and the SHA-256 hex of its bytes.
struct report_log {
  std::string file;
  std::string sha256;
};

/// One call the watchdog stopped (docs/engine.md, "The watchdog").
struct report_stuck_call {
  std::string arm; ///< the protocol's arm id, left out of the run from then on
  json cell =
      nullptr; ///< the plan cell the call was at ({arm, pass, rows, cols} or {.., shape}), or null
  std::string phase;   ///< "load", "setup", "correctness run", "warm-up", "timed sample", ...
  double waited_s = 0; ///< how long the call had run when the watchdog stopped it [s]
};

/// The watchdog of an isolated run (schema_version 8, run.watchdog): its limit on one call of
/// arm code and the calls it stopped, in order.
struct report_watchdog {
  double call_timeout_s = 0;
  std::vector<report_stuck_call> stuck;
};

/// The measuring process's own scratch space (schema_version 8, run.scratch; docs/engine.md,
/// "Scratch"): its size (0: it could not be bounded), the folders it covers, and why a folder
/// is not covered ("" when all are).
struct report_scratch {
  std::uint64_t bytes = 0;
  std::vector<std::string> folders;
  std::string reason;
};

/// Facts about the run that are not measurements.
struct report_run {
  std::string run_id;      ///< the report folder's name
  std::string started_at;  ///< RFC 3339 UTC
  std::string finished_at; ///< RFC 3339 UTC
  std::int64_t device_ordinal = 0;
  std::optional<report_ledger_head> ledger_head; ///< absent in reports written before it
  /// Absent in reports written before it and in runs measured in the run's own process.
  std::optional<report_isolation> isolation;
  /// The outside arms' full tracebacks of the failures the cells' errors name; absent when
  /// none failed.
  std::optional<report_log> arm_log;
  /// Version 8: the watchdog; absent in runs measured in the run's own process.
  std::optional<report_watchdog> watchdog;
  /// Version 8: the measuring process's scratch space; absent as the watchdog is.
  std::optional<report_scratch> scratch;
};

/// The instrument's own measured properties. NaN stands for null (not measured).
using report_instrument = instrument_record;

/// One kernel name of a cell's kernel clock: raw calls and per-sample times, and derived from
/// them its median per sample and its share of the cell's step time.
struct report_kernel_name {
  std::string name;
  std::int64_t calls = 0;
  std::vector<double> samples_ms;
  double median_ms = std::numeric_limits<double>::quiet_NaN();
  double share_pct = std::numeric_limits<double>::quiet_NaN(); ///< 100 x sum / sum of samples_ms
};

/// Version 4: a cell's kernel clock (docs/report.md): raw per-sample kernel time and count,
/// the gap (step minus kernel time) and the statistics derived from them.
struct report_kernel_clock {
  std::vector<double> kernel_ms;
  std::vector<double> gap_ms; ///< samples_ms[i] - kernel_ms[i]
  std::vector<std::int64_t> kernels;
  /// Per sample, the kernels that ran as CUDA graph nodes; empty (absent in the JSON) when
  /// none did in any sample.
  std::vector<std::int64_t> graph_kernels;
  double median_kernel_ms = std::numeric_limits<double>::quiet_NaN();
  double q1_kernel_ms = std::numeric_limits<double>::quiet_NaN();
  double q3_kernel_ms = std::numeric_limits<double>::quiet_NaN();
  double statistic_kernel_ms = std::numeric_limits<double>::quiet_NaN();
  double median_gap_ms = std::numeric_limits<double>::quiet_NaN();
  double gap_share_pct = std::numeric_limits<double>::quiet_NaN(); ///< median of 100 x gap/step
  double median_kernels = std::numeric_limits<double>::quiet_NaN();
  std::vector<report_kernel_name> names;
};

/// One named region's share of a cell's step (docs/analysis.md, "Region shares"): 100 x the
/// region's summed time / the step's summed time over the samples, with a seeded
/// percentile-bootstrap interval at the protocol's confidence [%].
/// With the kernel clock (`kernel` true), also the region's kernels' share of the step's
/// kernel time: 100 x the region's summed kernel time / the cells' summed kernel time, with an
/// interval from the same resampled indices.
struct region_share {
  std::string label;
  double share_pct = std::numeric_limits<double>::quiet_NaN();
  double lo_pct = std::numeric_limits<double>::quiet_NaN();
  double hi_pct = std::numeric_limits<double>::quiet_NaN();
  bool kernel = false;
  double kernel_share_pct = std::numeric_limits<double>::quiet_NaN();
  double kernel_lo_pct = std::numeric_limits<double>::quiet_NaN();
  double kernel_hi_pct = std::numeric_limits<double>::quiet_NaN();
  /// Equal members, NaN equal to NaN (a share nobody computed).
  friend bool operator==(const region_share &a, const region_share &b) {
    const auto same = [](double x, double y) { return x == y || (x != x && y != y); };
    return a.label == b.label && same(a.share_pct, b.share_pct) && same(a.lo_pct, b.lo_pct) &&
           same(a.hi_pct, b.hi_pct) && a.kernel == b.kernel &&
           same(a.kernel_share_pct, b.kernel_share_pct) && same(a.kernel_lo_pct, b.kernel_lo_pct) &&
           same(a.kernel_hi_pct, b.kernel_hi_pct);
  }
};

/// Version 8: a cell against the roofs (docs/analysis.md, "The roofs"), all derived: its bytes
/// split into reads and writes, the bandwidth roof of that mix and its share of it, and where
/// the operation declares FLOPs, its rate, its share of the compute ceiling of its element type
/// and its arithmetic intensity. NaN stands for null.
struct report_roofline {
  std::uint64_t read_bytes_per_step = 0;
  std::uint64_t write_bytes_per_step = 0;
  double roof_gbps = std::numeric_limits<double>::quiet_NaN(); ///< the mix roof [GB/s]
  double pct_roof = std::numeric_limits<double>::quiet_NaN();  ///< 100 x gbps / roof_gbps [%]
  std::optional<std::string> compute;          ///< the compute ceiling's type; null: no FLOPs
  std::optional<std::uint64_t> flops_per_step; ///< null: the operation declares no FLOPs
  double tflops = std::numeric_limits<double>::quiet_NaN();      ///< [TFLOP/s]
  double pct_compute = std::numeric_limits<double>::quiet_NaN(); ///< of the compute ceiling [%]
  double intensity = std::numeric_limits<double>::quiet_NaN();   ///< FLOPs per byte of the model
};

/// One cells[] entry: the raw record and every statistic derived from it. NaN stands for null.
struct report_cell {
  cell_key key;
  std::vector<double> samples_ms; ///< finite, in measurement order
  std::uint64_t n = 0;
  double median_ms = std::numeric_limits<double>::quiet_NaN();
  double q1_ms = std::numeric_limits<double>::quiet_NaN();
  double q3_ms = std::numeric_limits<double>::quiet_NaN();
  double iqr_ms = std::numeric_limits<double>::quiet_NaN();
  double mean_ms = std::numeric_limits<double>::quiet_NaN();
  double min_ms = std::numeric_limits<double>::quiet_NaN();
  double statistic_ms = std::numeric_limits<double>::quiet_NaN();
  double spearman_rho = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t peak_bytes = 0;
  std::uint64_t bytes_per_step = 0;
  double gbps = std::numeric_limits<double>::quiet_NaN();        ///< [GB/s]
  double pct_ceiling = std::numeric_limits<double>::quiet_NaN(); ///< [%]
  bound_kind bound = bound_kind::neither;
  std::vector<std::string> flags;
  std::optional<std::string> error;
  /// Version 2: the SM clock read after the cell [MHz] (NaN: null, not read); absent in v1.
  std::optional<double> clock_mhz;
  /// Version 2: device memory the harness gained inside a timed window [bytes]; absent in v1.
  std::optional<std::uint64_t> harness_bytes_in_window;
  /// Version 3: the arm's first call at the cell [ms] (NaN: null); absent before v3.
  std::optional<double> first_call_ms;
  /// Version 3: untimed warm-up windows before the first sample; absent before v3.
  std::optional<std::int64_t> warmup_calls;
  /// Version 3: work found pending after a window [ms] (NaN: null, the device cannot tell);
  /// absent before v3.
  std::optional<double> off_window_ms;
  /// Version 4: the kernel clock's facts; absent where the run had no kernel clock.
  std::optional<report_kernel_clock> kernel_clock;
  /// Version 3, only when the arm marked regions: label -> ms per sample (raw), and each
  /// label's share of the step (derived). Both empty (absent from the JSON) otherwise.
  std::map<std::string, std::vector<double>> regions_ms;
  std::vector<region_share> region_shares;
  /// Version 4, only with the kernel clock's region marks: label -> kernel ms per sample (raw,
  /// JSON `region_kernels`); every label is one of regions_ms's.
  std::map<std::string, std::vector<double>> region_kernels_ms;
  /// Version 7: the device's state after each sample (raw, JSON `states`); empty (absent)
  /// where the device had no state reader.
  std::vector<device_state_sample> states;
  /// Version 7, under a stopping rule: why the cell stopped (JSON `stop`).
  std::optional<stop_record> stop;
  /// Version 8: the measuring thread's scheduling around each sample (raw, JSON `sched`);
  /// empty (absent) where it was not recorded.
  std::vector<sched_sample> sched;
  /// Version 8: the cell against the roofs; present exactly when the instrument has roofs.
  std::optional<report_roofline> roofline;
};

/// One correctness[] entry. NaN stands for null.
using report_correctness = correctness_record;

/// p of one selected cell; nullopt when an involved arm has no samples there.
struct cell_p {
  pass_kind pass = pass_kind::fwd;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::optional<double> p;
  std::vector<axis_extent> shape; ///< over named axes (rows, cols then 0), as in cell_key
};

/// One predictions[] entry: the judgement of one prediction.
struct prediction_result {
  std::string id;
  std::string claim;
  std::string expect;
  verdict_kind verdict = verdict_kind::inconclusive;
  std::vector<cell_p> cells; ///< in selector order: passes, then rows, then cols
  std::string reason;
};

/// One defects[] entry; `evidence` holds the code's documented numbers (docs/report.md).
struct report_defect {
  std::string code;
  std::optional<cell_key> cell; ///< absent for run-level defects
  std::string message;
  json evidence = json::object();
};

/// One deviations[] entry: {kind, message, cell?} and the kind's own members (`extra`).
struct report_deviation {
  std::string kind;
  std::string message;
  std::optional<cell_key> cell;
  json extra = json::object(); ///< every other member, e.g. device-changed's previous_device
};

/// Where a run's time went (schema_version 5, docs/report.md "phases"): consecutive phases
/// that add up to the wall time, and the parts of the timing phase.
struct report_phases {
  double wall_ms = 0;             ///< from the run's start to its report built
  std::vector<phase_time> list;   ///< in run order
  std::vector<phase_time> timing; ///< parts of the "timing" phase (the rest is other work)
  friend bool operator==(const report_phases &, const report_phases &) = default;
};

/// Largest |sum of phases - wall_ms| the audit accepts [ms]: max(phases_margin_floor_ms,
/// phases_margin_share * wall_ms).
inline constexpr double phases_margin_floor_ms = 5.0;
inline constexpr double phases_margin_share = 0.01;

/// Why `p` does not add up (docs/audit.md): a time not finite or negative, |sum of the list -
/// wall_ms| above the margin, a timing part without a timing phase, or the timing parts adding
/// up to more than the timing phase plus the margin; empty when it does.
[[nodiscard]] std::string phases_problem(const report_phases &p);

/// The whole report.json.
struct report_document {
  int schema_version = report_schema_version;
  report_tool tool;
  report_protocol protocol;
  report_run run;
  json environment = json::object(); ///< open-ended, device-specific facts
  report_instrument instrument;
  std::vector<report_cell> cells;
  std::vector<report_correctness> correctness;
  std::vector<prediction_result> predictions;
  std::vector<report_defect> defects;
  std::vector<report_deviation> deviations;
  std::int64_t attempt = 0; ///< this run's number among the protocol's runs in the ledger
  /// Made by `prereg try` from an unfrozen protocol: unsigned, outside the ledger, never
  /// confirmatory (the member is present only when true).
  bool exploratory = false;
  /// `prereg run --shard K/N`: a partial report holding shard K's cells only (the member is
  /// present only in a shard's report; docs/scale-out.md).
  std::optional<shard_spec> shard;
  /// Where the run's time went (schema_version 5 and later; absent in merged reports).
  std::optional<report_phases> phases;
};

/// The top-level members of a report, for parsing some of them only.
namespace report_part {
inline constexpr unsigned schema_version = 1u << 0;
inline constexpr unsigned tool = 1u << 1;
inline constexpr unsigned protocol = 1u << 2;
inline constexpr unsigned run = 1u << 3;
inline constexpr unsigned environment = 1u << 4;
inline constexpr unsigned instrument = 1u << 5;
inline constexpr unsigned cells = 1u << 6;
inline constexpr unsigned correctness = 1u << 7;
inline constexpr unsigned predictions = 1u << 8;
inline constexpr unsigned defects = 1u << 9;
inline constexpr unsigned deviations = 1u << 10;
inline constexpr unsigned attempt = 1u << 11;
inline constexpr unsigned phases = 1u << 12;
inline constexpr unsigned all = (1u << 13) - 1;
} // namespace report_part

/// {arm, pass, rows, cols}.
[[nodiscard]] json to_json(const report_cell &c);
[[nodiscard]] json to_json(const prediction_result &r);
[[nodiscard]] json to_json(const report_defect &d);
[[nodiscard]] json to_json(const report_deviation &d);
/// report.json as JSON; canonical_json of it is the signed payload. Cells carry clock_mhz and
/// harness_bytes_in_window exactly when they hold them (a parsed version-1 report: never).
[[nodiscard]] json to_json(const report_document &r);

/// Parses and strictly validates report.json (schema versions 1 to 3): every member present
/// with its type, no unknown member outside environment, protocol.body, protocol.freeze,
/// defect evidence and deviation extras. Throws `error` (exit 2) naming the JSON path, e.g.
/// "cells[3].samples_ms[2] is not a number", with `where` (a file name) as its place.
/// to_json of the result gives back the same canonical bytes.
[[nodiscard]] report_document report_from_json(const json &root, const std::string &where);

/// report_from_json restricted to the members in `parts` (report_part bits); the others keep
/// their defaults and unknown top-level members are not rejected. Cells need the
/// schema_version, which is parsed (and validated) whenever `parts` holds cells.
[[nodiscard]] report_document report_from_json(const json &root, const std::string &where,
                                               unsigned parts);

/// Throws like report_from_json unless `root` is an object whose members are all report members
/// and whose schema_version is one this build reads.
void check_report_members(const json &root, const std::string &where);

/// A {arm, pass, rows, cols} object at `path` (e.g. "defects[2].cell"); throws like
/// report_from_json.
[[nodiscard]] cell_key cell_key_from_json(const json &j, const std::string &path,
                                          const std::string &where);

} // namespace prereg
