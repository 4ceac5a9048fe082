// The device primitives (docs/engine.md): everything the measurement engine needs from
// hardware, and nothing of the procedure. A device allocates and frees memory (harness memory
// untracked, arm memory through a tracking step_allocator), moves bytes, fills inputs, flushes
// the cache, opens and closes a timed window, reads its clock, captures and replays a step.
// The engine (runner/engine/measure.cpp) owns the procedure: correctness gate, warmup, order,
// flush before each sample, repeat, launch mode, billing, clock reads, deviations.
#pragma once

#include "base/json.hpp"
#include "device/device_checks.hpp"
#include "prereg/arm.hpp"
#include "prereg/error.hpp"
#include "spec/records.hpp"
#include "spec/registry.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// The arm allocator a device hands the engine: step_allocator plus what billing needs.
class tracked_allocator : public step_allocator {
public:
  /// Bytes the arm holds now.
  [[nodiscard]] virtual std::uint64_t current() const = 0;
  /// Largest `current()` since the last reset_peak().
  [[nodiscard]] virtual std::uint64_t peak() const = 0;
  /// Starts a new peak from what is held now.
  virtual void reset_peak() = 0;
  /// Frees what the arm still holds; returns its bytes (non-zero: the arm leaked).
  /// `free_memory` false: forget the blocks without freeing them (a failed graph capture).
  virtual std::uint64_t release_all(bool free_memory = true) = 0;
};

/// One timed window's facts.
struct window_result {
  double ms = 0;                    ///< the window's elapsed time
  std::uint64_t harness_growth = 0; ///< device memory gained in the window that no arm holds
};

/// The kernel clock's account of one timed window (docs/engine.md, kernel clock): the kernels
/// whose device start lies inside the window, as the device's own activity records saw them.
struct window_kernels {
  double kernel_ms = 0;         ///< union of their [start, end] intervals
  std::int64_t count = 0;       ///< how many ran
  std::int64_t graph_count = 0; ///< how many of them ran as nodes of a CUDA graph
  struct by_name {
    std::string name;
    std::int64_t calls = 0;
    double ms = 0; ///< sum of their durations
  };
  std::vector<by_name> names; ///< in first-start order
  /// The named regions of a Python arm's step (docs/python-arms.md, "Regions"): per region in
  /// the order its open mark ran, the union of the kernels' intervals inside it [ms]. Empty when
  /// the step marked none; regions_ok false when its marks did not pair (then empty too).
  std::vector<double> region_kernel_ms;
  bool regions_ok = true;
};

/// Queues a region mark on `stream` (a cudaStream_t): open (1) or close (0); returns 0, or
/// non-zero when the launch failed (it never throws: Python calls it through ctypes). A device
/// with a kernel clock hands one to Python arms so that their regions can be cut out of its
/// records.
using region_mark_fn = int (*)(int open, void *stream);

/// A captured step (CUDA graph); opaque to the engine.
class captured_step {
public:
  virtual ~captured_step() = default;
};

/// One call of a compute ceiling's work (docs/engine.md, "The roofs"): a dense GEMM queued on
/// the device's stream (CUDA) or an FMA loop run on the calling thread (the CPU), over inputs
/// the device drew at random when it made the step; its buffers are freed with it.
class compute_step {
public:
  virtual ~compute_step() = default;
  /// Queues (or runs) one call: `flops` floating-point operations.
  virtual void run() = 0;
  std::string method;      ///< what runs, e.g. "cuBLASLt 13.0.2 (libcublasLt.so.13) matmul ..."
  std::string shape;       ///< its size, e.g. "m=8192 n=8192 k=8192"
  std::uint64_t flops = 0; ///< per call
};

/// What a device's read and write ceilings run (docs/engine.md, "The roofs").
struct stream_methods {
  std::string read;
  std::string write;
};

/// The instrument's device-specific sizes.
struct instrument_plan {
  std::uint64_t flush_bytes = 0;   ///< buffer the flush reads (0: the device cannot flush)
  std::string flush_method;        ///< "read-sweep"
  std::uint64_t ceiling_bytes = 0; ///< bytes one ceiling copy reads (and writes)
  int ceiling_copies = 0;          ///< copies timed for the ceiling (median), each flushed
  int ceiling_warmup = 0;          ///< untimed copies before them
  int floor_steps = 0;             ///< empty steps timed for the launch floor (median)
  int floor_warmup = 0;            ///< untimed empty steps before them
  std::uint64_t llc_bytes = 0;     ///< last-level cache (0: unknown)
  std::uint64_t stream_bytes = 0;  ///< bytes one read (or write) ceiling window streams
  int stream_runs = 0;             ///< windows timed for each of them (median), each flushed
  int stream_warmup = 0;           ///< untimed windows before them
  int compute_runs = 0;            ///< calls timed for a compute ceiling (median)
  int compute_warmup = 0;          ///< untimed calls before them
};

