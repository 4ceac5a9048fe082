// Arms from outside prereg: shared-library plugins (prereg/arm_abi.h, docs/plugins.md) and
// Python functions (docs/python-arms.md). Both are bound to one buffer set at setup, outside
// every timed window, then stepped; the engine calls them through this interface only.
#pragma once

#include "base/json.hpp"
#include "prereg/arm.hpp"
#include "spec/outside_file.hpp"
#include "spec/records.hpp"
#include "spec/registry.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace prereg {

struct operation_desc;
struct arm_spec;
struct protocol;

/// One buffer set of one cell, as an outside arm sees it at setup.
struct outside_call {
  const operation_desc *op = nullptr;
  std::string device;              ///< "cpu" | "cuda"
  int device_ordinal = 0;          ///< the CUDA ordinal (cuda)
  void *const *data = nullptr;     ///< one pointer per tensor of op, null where unused
  std::int64_t rows = 0, cols = 0; ///< flat_rows_cols of the cell (records.hpp)
  shape extents;                   ///< the cell's shape, in the operation's axis order
  dtype type = dtype::fp32;
  pass_kind pass = pass_kind::fwd;
  double eps = 0;
  std::vector<std::pair<std::string, double>> options;
  void *stream = nullptr;
  step_allocator *alloc = nullptr;
  /// The device's region mark while its kernel clock is on (device.hpp, region_mark_fn), else
  /// null: a Python arm's `with t.region(label)` queues it around the region.
  int (*region_mark)(int open, void *stream) = nullptr;
};

/// An outside arm bound to one buffer set; destroying it is the teardown.
class bound_arm_instance {
public:
  virtual ~bound_arm_instance() = default;
  /// One invocation of the pass. Throws (a one-line reason) when the arm fails.
  virtual void step(void *stream) = 0;
  /// Copies outputs the last step returned (rather than wrote) into the buffers; called
  /// outside every timed window before outputs are read back. Default: nothing to copy.
  virtual void collect() {}
  /// Just before / just after each timed window (outside it): where an arm's own allocator
  /// is read (torch's peak statistics).
  virtual void before_window() {}
  virtual void after_window() {}
  /// Just before / just after a graph arm's step is captured into a CUDA graph: what the arm's
  /// own allocator hands out during the capture is what the graph's replays use, so it is billed
  /// to the cell's peak (a replay allocates nothing the allocator would see).
  virtual void before_capture() {}
  virtual void after_capture() {}
  /// Peak bytes the arm's own allocator held during the steps since setup, when the arm
  /// allocates outside prereg's allocator (torch's caching allocator), else nullopt.
  [[nodiscard]] virtual std::optional<std::uint64_t> own_peak_bytes() { return std::nullopt; }
};

/// A loaded outside arm.
class outside_arm {
public:
  virtual ~outside_arm() = default;
  /// Its descriptor (operation, dtypes, passes; abi "plugin" | "python").
  [[nodiscard]] virtual const arm_info &info() const = 0;
  /// Binds to one buffer set (the setup). Throws (a one-line reason) when the arm fails.
  [[nodiscard]] virtual std::unique_ptr<bound_arm_instance> bind(const outside_call &call) = 0;
  /// What the report's environment records about it (file, hash, runtime versions).
  [[nodiscard]] virtual json environment() const = 0;
  /// Whether a saved statistic left unwritten is acceptable (outside arms: yes).
  [[nodiscard]] virtual bool stats_optional() const { return true; }
};

// --- plugins ----------------------------------------------------------------------------------

/// One arm of a library's table, as `prereg arms --plugin` lists it.
struct plugin_listing {
  std::string name, operation, device, dtypes, passes, summary;
};

/// Loads `library` (dlopen) and reads its table; throws invalid_input (missing prereg_arms,
/// wrong ABI version, malformed table) naming the file.
[[nodiscard]] std::vector<plugin_listing> list_plugin(const std::filesystem::path &library);

/// The arm `name` of `library`, checked against the protocol's operation, device, dtype and
/// passes; throws invalid_input (exit 2) naming the arm and file.
[[nodiscard]] std::shared_ptr<outside_arm> load_plugin_arm(const std::filesystem::path &library,
                                                           const std::string &name,
                                                           const protocol &p,
                                                           const std::string &arm_id);

// --- Python -----------------------------------------------------------------------------------

/// The Python function `function` of `file`, in the embedded interpreter (started on first use:
/// dlopen of the libpython that $PREREG_PYTHON, else `python3` on PATH, reports; its sys.path).
/// Throws environment_error (exit 5) when no usable Python runtime is found or the file's import
/// fails for a reason of this machine (docs/python-arms.md, "Loading": a module it imports is
/// not installed, ...; with `device_missing`, the reason the protocol's device is unusable
/// here, also any exception raised outside the file's own code); invalid_input (exit 2) when
/// the file's own code fails to import (the exception's type and first line) or it has no
/// such function (the functions it defines, and the nearest).
[[nodiscard]] std::shared_ptr<outside_arm>
load_python_arm(const std::filesystem::path &file, const std::string &function, const protocol &p,
                const std::string &arm_id, const std::string &device_missing = {});

/// The interpreter Python arms use in this process ("Python 3.11.2 at /usr/bin/python3
/// (python3 on PATH)"), or "" before one was started.
[[nodiscard]] std::string python_interpreter();

/// Moves the named regions Python arms' steps marked in the timed windows of this process
/// (`with t.region(label)`, docs/python-arms.md) into the cells of `raw`: label -> ms per
/// sample, from the last samples_ms.size() windows of each cell (its warm-up windows come
/// first), a label a window did not mark counting 0. Cells without regions are left as they
/// are. Then forgets every window.
void attach_regions(raw_run &raw);

/// The runtime's versions for the report (python, numpy, torch, triton, libpython), or null
/// when no Python arm was loaded.
[[nodiscard]] json python_environment();

} // namespace prereg
