// The timed samples (docs/engine.md): per (pass, shape) group, the arms' warm-up and timed
// windows over rotating buffer sets, with spot checks and the kernel clock's records.
#pragma once

#include "base/rng.hpp"
#include "engine/buffers.hpp"
#include "engine/checked_inputs.hpp"
#include "engine/context.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg::engine_detail {

/// Times every runnable cell of `ctx` (phase "timing"): one cell record per cell into
/// ctx.raw.cells, in plan order; a group whose buffers cannot be allocated is skipped.
void time_cells(run_context &ctx);

/// One cell's state while its group is timed.
struct cell_state {
  std::size_t index = 0; ///< the plan cell
  cell_record record;
  std::unique_ptr<tracked_allocator> alloc;
  std::vector<std::unique_ptr<captured_step>> graphs; ///< one per block (graph arms)
  std::vector<double> warmup_ms;                      ///< every warm-up window's time
  std::int64_t calls = 0;                             ///< windows so far (block = calls % 2)
  std::int64_t samples = 0;                           ///< kept samples so far
  bool failed = false;
  bool stopped = false; ///< the stopping rule ended its samples (always false without one)
  std::chrono::steady_clock::time_point first_sample; ///< its first kept window's start
};

/// One spot check's data: fresh inputs and their float64 reference, on the host (the inputs'
/// packed bytes uploaded before the window) or on the device (the inputs drawn there, copied
/// into the window's set on the device).
struct spot_data {
  std::int64_t slot = -1;
  host_tensors ref;       ///< the host's inputs; its outputs once `referenced`
  bool referenced = true; ///< the host reference is computed after the slot's first window
  std::vector<std::vector<std::uint8_t>> bytes; ///< per tensor: inputs' packed bytes (host)
  std::unique_ptr<input_copy> inputs;           ///< the inputs on the device
  std::unique_ptr<device_reference> on_device;  ///< their reference on the device
};

/// A window timed with the kernel clock on whose kernels are not yet taken from the device.
struct pending_window {
  std::size_t ci; ///< the group's cell
  bool keep;      ///< a kept sample (else warm-up: discarded)
};

/// Host wall time of the timing phase's parts [ms] (raw_run::timing_parts).
struct timing_parts {
  double group_setup = 0;    ///< buffer sets, fills, bindings, captures, teardown
  double warmup_windows = 0; ///< timed() of warm-up windows
  double timed_windows = 0;  ///< timed() of kept samples
  double input_refresh = 0;  ///< each window's poison fill and fresh inputs
  double spot_checks = 0;    ///< the spot checks' inputs, references and comparisons
  double kernel_records = 0; ///< the kernel clock's records taken from the device
  double device_state = 0;   ///< the device's state read after each kept sample
  double stopping_rule = 0;  ///< the stopping rule's precision checks
};

/// Adds the wall time of its own lifetime to `total` [ms].
class stopwatch {
public:
  explicit stopwatch(double &total) : m_total(total), m_start(std::chrono::steady_clock::now()) {}
  stopwatch(const stopwatch &) = delete;
  stopwatch &operator=(const stopwatch &) = delete;
  ~stopwatch() {
    m_total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_start)
                   .count();
  }

private:
  double &m_total;
  std::chrono::steady_clock::time_point m_start;
};

/// The timing phase's state across groups.
struct timing_totals {
  std::vector<std::optional<cell_record>> done; ///< per plan cell (skipped: none)
  std::size_t total = 0, finished = 0;          ///< cells, for progress
  rng order;                                    ///< the interleaving's one generator per run
  timing_parts parts;                           ///< where the phase's time went
};

/// Appends one sample's kernel-clock facts to `rec` (names padded with zeros so that every
/// name has one value per sample).
void add_kernels(cell_record &rec, const window_kernels &w);
/// Drops a cell's kernel-clock facts when the clock lost some of its windows (and says so,
/// unless the cell already failed).
void clock_lost(cell_state &c);

/// One (pass, rows, cols) group's timing, as phases: allocate_sets, bind_invocations,
/// choose_spots, fail_setups, capture_graphs, then the windows in the protocol's order, then
/// release. The exact order of its device calls and draws is docs/engine.md's.
class group_timing {
public:
  group_timing(run_context &ctx, timing_totals &totals, const std::vector<std::size_t> &group,
               std::uint64_t group_index);
  /// Every phase of the group.
  void run();

private:
  // Set-up and teardown (timing.cpp).
  bool allocate_sets();
  void fill_inputs(const buffer_set &set, std::uint64_t seed);
  [[nodiscard]] const buffer_set &set_of(std::int64_t block, std::int64_t k) const;
  void bind_invocations();
  void fail_setups();
  void capture_graphs();
  [[nodiscard]] std::function<void()> step_of(std::size_t ci, std::int64_t block);
  void fail(cell_state &c, const std::exception &e, std::string_view during,
            bool free_memory = true);
  void finish(cell_state &c);
  void release();
  // The order of the windows (order.cpp).
  [[nodiscard]] bool warming(const cell_state &c) const;
  void run_sequential();
  void run_interleaved();
  void run_interleaved_fixed();
  void run_interleaved_stop();
  /// Under a stopping rule, after a kept sample: whether cell `c` stops now (then its stop
  /// record is set). Always false without a rule.
  bool stop_now(cell_state &c);
  // One window (window.cpp).
  void window(std::size_t ci, bool keep, std::int64_t slot);
  void load_window(std::size_t ci, std::int64_t block, const spot_data *d);
  [[nodiscard]] std::function<void()> timed_step(std::size_t ci, std::int64_t block);
  void record_sample(cell_state &c, const window_result &w, std::optional<double> drained);
  // Spot checks (spot_check.cpp).
  void choose_spots();
  [[nodiscard]] std::int64_t spot_slot(std::int64_t r) const;
  const spot_data &spot_for(std::int64_t slot);
  void reference_spot();
  [[nodiscard]] bool spot_on_device(spot_data &d, std::uint64_t seed);
  void spot_check(cell_state &c, std::int64_t block, const spot_data &d);
  void check_spot_outputs(cell_state &c, const buffer_set &set, const spot_data &d,
                          const std::string &context);
  void check_spot_inputs(cell_state &c, const buffer_set &set, const spot_data &d,
                         const std::string &context);
  // The kernel clock's records (kernel_records.cpp).
  void collect();

  run_context &m_ctx;
  timing_totals &m_totals;
  const cell_key &m_k0; ///< the group's first cell: its pass and shape
  pass_kind m_pass;
  shape m_shape;
  std::vector<cell_state> m_cells; ///< in arm order
  std::int64_t m_repeat = 1;       ///< the largest repeat of the group's arms
  std::uint64_t m_group_seed = 0;
  /// Two blocks of m_repeat distinct buffer sets, shared by the arms: an arm's consecutive
  /// windows alternate between the blocks, so no two see the same input buffers.
  std::vector<buffer_set> m_sets;
  /// Per cell and block: its invocations of the block's sets (an outside arm's setups).
  std::vector<std::vector<std::vector<invocation>>> m_args;
  std::vector<std::string> m_setup_errors; ///< per cell: its failed setup, or empty
  std::vector<std::int64_t> m_spots;       ///< the spot-checked repetitions
  std::optional<spot_data> m_spot;         ///< the spot data of one slot at a time
  /// The kernel clock's windows not yet taken from the device, in timing order; taken in one
  /// batch before a cell is finished and every 256 windows (docs/engine.md).
  std::vector<pending_window> m_pending;
  bool m_clock_on = false;
};

} // namespace prereg::engine_detail