class device {
public:
  virtual ~device() = default;

  // --- what it is -------------------------------------------------------------------------
  /// "cpu" | "cuda" (an arm's `device`).
  [[nodiscard]] virtual std::string_view kind() const = 0;
  /// The device's ordinal among its kind (the CUDA ordinal; 0 for the CPU).
  [[nodiscard]] virtual int ordinal() const { return 0; }
  /// Checks the device is usable and describes it (device_name, ...); throws
  /// environment_error (exit 5) if not. Called once before anything else.
  [[nodiscard]] virtual json probe() = 0;
  /// Adds what only the end of a run knows (e.g. other processes seen during it).
  virtual void finish_environment(json & /*env*/) {}
  /// Why this device cannot take `arm` at this pass and shape for a reason of its own (beyond
  /// the registry's limits and the engine's memory estimate), or nullopt.
  [[nodiscard]] virtual std::optional<std::string> cannot_take(const arm_info & /*arm*/,
                                                               pass_kind /*pass*/,
                                                               std::int64_t /*rows*/,
                                                               std::int64_t /*cols*/) const {
    return std::nullopt;
  }
  /// Bytes one cell may use (inputs, outputs, arm scratch), for the cell-skipped estimate.
  [[nodiscard]] virtual std::uint64_t memory_budget() const = 0;
  /// Multiprocessors (CUDA SMs; 1 for the CPU): a variable of arms' scratch estimates.
  [[nodiscard]] virtual std::int64_t processors() const = 0;
  /// The instrument's sizes on this device.
  [[nodiscard]] virtual instrument_plan instrument() const = 0;

  // --- memory -----------------------------------------------------------------------------
  /// Harness memory (never billed to an arm), zero-initialised or not; throws on failure.
  [[nodiscard]] virtual void *allocate(std::size_t bytes) = 0;
  virtual void release(void *p) noexcept = 0;
  /// The allocator an arm's step gets (one per cell: the engine creates it).
  [[nodiscard]] virtual std::unique_ptr<tracked_allocator> make_arm_allocator() = 0;
  /// Host -> device, device -> host (synchronous), device -> device (queued, on the stream).
  virtual void upload(void *dst, const void *src, std::size_t bytes) = 0;
  virtual void download(void *dst, const void *src, std::size_t bytes) = 0;
  virtual void copy(void *dst, const void *src, std::size_t bytes) = 0;
  /// Fills `n` elements of `type` with U(lo, hi) from (seed, index), plus a per-row offset
  /// U(-row_offset, row_offset) for rows of `cols` elements when cols > 0. Never all zeros.
  /// An integer or bool `type`: integers uniform in [lo, hi) (zeros allowed); fp8: U(lo, hi)
  /// kept inside [lo, hi] (reference::fp8_inside), never zero (docs/engine.md).
  virtual void fill_uniform(void *p, std::size_t n, dtype type, double lo, double hi,
                            std::uint64_t seed, std::int64_t cols, double row_offset) = 0;
  /// Fills `n` elements of `type` at device address p with the poison (reference::poison's
  /// bytes), queued like copy(); the default uploads them from the host.
  virtual void fill_poison(void *p, std::size_t n, dtype type) {
    const auto bytes = reference::poison(n, type);
    upload(p, bytes.data(), bytes.size());
  }
  /// Gives cached arm memory back between groups (outside every window).
  virtual void trim() {}
  /// The device side of checked calls (inputs, float64 reference, comparison), or null: the
  /// host computes them (docs/engine.md, "What is computed where").
  [[nodiscard]] virtual device_checks *checks() { return nullptr; }

  // --- the instrument ---------------------------------------------------------------------
  /// Prepares the flush buffer of instrument().flush_bytes (before the first sample).
  virtual void prepare_flush() = 0;
  /// Queues one cache flush (reads the flush buffer; never writes).
  virtual void flush() = 0;
  /// One timed window around exactly `step` (no flush inside), synchronised.
  [[nodiscard]] virtual window_result timed(const std::function<void()> &step) = 0;
  /// An empty step of this device (the launch floor's): a no-op call, or an empty kernel.
  virtual void empty_step() = 0;
  /// Smallest non-zero difference the window's clock shows [ms], and how it was found
  /// (recorded as environment.timer_resolution_source when not empty).
  struct resolution {
    double ms = 0;
    std::string source;
  };
  [[nodiscard]] virtual resolution timer_resolution() = 0;
  /// The processor clock now [MHz] (NaN: unknown). Never inside a window.
  [[nodiscard]] virtual double clock_mhz() = 0;
  /// Waits for everything queued; throws the device's error, if any.
  virtual void synchronize() = 0;
  /// Waits for every piece of work queued anywhere on the device (all streams, not only the
  /// arm's) and returns how long that wait took on the host [ms]; nullopt where the device
  /// cannot see an arm's work outside its call (the CPU: an arm's own threads).
  [[nodiscard]] virtual std::optional<double> drain() { return std::nullopt; }
  /// Whether a failure left the device unusable for the rest of the run (a sticky CUDA error).
  [[nodiscard]] virtual bool broken() const { return false; }
  /// The stream an arm's step is queued on (cudaStream_t; null on the CPU).
  [[nodiscard]] virtual void *stream() const = 0;

  // --- the roofs beside the copy ceiling (docs/engine.md, "The roofs") ----------------------
  /// What the read and write ceilings run on this device, or nullopt when it has neither (then
  /// the instrument records no roofs at all).
  [[nodiscard]] virtual std::optional<stream_methods> stream_roofs() const { return std::nullopt; }
  /// Queues one read of `bytes` at `p` (a multiple of 64) whose result the device keeps, so
  /// that no load can be left out; never writes `p`.
  virtual void read_stream(const void * /*p*/, std::size_t /*bytes*/) {
    throw io_error("this device has no read ceiling");
  }
  /// Queues one write of `bytes` at `p` (a multiple of 64) that reads no memory.
  virtual void write_stream(void * /*p*/, std::size_t /*bytes*/) {
    throw io_error("this device has no write ceiling");
  }
  /// The compute ceiling's work for element type `type` ("bf16", "fp16", "fp32", ...), its
  /// inputs allocated and drawn; nullptr with `why_not` set where the device has none for it
  /// (a library missing, a type it cannot compute in).
  [[nodiscard]] virtual std::unique_ptr<compute_step> compute_ceiling(std::string_view type,
                                                                      std::string &why_not) {
    why_not = "this device has no compute ceiling for " + std::string(type);
    return nullptr;
  }

  // --- the kernel clock (a second, independent clock; docs/engine.md) -----------------------
  /// Turns the kernel clock on or off for the following windows; returns what the clock is
  /// ("CUPTI 13.0 (API 130001), activity kind CONCURRENT_KERNEL"), or nullopt with `why_not`
  /// set when the device has none (the CPU; CUDA without a loadable libcupti).
  [[nodiscard]] virtual std::optional<std::string> kernel_clock(bool on, std::string &why_not) {
    (void)on;
    why_not = "this device has no kernel clock";
    return std::nullopt;
  }
  /// The kernels of every window timed with the clock on since the last call, in the order
  /// the windows were timed (outside every window; waits for the device's records of them).
  /// Fewer entries than windows: the clock lost some (the caller fails those cells). Asking
  /// once per many windows keeps the clock's delivery cost (a CUPTI flush) off each sample.
  [[nodiscard]] virtual std::vector<window_kernels> take_window_kernels() { return {}; }
  /// Activity records the kernel clock dropped so far (its buffers overflowed).
  [[nodiscard]] virtual std::uint64_t kernel_records_dropped() { return 0; }
  /// The region mark of this device while its kernel clock is on, else null.
  [[nodiscard]] virtual region_mark_fn region_marker() { return nullptr; }

  // --- the device's state (clocks, power, throttling; docs/engine.md, "Device state") --------
  /// Opens the device's state reader; returns what it is ("NVML 580.95.05 (libnvidia-ml.so.1)"),
  /// or nullopt with `why_not` set where there is none (the CPU; no loadable NVML).
  [[nodiscard]] virtual std::optional<std::string> state_reader(std::string &why_not) {
    why_not = "this device has no state reader";
    return std::nullopt;
  }
  /// One reading of the clocks, power, temperature and clocks-event reasons now (outside every
  /// window); members the reader could not read are NaN / nullopt.
  [[nodiscard]] virtual device_state_sample read_state() { return {}; }

  // --- capture ------------------------------------------------------------------------------
  /// Why this device cannot capture a step (graph launch), or nullopt if it can.
  [[nodiscard]] virtual std::optional<std::string> cannot_capture() const = 0;
  /// Records `step` once into a replayable step (throws on failure).
  [[nodiscard]] virtual std::unique_ptr<captured_step>
  capture(const std::function<void()> &step) = 0;
  /// Queues one replay of a captured step.
  virtual void replay(captured_step &c) = 0;
};

/// The CPU device (kernels/cpu).
[[nodiscard]] std::unique_ptr<device> make_cpu_device();
/// The CUDA device of ordinal `n` (kernels/cuda); throws environment_error (exit 5) in a
/// build without CUDA or where no device is usable.
[[nodiscard]] std::unique_ptr<device> make_cuda_device(int ordinal);
/// The device this build has for a protocol's `device` ("cpu" | "cuda").
[[nodiscard]] std::unique_ptr<device> make_default_device(const std::string &kind, int ordinal);

} // namespace prereg
