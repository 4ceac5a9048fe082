// The measurement engine: correctness gate, instrument, and the timed samples of every cell,
// on any device through its primitives (docs/engine.md is the normative description).
#include "engine/measure.hpp"

#include "arms/outside_arm.hpp"
#include "base/rng.hpp"
#include "base/stats.hpp"
#include "prereg/error.hpp"
#include "spec/reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <utility>

namespace prereg {
namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;

/// Buffer-set blocks an arm's consecutive windows alternate between (docs/engine.md).
constexpr std::int64_t rotation_blocks = 2;
/// Timed samples per cell whose outputs and inputs are checked (the last one among them).
constexpr int spot_checks_per_cell = 3;
/// Mixed into a group's input seed for the spot checks' choice and inputs.
constexpr std::uint64_t spot_stream = 0x5907c4ec5ull;
/// Warm-up settles when the last settle_window windows spread by <= settle_spread x median;
/// at most settle_cap_extra windows beyond the protocol's warmup.
constexpr std::size_t settle_window = 3;
constexpr double settle_spread = 0.5;
constexpr std::int64_t settle_cap_extra = 16;

const arm_spec &spec_of(const protocol &p, const std::string &id) {
  if (const arm_spec *a = find_arm_spec(p, id))
    return *a;
  throw io_error(fmt::format("measure: the plan names arm '{}', not in the protocol", id));
}

/// Bytes of one buffer set: every tensor `pass` uses, at its element size.
std::uint64_t set_bytes(const operation_desc &op, dtype type, pass_kind pass, const shape &s) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < op.tensors.size(); ++i)
    if (op.used_in(i, pass))
      total += op.elements(i, s) * op.element_size(i, type);
  return total;
}

dtype element_type(const operation_desc &op, std::size_t i, dtype type) {
  return op.tensors[i].element == element_rule::fp32 ? dtype::fp32 : type;
}

// --- buffers ------------------------------------------------------------------------------

/// One invocation's buffers on the device (harness memory), in the descriptor's tensor order.
class buffer_set {
public:
  buffer_set(device &dev, const operation_desc &op, const shape &s, dtype type, pass_kind pass)
      : m_dev(dev), m_ptrs(op.tensors.size(), nullptr) {
    try {
      for (std::size_t i = 0; i < op.tensors.size(); ++i)
        if (op.used_in(i, pass))
          m_ptrs[i] =
              dev.allocate(static_cast<std::size_t>(op.elements(i, s)) * op.element_size(i, type));
    } catch (...) {
      free_all();
      throw;
    }
  }
  buffer_set(const buffer_set &) = delete;
  buffer_set &operator=(const buffer_set &) = delete;
  buffer_set(buffer_set &&o) noexcept : m_dev(o.m_dev), m_ptrs(std::move(o.m_ptrs)) {
    o.m_ptrs.clear();
  }
  buffer_set &operator=(buffer_set &&) = delete;
  ~buffer_set() { free_all(); }
  [[nodiscard]] void *at(std::size_t i) const { return m_ptrs[i]; }
  [[nodiscard]] void *const *data() const { return m_ptrs.data(); }
  [[nodiscard]] std::size_t size() const { return m_ptrs.size(); }

private:
  void free_all() noexcept {
    for (auto *&p : m_ptrs)
      if (p != nullptr) {
        m_dev.release(p);
        p = nullptr;
      }
  }
  device &m_dev;
  std::vector<void *> m_ptrs;
};

/// The arguments an arm gets for one buffer set, on either seam; an outside arm is bound to
/// the set instead (its setup).
struct invocation {
  tensor_args args;
  norm_tensors norm;
  std::shared_ptr<bound_arm_instance> bound;
};

/// How the engine calls one arm.
struct bound_arm {
  const arm_spec *spec = nullptr;
  const arm_info *info = nullptr;
  arm_code code;
  std::shared_ptr<outside_arm> outside; ///< a plugin or Python arm (code is then empty)
  std::vector<arm_option> options;      ///< every declared option with the protocol's value
};

/// Binds `arm` to buffer set `b`: the pointers for a built-in arm; the setup of an outside arm
/// (throws what the arm's setup threw).
invocation make_invocation(const operation_desc &op, const buffer_set &b, std::int64_t rows,
                           std::int64_t cols, dtype type, pass_kind pass, const bound_arm &arm,
                           device &dev, step_allocator &alloc) {
  invocation v;
  if (arm.outside) {
    outside_call call;
    call.op = &op;
    call.device = std::string(dev.kind());
    call.device_ordinal = dev.ordinal();
    call.data = b.data();
    call.rows = rows;
    call.cols = cols;
    call.type = type;
    call.pass = pass;
    call.eps = op.eps;
    call.options = arm.spec->options;
    call.stream = dev.stream();
    call.alloc = &alloc;
    call.region_mark = dev.region_marker();
    v.bound = arm.outside->bind(call);
    return v;
  }
  v.args.data = b.data();
  v.args.count = b.size();
  v.args.rows = rows;
  v.args.cols = cols;
  v.args.type = type;
  v.args.eps = op.eps;
  v.args.options = arm.options.data();
  v.args.option_count = arm.options.size();
  const auto ptr = [&](std::string_view name) -> void * {
    const int i = op.index_of(name);
    return i < 0 ? nullptr : b.at(static_cast<std::size_t>(i));
  };
  v.norm = norm_tensors{ptr("x"),
                        ptr("gamma"),
                        ptr("beta"),
                        ptr("y"),
                        static_cast<float *>(ptr("mean")),
                        static_cast<float *>(ptr("rstd")),
                        ptr("dy"),
                        ptr("dx"),
                        ptr("dgamma"),
                        ptr("dbeta"),
                        rows,
                        cols,
                        type};
  return v;
}

/// One step: `repeat` invocations (forward, then backward for fwd+bwd), each on its own set.
void run_step(const bound_arm &arm, pass_kind pass, const std::vector<invocation> &sets,
              std::int64_t repeat, step_allocator &alloc, void *stream) {
  for (std::int64_t k = 0; k < repeat; ++k) {
    const invocation &v = sets[static_cast<std::size_t>(k)];
    if (v.bound) {
      v.bound->step(stream); // the whole pass
    } else if (arm.code.norm != nullptr) {
      arm.code.norm->forward(v.norm, alloc, stream);
      if (pass == pass_kind::fwd_bwd)
        arm.code.norm->backward(v.norm, alloc, stream);
    } else {
      arm.code.entry->forward(v.args, alloc, stream);
      if (pass == pass_kind::fwd_bwd)
        arm.code.entry->backward(v.args, alloc, stream);
    }
  }
}

std::string describe(const std::exception &e) {
  std::string s = e.what();
  if (const auto *pe = dynamic_cast<const prereg::error *>(&e);
      pe != nullptr && !pe->where().empty())
    s += fmt::format(" ({})", pe->where());
  return s;
}

std::string element_name(const operation_desc &op, std::size_t tensor, std::int64_t i,
                         const shape &s) {
  const auto &dims = op.tensors[tensor].dims;
  if (dims.size() == 1)
    return fmt::format("element {} ({} {})", i, dims[0] == "cols" ? "col" : "row", i);
  const std::int64_t inner = s.extents.at(static_cast<std::size_t>(op.axis_of(dims.back())));
  return fmt::format("element {} (row {}, col {})", i, i / inner, i % inner);
}

// --- the engine -------------------------------------------------------------------------------

class engine {
public:
  engine(device &dev, const run_plan &plan, const arm_resolver &resolve, progress_sink &progress,
         const engine_hooks &hooks)
      : m_dev(dev), m_plan(plan), m_proto(*plan.proto), m_op(operation_named(m_proto.op)),
        m_progress(progress), m_hooks(hooks) {
    m_arms.resize(plan.cells.size());
    m_skip.resize(plan.cells.size());
    m_first_call_ms.assign(plan.cells.size(), std::numeric_limits<double>::quiet_NaN());
    for (std::size_t i = 0; i < plan.cells.size(); ++i) {
      bound_arm &a = m_arms[i];
      a.spec = &spec_of(m_proto, plan.cells[i].arm);
      if (a.spec->outside()) {
        bind_outside(i);
        continue;
      }
      a.info = find_arm(m_proto.device, a.spec->kernel);
      if (a.info != nullptr)
        a.code = resolve(*a.spec, *a.info);
      if (a.info == nullptr || a.code.empty()) {
        m_skip[i] = fmt::format("kernel {} has no {} implementation in this build", a.spec->kernel,
                                m_proto.device);
        continue;
      }
      for (const auto &o : a.info->options) {
        double v = o.default_value;
        for (const auto &[name, value] : a.spec->options)
          if (name == o.name)
            v = value;
        a.options.push_back({o.name.c_str(), v});
      }
      if (a.spec->launch == launch_mode::graph)
        if (auto why = m_dev.cannot_capture())
          m_skip[i] = fmt::format("launch: graph: {}", *why);
    }
  }

  raw_run run(json environment) {
    m_raw.environment = std::move(environment);
    if (!m_loaded.empty()) {
      json arms = json::object();
      for (const auto &[id, arm] : m_loaded)
        arms[id] = arm->environment();
      m_raw.environment["outside_arms"] = std::move(arms);
    }
    for (std::size_t i = 0; i < m_plan.cells.size(); ++i)
      if (m_skip[i])
        m_raw.deviations.push_back({{"kind", "cell-skipped"},
                                    {"cell", to_json(m_plan.cells[i])},
                                    {"message", *m_skip[i]}});
    check_correctness();
    calibrate();
    time_cells();
    if (!m_raw.instrument.kernel_clock.empty())
      m_raw.instrument.kernel_records_dropped = m_dev.kernel_records_dropped();
    m_dev.finish_environment(m_raw.environment);
    if (json py = python_environment(); !py.is_null())
      m_raw.environment["python"] = std::move(py);
    return std::move(m_raw);
  }

  /// An outside arm's cell: loaded once per arm (in this, the measuring process; a library or
  /// file that cannot be loaded ends the run before anything is measured), then checked
  /// against the cell like a built-in arm.
  void bind_outside(std::size_t i) {
    bound_arm &a = m_arms[i];
    const cell_key &k = m_plan.cells[i];
    if (!m_plan.load_outside) {
      m_skip[i] =
          fmt::format("arm {} ({}) needs a loader for outside arms", a.spec->id, a.spec->label());
      return;
    }
    auto it = m_loaded.find(a.spec->id);
    if (it == m_loaded.end())
      it = m_loaded.emplace(a.spec->id, m_plan.load_outside(*a.spec)).first;
    a.outside = it->second;
    a.info = &a.outside->info();
    if (auto why = cannot_run(*a.info, k.pass, k.rows, k.cols, m_proto.type))
      m_skip[i] = *why;
    else if (auto why2 = device_cannot_run(m_dev, m_op, *a.info, *a.spec, k.pass, k.rows, k.cols,
                                           m_proto.type))
      m_skip[i] = *why2;
  }

private:
  /// The (pass, rows, cols) groups of runnable cells, in plan order; cells in arm order.
  std::vector<std::vector<std::size_t>> groups() const {
    std::vector<std::vector<std::size_t>> out;
    for (std::size_t i = 0; i < m_plan.cells.size(); ++i) {
      if (m_skip[i])
        continue;
      const cell_key &k = m_plan.cells[i];
      auto g = std::find_if(out.begin(), out.end(), [&](const auto &grp) {
        const cell_key &o = m_plan.cells[grp.front()];
        return o.pass == k.pass && o.rows == k.rows && o.cols == k.cols;
      });
      if (g == out.end()) {
        out.emplace_back();
        g = out.end() - 1;
      }
      g->push_back(i);
    }
    const auto rank = [&](std::size_t i) { return m_arms[i].spec - m_proto.arms.data(); };
    for (auto &g : out)
      std::stable_sort(g.begin(), g.end(),
                       [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
    return out;
  }

  /// Ends the run if the device did not survive an arm's failure.
  void survive(const cell_key &k, const std::string &why) const {
    if (m_dev.broken())
      throw error(exit_code::failure,
                  fmt::format("the {} device was lost after arm '{}' failed ({}); the run "
                              "cannot continue",
                              m_dev.kind(), k.arm, why));
  }

  // --- correctness ----------------------------------------------------------------------------

  void check_correctness() {
    m_progress.phase("correctness");
    const auto gs = groups();
    std::size_t total = 0, done = 0;
    for (const auto &g : gs)
      total += g.size();
    // Shapes in first-appearance order; each shape's inputs and reference are made once, for
    // fwd+bwd when the shape has a fwd+bwd group (its forward outputs are the fwd pass's).
    std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
    for (const auto &g : gs) {
      const cell_key &k = m_plan.cells[g.front()];
      if (std::find(shapes.begin(), shapes.end(), std::pair{k.rows, k.cols}) == shapes.end())
        shapes.emplace_back(k.rows, k.cols);
    }
    std::vector<std::optional<correctness_record>> records(m_plan.cells.size());
    for (const auto &[rows, cols] : shapes) {
      std::vector<const std::vector<std::size_t> *> mine;
      pass_kind widest = pass_kind::fwd;
      for (const auto &g : gs) {
        const cell_key &k = m_plan.cells[g.front()];
        if (k.rows != rows || k.cols != cols)
          continue;
        mine.push_back(&g);
        if (k.pass == pass_kind::fwd_bwd)
          widest = pass_kind::fwd_bwd;
      }
      const shape s = m_op.shape_of(rows, cols);
      host_tensors t = reference::random_tensors(
          m_op, s, m_proto.type, reference::cell_seed(m_plan.seed, widest, rows, cols));
      m_op.reference(m_op, s, widest, t); // fills the outputs; the inputs stay
      for (const auto *g : mine) {
        const pass_kind pass = m_plan.cells[g->front()].pass;
        std::optional<buffer_set> set;
        try {
          set.emplace(m_dev, m_op, s, m_proto.type, pass);
          for (std::size_t i = 0; i < m_op.tensors.size(); ++i)
            if (m_op.tensors[i].role == tensor_role::input && m_op.used_in(i, pass)) {
              const auto bytes = reference::pack(t[i], element_type(m_op, i, m_proto.type));
              m_dev.upload(set->at(i), bytes.data(), bytes.size());
            }
        } catch (const std::exception &e) {
          for (std::size_t i : *g) {
            correctness_record rec;
            rec.key = m_plan.cells[i];
            rec.detail = fmt::format("buffers for this shape could not be set up: {}", describe(e));
            const std::string why = rec.detail;
            records[i] = std::move(rec);
            survive(m_plan.cells[i], why);
            m_progress.cell_done(++done, total);
          }
          continue;
        }
        for (std::size_t i : *g) {
          records[i] = check_one(i, s, *set, t);
          if (!records[i]) // an outside arm that cannot be captured: skipped, with the reason
            m_raw.deviations.push_back({{"kind", "cell-skipped"},
                                        {"cell", to_json(m_plan.cells[i])},
                                        {"message", *m_skip[i]}});
          m_progress.cell_done(++done, total);
        }
      }
    }
    for (auto &r : records)
      if (r)
        m_raw.correctness.push_back(std::move(*r));
  }

  std::optional<correctness_record> check_one(std::size_t i, const shape &s, const buffer_set &set,
                                              const host_tensors &ref) {
    const cell_key &key = m_plan.cells[i];
    const bound_arm &arm = m_arms[i];
    correctness_record rec;
    rec.key = key;
    if (m_hooks.on_check)
      m_hooks.on_check(key);
    // Poison every output and saved tensor the pass writes.
    for (std::size_t t = 0; t < m_op.tensors.size(); ++t)
      if (m_op.tensors[t].role != tensor_role::input && m_op.used_in(t, key.pass)) {
        const auto p = reference::poison(static_cast<std::size_t>(m_op.elements(t, s)),
                                         element_type(m_op, t, m_proto.type));
        m_dev.upload(set.at(t), p.data(), p.size());
      }
    const auto first_call_start = std::chrono::steady_clock::now();
    auto alloc = m_dev.make_arm_allocator();
    std::vector<invocation> inv;
    bool capturing = false;
    try {
      inv.push_back(make_invocation(m_op, set, key.rows, key.cols, m_proto.type, key.pass, arm,
                                    m_dev, *alloc));
      const auto step = [&] { run_step(arm, key.pass, inv, 1, *alloc, m_dev.stream()); };
      if (arm.spec->launch == launch_mode::graph) {
        capturing = true;
        std::unique_ptr<captured_step> captured;
        try {
          captured = m_dev.capture(step);
        } catch (const std::exception &e) {
          if (!arm.outside)
            throw;
          // An outside arm whose library cannot be captured: skipped, not failed.
          alloc->release_all(false);
          survive(key, e.what());
          m_skip[i] = fmt::format("launch: graph: arm {} cannot be captured into a CUDA graph: {}",
                                  arm.spec->id, describe(e));
          return std::nullopt;
        }
        capturing = false;
        check_released(*alloc);
        m_dev.replay(*captured);
        m_dev.synchronize();
      } else {
        step();
        m_dev.synchronize();
        check_released(*alloc);
      }
      if (inv.front().bound) { // outputs an outside arm returned rather than wrote
        inv.front().bound->collect();
        m_dev.synchronize();
      }
    } catch (const std::exception &e) {
      rec.detail = fmt::format("the arm failed in its correctness run: {}", describe(e));
      alloc->release_all(!capturing && !m_dev.broken()); // a failed capture's blocks never existed
      survive(key, rec.detail);
      return rec;
    }
    m_first_call_ms[i] = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - first_call_start)
                             .count();
    alloc->release_all();
    rec.passed = true;
    check_outputs(key.pass, s, set, ref, rec, "", arm);
    return rec;
  }

  /// Compares every checked tensor `pass` writes in `set` with `ref`; a failure clears
  /// rec.passed and, for the first one, sets rec.detail (prefixed by `context`).
  void check_outputs(pass_kind pass, const shape &s, const buffer_set &set, const host_tensors &ref,
                     correctness_record &rec, const std::string &context,
                     const bound_arm &arm) const {
    for (std::size_t t = 0; t < m_op.tensors.size(); ++t) {
      const tensor_desc &d = m_op.tensors[t];
      if (!d.checked || !m_op.used_in(t, pass) || (d.produced_by_bwd && pass != pass_kind::fwd_bwd))
        continue;
      const dtype et = element_type(m_op, t, m_proto.type);
      std::vector<std::uint8_t> bytes(static_cast<std::size_t>(m_op.elements(t, s)) *
                                      element_bytes(et));
      m_dev.download(bytes.data(), set.at(t), bytes.size());
      const std::vector<double> got = reference::unpack(bytes, et);
      // Saved statistics are optional for an outside arm: left unwritten, they are not checked.
      if (d.role == tensor_role::saved && arm.outside && arm.outside->stats_optional() &&
          std::all_of(got.begin(), got.end(), [](double v) { return reference::is_poison(v); }))
        continue;
      const auto c =
          reference::compare(got, ref[t], m_proto.correctness.rtol, m_proto.correctness.atol);
      rec.max_abs_error = std::max(rec.max_abs_error, c.max_abs_error);
      rec.max_rel_error = std::max(rec.max_rel_error, c.max_rel_error);
      rec.unwritten = rec.unwritten || c.unwritten;
      if (c.passed)
        continue;
      if (rec.passed) {
        const auto j = static_cast<std::size_t>(std::max<std::int64_t>(c.first_bad, 0));
        const std::string where = element_name(m_op, t, c.first_bad, s);
        rec.detail = reference::is_poison(got[j])
                         ? fmt::format("{}: unwritten (still poison) at {}", d.name, where)
                     : c.constant
                         ? fmt::format("{}: every element is {:.9g}, the reference is not constant "
                                       "({} is {:.9g})",
                                       d.name, got[j], where, ref[t][j])
                         : fmt::format("{}: {} is {:.9g}, reference {:.9g} (rtol {:g}, atol {:g})",
                                       d.name, where, got[j], ref[t][j], m_proto.correctness.rtol,
                                       m_proto.correctness.atol);
        rec.detail = context + rec.detail;
      }
      rec.passed = false;
    }
  }

  static void check_released(tracked_allocator &alloc) {
    if (alloc.current() != 0)
      throw io_error(fmt::format("the arm still holds {} bytes of its step allocations after its "
                                 "step (it must release all of them)",
                                 alloc.current()));
  }

  // --- the instrument -------------------------------------------------------------------------

  void calibrate() {
    m_progress.phase("instrument");
    instrument_record &in = m_raw.instrument;
    const instrument_plan ip = m_dev.instrument();
    const auto res = m_dev.timer_resolution();
    in.timer_resolution_ms = res.ms;
    if (!res.source.empty())
      m_raw.environment["timer_resolution_source"] = res.source;
    in.llc_bytes = ip.llc_bytes;
    m_progress.tick();
    m_dev.prepare_flush();
    m_progress.tick();
    in.flush_bytes = m_proto.measurement.l2_flush ? ip.flush_bytes : 0;
    in.flush_method = m_proto.measurement.l2_flush ? ip.flush_method : "none";

    m_progress.phase("launch floor");
    // The empty step is timed exactly as a cell's sample: flushed first when samples are.
    const std::function<void()> empty = [&] { m_dev.empty_step(); };
    const bool flush = m_proto.measurement.l2_flush;
    for (int i = 0; i < ip.floor_warmup; ++i) {
      if (flush)
        m_dev.flush();
      (void)m_dev.timed(empty);
      m_progress.tick();
    }
    std::vector<double> floor;
    for (int i = 0; i < ip.floor_steps; ++i) {
      if (flush)
        m_dev.flush();
      floor.push_back(m_dev.timed(empty).ms);
      m_progress.tick();
    }
    in.launch_floor_ms = floor.empty() ? 0.0 : median(floor);

    m_progress.phase("ceiling");
    const std::size_t bytes = ip.ceiling_bytes;
    void *src = m_dev.allocate(bytes);
    void *dst = nullptr;
    try {
      dst = m_dev.allocate(bytes);
      m_dev.fill_uniform(src, bytes / 4, dtype::fp32, -1.0, 1.0, 7, 0, 0.0);
      const std::function<void()> copy = [&] { m_dev.copy(dst, src, bytes); };
      for (int i = 0; i < ip.ceiling_warmup; ++i) {
        m_dev.flush();
        m_progress.tick();
        (void)m_dev.timed(copy);
        m_progress.tick();
      }
      in.ceiling_samples_gbps.clear();
      for (int i = 0; i < ip.ceiling_copies; ++i) {
        m_dev.flush();
        m_progress.tick();
        const double ms = m_dev.timed(copy).ms;
        m_progress.tick();
        in.ceiling_samples_gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
      }
    } catch (...) {
      m_dev.release(src);
      if (dst != nullptr)
        m_dev.release(dst);
      throw;
    }
    m_dev.release(src);
    m_dev.release(dst);
    in.ceiling_gbps = in.ceiling_samples_gbps.empty() ? 0.0 : median(in.ceiling_samples_gbps);
    in.ceiling_bytes = bytes;
    in.clock_start_mhz = m_dev.clock_mhz();
    start_kernel_clock(flush, ip);
    // The idle drain: a device-wide synchronise with nothing queued, the baseline of the
    // off-window check (median of 9).
    std::vector<double> idle;
    for (int i = 0; i < 9; ++i)
      if (const auto ms = m_dev.drain())
        idle.push_back(*ms);
    if (!idle.empty()) {
      m_idle_drain_ms = median(idle);
      m_raw.environment["off_window_idle_ms"] = m_idle_drain_ms;
    }
  }

  /// The kernel clock (docs/engine.md): on for every window from here (the untraced floor and
  /// the ceiling are already measured), and the empty step timed again with it on, so that the
  /// clock's own cost is in the record (kernel_clock_floor_ms against launch_floor_ms).
  void start_kernel_clock(bool flush, const instrument_plan &ip) {
    instrument_record &in = m_raw.instrument;
    if (!m_proto.measurement.kernel_clock) {
      m_raw.environment["kernel_clock"] =
          "unknown: switched off by the protocol (measurement.kernel_clock: false)";
      return;
    }
    std::string why_not;
    const auto clock = m_dev.kernel_clock(true, why_not);
    if (!clock) {
      m_raw.environment["kernel_clock"] = "unknown: " + why_not;
      return;
    }
    m_raw.environment["kernel_clock"] = *clock;
    in.kernel_clock = *clock;
    m_progress.phase("kernel clock");
    const std::function<void()> empty = [&] { m_dev.empty_step(); };
    std::vector<double> floor;
    for (int i = 0; i < ip.floor_warmup + ip.floor_steps; ++i) {
      if (flush)
        m_dev.flush();
      const double ms = m_dev.timed(empty).ms;
      if (i >= ip.floor_warmup)
        floor.push_back(ms);
      m_progress.tick();
    }
    in.kernel_clock_floor_ms =
        floor.empty() ? std::numeric_limits<double>::quiet_NaN() : median(floor);
    (void)m_dev.take_window_kernels();
  }

  /// Appends one sample's kernel-clock facts to `rec` (names padded with zeros so that every
  /// name has one value per sample).
  static void add_kernels(cell_record &rec, const window_kernels &w) {
    const std::size_t before = rec.kernel_ms.size();
    rec.kernel_ms.push_back(w.kernel_ms);
    rec.kernel_counts.push_back(w.count);
    rec.graph_kernel_counts.push_back(w.graph_count);
    rec.region_kernel_marks.push_back(w.regions_ok ? std::optional(w.region_kernel_ms)
                                                   : std::nullopt);
    for (const auto &n : w.names) {
      auto it = std::find_if(rec.kernel_names.begin(), rec.kernel_names.end(),
                             [&](const kernel_name_record &r) { return r.name == n.name; });
      if (it == rec.kernel_names.end()) {
        rec.kernel_names.push_back({n.name, 0, std::vector<double>(before, 0.0)});
        it = rec.kernel_names.end() - 1;
      }
      it->calls += n.calls;
      it->samples_ms.push_back(n.ms);
    }
    for (auto &r : rec.kernel_names)
      if (r.samples_ms.size() < before + 1)
        r.samples_ms.push_back(0.0);
  }

  // --- the samples ----------------------------------------------------------------------------

  struct cell_state {
    std::size_t index = 0;
    cell_record record;
    std::unique_ptr<tracked_allocator> alloc;
    std::vector<std::unique_ptr<captured_step>> graphs; ///< one per block (graph arms)
    std::vector<double> warmup_ms;                      ///< every warm-up window's time
    std::int64_t calls = 0;                             ///< windows so far (block = calls % 2)
    std::int64_t samples = 0;                           ///< kept samples so far
    bool failed = false;
  };

  /// One spot check's host data: fresh inputs, their float64 reference, the uploaded bytes.
  struct spot_data {
    std::int64_t slot = -1;
    host_tensors ref;
    std::vector<std::vector<std::uint8_t>> bytes; ///< per tensor: inputs' packed bytes
  };

  /// Whether a cell's warm-up has settled: at least `settle_window` windows, the last of which
  /// spread (max - min) by at most settle_spread x their median.
  static bool settled(const std::vector<double> &w) {
    if (w.size() < settle_window)
      return false;
    const auto last = std::vector<double>(w.end() - settle_window, w.end());
    const auto [lo, hi] = std::minmax_element(last.begin(), last.end());
    return *hi - *lo <= settle_spread * median(last);
  }

  void time_cells() {
    m_progress.phase("timing");
    const auto gs = groups();
    std::vector<std::optional<cell_record>> done(m_plan.cells.size()); // skipped: none
    std::size_t total = 0, finished = 0;
    for (const auto &g : gs)
      total += g.size();
    rng order(stream_seed(m_plan.seed, stream_id::arm_order));
    const std::int64_t reps = m_proto.measurement.repetitions;
    const std::int64_t warmup = m_proto.measurement.warmup;
    const bool flush = m_proto.measurement.l2_flush;
    std::uint64_t group_index = 0;

    for (const auto &g : gs) {
      const cell_key &k0 = m_plan.cells[g.front()];
      const pass_kind pass = k0.pass;
      const shape s = m_op.shape_of(k0.rows, k0.cols);
      std::vector<cell_state> cells;
      std::int64_t repeat = 1;
      for (std::size_t i : g) {
        cell_state c;
        c.index = i;
        c.record.key = m_plan.cells[i];
        c.record.first_call_ms = m_first_call_ms[i];
        c.alloc = m_dev.make_arm_allocator();
        repeat = std::max(repeat, m_arms[i].spec->repeat);
        cells.push_back(std::move(c));
      }
      const std::uint64_t group_seed =
          stream_seed(m_plan.seed, stream_id::inputs) + 0x1000 * group_index;
      // Fills the inputs of `set` with fresh random values (never zeros) from `seed`.
      const auto fill_inputs = [&](const buffer_set &set, std::uint64_t seed) {
        for (std::size_t t = 0; t < m_op.tensors.size(); ++t) {
          const tensor_desc &d = m_op.tensors[t];
          if (d.role != tensor_role::input || !m_op.used_in(t, pass))
            continue;
          const bool per_row = d.dist.row_offset != 0 && d.dims.size() >= 2;
          m_dev.fill_uniform(set.at(t), static_cast<std::size_t>(m_op.elements(t, s)),
                             element_type(m_op, t, m_proto.type), d.dist.lo, d.dist.hi, seed + t,
                             per_row ? k0.cols : 0, d.dist.row_offset);
        }
      };
      // Two blocks of `repeat` distinct buffer sets, shared by the arms: an arm's consecutive
      // windows alternate between the blocks, so no two see the same input buffers.
      // One more set holds the poison of every output and saved tensor, copied on the device
      // into the outputs before every window (so a spot-checked window looks like any other).
      std::vector<buffer_set> sets;
      std::optional<buffer_set> poison_set;
      try {
        for (std::int64_t k = 0; k < rotation_blocks * repeat; ++k) {
          sets.emplace_back(m_dev, m_op, s, m_proto.type, pass);
          fill_inputs(sets.back(), group_seed + 16 * static_cast<std::uint64_t>(k));
        }
        poison_set.emplace(m_dev, m_op, s, m_proto.type, pass);
        for (std::size_t t = 0; t < m_op.tensors.size(); ++t)
          if (m_op.tensors[t].role != tensor_role::input && m_op.used_in(t, pass)) {
            const auto p = reference::poison(static_cast<std::size_t>(m_op.elements(t, s)),
                                             element_type(m_op, t, m_proto.type));
            m_dev.upload(poison_set->at(t), p.data(), p.size());
          }
        m_dev.synchronize();
      } catch (const std::exception &e) {
        sets.clear();
        poison_set.reset();
        const std::string why =
            fmt::format("buffers for this shape could not be allocated: {}", describe(e));
        survive(k0, why);
        for (auto &c : cells) { // skipped like a cell the plan left out: no record
          m_raw.deviations.push_back(
              {{"kind", "cell-skipped"}, {"cell", to_json(c.record.key)}, {"message", why}});
          m_progress.cell_done(++finished, total);
        }
        ++group_index;
        continue;
      }
      const auto set_of = [&](std::int64_t block, std::int64_t k) -> const buffer_set & {
        return sets[static_cast<std::size_t>(block * repeat + k)];
      };
      // Each arm's invocation arguments per block: the shared buffer sets with its options (an
      // outside arm's setup, once per set: a failing setup fails its cell).
      std::vector<std::vector<std::vector<invocation>>> arm_args;
      std::vector<std::string> setup_errors(cells.size());
      for (std::size_t ci = 0; ci < cells.size(); ++ci) {
        auto &c = cells[ci];
        auto &per_block = arm_args.emplace_back(rotation_blocks);
        try {
          for (std::int64_t b = 0; b < rotation_blocks; ++b)
            for (std::int64_t k = 0; k < repeat; ++k)
              per_block[static_cast<std::size_t>(b)].push_back(
                  make_invocation(m_op, set_of(b, k), k0.rows, k0.cols, m_proto.type, pass,
                                  m_arms[c.index], m_dev, *c.alloc));
        } catch (const std::exception &e) {
          for (auto &blk : per_block)
            blk.clear();
          setup_errors[ci] = describe(e);
        }
      }
      // The spot-checked repetitions of this group (the same for every arm): seeded, and the
      // last one.
      std::vector<std::int64_t> spots;
      if (reps > 0) {
        rng pick(group_seed ^ spot_stream);
        for (int m = 0; m + 1 < spot_checks_per_cell; ++m)
          spots.push_back(static_cast<std::int64_t>(pick.below(static_cast<std::uint64_t>(reps))));
        spots.push_back(reps - 1);
      }
      const auto spot_slot = [&](std::int64_t r) -> std::int64_t {
        for (std::size_t m = 0; m < spots.size(); ++m)
          if (spots[m] == r)
            return static_cast<std::int64_t>(m);
        return -1;
      };
      std::optional<spot_data> spot; // the spot data of one slot at a time
      const auto spot_for = [&](std::int64_t slot) -> const spot_data & {
        if (!spot || spot->slot != slot) {
          spot.reset();
          spot_data d;
          d.slot = slot;
          d.ref = reference::random_tensors(
              m_op, s, m_proto.type,
              reference::cell_seed(m_plan.seed, pass, k0.rows, k0.cols) ^
                  rng(group_seed ^ spot_stream ^ static_cast<std::uint64_t>(slot + 1)).next());
          m_op.reference(m_op, s, pass, d.ref);
          d.bytes.resize(m_op.tensors.size());
          for (std::size_t t = 0; t < m_op.tensors.size(); ++t)
            if (m_op.tensors[t].role == tensor_role::input && m_op.used_in(t, pass))
              d.bytes[t] = reference::pack(d.ref[t], element_type(m_op, t, m_proto.type));
          spot = std::move(d);
        }
        return *spot;
      };

      // An arm's failure: recorded on its cell; what it held is freed (after a failed capture
      // only forgotten: a graph's allocations never existed).
      const auto fail = [&](cell_state &c, const std::exception &e, std::string_view during,
                            bool free_memory = true) {
        c.failed = true;
        c.record.error = fmt::format("{}: {}", during, describe(e));
        c.graphs.clear();
        c.alloc->release_all(free_memory && !m_dev.broken());
        survive(c.record.key, *c.record.error);
      };
      const auto step_of = [&](std::size_t ci, std::int64_t block) {
        cell_state &c = cells[ci];
        const bound_arm &arm = m_arms[c.index];
        return std::function<void()>([&, ci, block, repeat_k = arm.spec->repeat] {
          run_step(arm, pass, arm_args[ci][static_cast<std::size_t>(block)], repeat_k,
                   *cells[ci].alloc, m_dev.stream());
        });
      };
      for (std::size_t ci = 0; ci < cells.size(); ++ci)
        if (!setup_errors[ci].empty()) {
          cells[ci].failed = true;
          cells[ci].record.error = fmt::format("setup: {}", setup_errors[ci]);
          cells[ci].alloc->release_all(!m_dev.broken());
          survive(cells[ci].record.key, *cells[ci].record.error);
        }
      // Graph arms: one capture per block, outside every window.
      for (std::size_t ci = 0; ci < cells.size(); ++ci) {
        cell_state &c = cells[ci];
        if (c.failed)
          continue;
        if (m_arms[c.index].spec->launch != launch_mode::graph)
          continue;
        try {
          for (std::int64_t b = 0; b < rotation_blocks; ++b) {
            c.graphs.push_back(m_dev.capture(step_of(ci, b)));
            check_released(*c.alloc);
          }
        } catch (const std::exception &e) {
          fail(c, e, "graph capture", false);
        }
      }
      // The spot check after a window: outputs against the reference (a failure fails the
      // cell's correctness record), inputs against what was uploaded (input-mutated).
      const auto spot_check = [&](cell_state &c, std::int64_t block, const spot_data &d) {
        ++c.record.spot_checks;
        const std::int64_t repeat_k = m_arms[c.index].spec->repeat;
        bool collected = false; // outputs an outside arm returned rather than wrote
        for (const auto &v :
             arm_args[static_cast<std::size_t>(&c - cells.data())][static_cast<std::size_t>(block)])
          if (v.bound) {
            v.bound->collect();
            collected = true;
          }
        if (collected)
          m_dev.synchronize();
        const std::string sample = fmt::format("timed sample {}", c.samples);
        for (std::int64_t k = 0; k < repeat_k; ++k) {
          const buffer_set &set = set_of(block, k);
          const std::string context =
              repeat_k > 1 ? fmt::format("{} (invocation {}): ", sample, k) : sample + ": ";
          auto rec =
              std::find_if(m_raw.correctness.begin(), m_raw.correctness.end(),
                           [&](const correctness_record &r) { return r.key == c.record.key; });
          if (rec != m_raw.correctness.end() && rec->passed) {
            correctness_record got;
            got.passed = true;
            check_outputs(pass, s, set, d.ref, got, context, m_arms[c.index]);
            if (!got.passed) {
              rec->passed = false;
              rec->detail = got.detail;
              rec->unwritten = got.unwritten;
              rec->max_abs_error = std::max(rec->max_abs_error, got.max_abs_error);
              rec->max_rel_error = std::max(rec->max_rel_error, got.max_rel_error);
            }
          }
          for (std::size_t t = 0; t < m_op.tensors.size() && !c.record.input_mutated; ++t) {
            if (d.bytes[t].empty())
              continue;
            const dtype et = element_type(m_op, t, m_proto.type);
            std::vector<std::uint8_t> now(d.bytes[t].size());
            m_dev.download(now.data(), set.at(t), now.size());
            if (now == d.bytes[t])
              continue;
            const std::size_t width = element_bytes(et);
            std::size_t j = 0;
            while (std::memcmp(&now[j * width], &d.bytes[t][j * width], width) == 0)
              ++j;
            const auto element = [&](const std::vector<std::uint8_t> &b) {
              const auto at = b.begin() + static_cast<std::ptrdiff_t>(j * width);
              return reference::unpack(std::vector<std::uint8_t>(at, at + width), et);
            };
            const auto was = element(d.bytes[t]);
            const auto is = element(now);
            c.record.input_mutated =
                fmt::format("{}{}: {} was {:.9g} before the call and {:.9g} after it", context,
                            m_op.tensors[t].name,
                            element_name(m_op, t, static_cast<std::int64_t>(j), s), was[0], is[0]);
          }
        }
      };
      // One window: fresh inputs (or a spot check's host inputs and poisoned outputs) in the
      // block this call uses, the flush, the timed step, then the off-window drain.
      // The kernel clock's windows not yet taken from the device, in timing order; taken in one
      // batch before a cell is finished and every 256 windows (docs/engine.md).
      struct pending_window {
        std::size_t ci;
        bool keep; ///< a kept sample (else warm-up: discarded)
      };
      std::vector<pending_window> pending;
      const bool clock_on = !m_raw.instrument.kernel_clock.empty();
      const auto clock_lost = [&](cell_state &c) {
        c.record.kernel_ms.clear();
        c.record.kernel_counts.clear();
        c.record.graph_kernel_counts.clear();
        c.record.kernel_names.clear();
        c.record.region_kernel_marks.clear();
        if (!c.record.error)
          c.record.error = "the kernel clock lost the records of some of this cell's windows";
      };
      const auto collect = [&] {
        if (pending.empty())
          return;
        std::vector<window_kernels> got = m_dev.take_window_kernels();
        const bool complete = got.size() == pending.size();
        for (std::size_t i = 0; i < pending.size(); ++i) {
          cell_state &c = cells[pending[i].ci];
          if (!pending[i].keep)
            continue;
          if (complete)
            add_kernels(c.record, got[i]);
          else
            clock_lost(c);
        }
        pending.clear();
      };
      const auto window = [&](std::size_t ci, bool keep, std::int64_t slot) {
        cell_state &c = cells[ci];
        if (c.failed)
          return;
        try {
          if (pending.size() >= 256)
            collect(); // host work before the flush is queued, never between it and the window
          if (keep && m_hooks.on_sample)
            m_hooks.on_sample(c.record.key);
          if (!keep && m_hooks.on_warmup)
            m_hooks.on_warmup(c.record.key);
          const std::int64_t block = c.calls % rotation_blocks;
          const std::int64_t repeat_k = m_arms[c.index].spec->repeat;
          const spot_data *d = slot >= 0 ? &spot_for(slot) : nullptr;
          // An outside arm's allocator statistics are read before the flush is enqueued: host
          // work between the flush and the window would let the flush finish first and open
          // the window on an idle device, exposing the arm's call path where a built-in arm's
          // is hidden behind the flush (seen on the H200: torch.cuda.memory_allocated() takes
          // ~130 us of host time and turned a 6.6 us window into 29 us).
          for (const auto &v : arm_args[ci][static_cast<std::size_t>(block)])
            if (v.bound)
              v.bound->before_window();
          for (std::int64_t k = 0; k < repeat_k; ++k) {
            const buffer_set &set = set_of(block, k);
            for (std::size_t t = 0; t < m_op.tensors.size(); ++t)
              if (m_op.tensors[t].role != tensor_role::input && m_op.used_in(t, pass))
                m_dev.copy(set.at(t), poison_set->at(t),
                           static_cast<std::size_t>(m_op.elements(t, s)) *
                               m_op.element_size(t, m_proto.type));
            if (d == nullptr) {
              fill_inputs(set, group_seed + 0x100000 * (ci + 1) +
                                   16 * static_cast<std::uint64_t>(c.calls * repeat_k + k));
              continue;
            }
            for (std::size_t t = 0; t < m_op.tensors.size(); ++t)
              if (!d->bytes[t].empty())
                m_dev.upload(set.at(t), d->bytes[t].data(), d->bytes[t].size());
          }
          ++c.calls;
          if (flush)
            m_dev.flush();
          const std::function<void()> step = !c.graphs.empty() ? std::function<void()>([&] {
            m_dev.replay(*c.graphs[static_cast<std::size_t>(block)]);
          })
                                                               : step_of(ci, block);
          const window_result w = m_dev.timed(step);
          if (clock_on)
            pending.push_back({ci, false});
          std::optional<double> drained; // first: host work before it would hide pending work
          if (keep)
            drained = m_dev.drain();
          for (const auto &v : arm_args[ci][static_cast<std::size_t>(block)])
            if (v.bound)
              v.bound->after_window();
          if (c.graphs.empty())
            check_released(*c.alloc);
          if (!keep) {
            c.warmup_ms.push_back(w.ms);
            ++c.record.warmup_calls;
            return;
          }
          c.record.samples_ms.push_back(w.ms);
          if (clock_on)
            pending.back().keep = true; // this window's kernels are this sample's
          ++c.samples;
          c.record.harness_bytes_in_window =
              std::max(c.record.harness_bytes_in_window, w.harness_growth);
          if (drained) {
            const double pending =
                std::max(0.0, *drained - (std::isfinite(m_idle_drain_ms) ? m_idle_drain_ms : 0.0));
            c.record.off_window_ms = std::isnan(c.record.off_window_ms)
                                         ? pending
                                         : std::max(c.record.off_window_ms, pending);
          }
          if (d != nullptr)
            spot_check(c, block, *d);
        } catch (const std::exception &e) {
          fail(c, e, keep ? "measurement" : "warmup");
        }
      };
      const auto finish = [&](cell_state &c) {
        collect();
        if (!c.record.kernel_ms.empty() && c.record.kernel_ms.size() != c.record.samples_ms.size())
          clock_lost(c);
        if (!c.failed) {
          try {
            c.record.clock_mhz = m_dev.clock_mhz();
          } catch (const std::exception &e) {
            fail(c, e, "clock read after the cell");
          }
        }
        c.record.peak_bytes = c.alloc->peak();
        for (const auto &blk : arm_args[static_cast<std::size_t>(&c - cells.data())])
          for (const auto &v : blk) // an outside arm's own allocator
            if (v.bound)
              if (auto own = v.bound->own_peak_bytes())
                c.record.peak_bytes = std::max(c.record.peak_bytes, *own);
        c.graphs.clear();
        done[c.index] = std::move(c.record);
        m_progress.cell_done(++finished, total);
      };
      // Warm-up: `warmup` windows, then more until the per-call time settles (at most
      // warmup + settle_cap_extra windows); none when the protocol asks for none.
      const auto warming = [&](const cell_state &c) {
        const auto n = static_cast<std::int64_t>(c.warmup_ms.size());
        if (c.failed || n >= warmup + settle_cap_extra)
          return false;
        return n < warmup || (warmup > 0 && !settled(c.warmup_ms));
      };

      if (m_proto.measurement.order == order_mode::sequential) {
        for (std::size_t ci = 0; ci < cells.size(); ++ci) {
          while (warming(cells[ci]))
            window(ci, false, -1);
          for (std::int64_t r = 0; r < reps; ++r)
            window(ci, true, spot_slot(r));
          finish(cells[ci]);
        }
      } else {
        for (bool any = true; any;) { // rounds in arm order
          any = false;
          for (std::size_t ci = 0; ci < cells.size(); ++ci)
            if (warming(cells[ci])) {
              window(ci, false, -1);
              any = true;
            }
        }
        std::vector<std::size_t> idx(cells.size());
        for (std::int64_t r = 0; r < reps; ++r) {
          for (std::size_t j = 0; j < idx.size(); ++j)
            idx[j] = j;
          for (std::size_t j = idx.size(); j > 1; --j) // Fisher-Yates, one generator per run
            std::swap(idx[j - 1], idx[order.below(j)]);
          for (const std::size_t ci : idx) {
            window(ci, true, spot_slot(r));
            if (r + 1 == reps)
              finish(cells[ci]);
          }
        }
        if (reps == 0)
          for (auto &c : cells)
            finish(c);
      }
      arm_args.clear();
      sets.clear();
      poison_set.reset();
      m_dev.trim();
      ++group_index;
    }
    for (auto &d : done)
      if (d)
        m_raw.cells.push_back(std::move(*d));
  }

  device &m_dev;
  const run_plan &m_plan;
  const protocol &m_proto;
  const operation_desc &m_op;
  progress_sink &m_progress;
  const engine_hooks &m_hooks;
  std::vector<bound_arm> m_arms;
  std::vector<std::optional<std::string>> m_skip;
  std::map<std::string, std::shared_ptr<outside_arm>> m_loaded; ///< outside arms by arm id
  std::vector<double> m_first_call_ms; ///< per plan cell: the correctness run's host time
  double m_idle_drain_ms = std::numeric_limits<double>::quiet_NaN();
  raw_run m_raw;
};

} // namespace

std::optional<std::string> device_cannot_run(const device &dev, const operation_desc &op,
                                             const arm_info &arm, const arm_spec &spec,
                                             pass_kind pass, std::int64_t rows, std::int64_t cols,
                                             dtype type) {
  if (auto why = dev.cannot_take(arm, pass, rows, cols))
    return why;
  if (spec.launch == launch_mode::graph)
    if (auto why = dev.cannot_capture())
      return fmt::format("launch: graph: {}", *why);
  const shape s = op.shape_of(rows, cols);
  const auto sets =
      static_cast<double>(rotation_blocks * std::max<std::int64_t>(spec.repeat, 1) + 1);
  const auto set = static_cast<long double>(set_bytes(op, type, pass, s));
  long double reference = 0; // inputs and reference outputs in float64, on the host
  for (std::size_t i = 0; i < op.tensors.size(); ++i)
    if (op.used_in(i, pass))
      reference += 2 * 8 * static_cast<long double>(op.elements(i, s));
  const long double scratch =
      static_cast<long double>(scratch_bytes(arm, pass, rows, cols, dev.processors()));
  const long double instrument = static_cast<long double>(dev.instrument().flush_bytes);
  long double need = static_cast<long double>(sets) * set + scratch + instrument;
  if (dev.kind() == "cpu")
    need += reference; // host memory is the device's memory
  const auto budget = static_cast<long double>(dev.memory_budget());
  if (need <= budget)
    return std::nullopt;
  return fmt::format("{} {}x{} needs about {:.2f} GiB ({} buffer set(s) of {:.3f} GiB, {:.3f} GiB "
                     "the arm allocates, {:.3f} GiB instrument{}), more than the {:.2f} GiB the "
                     "{} device allows a cell",
                     arm.name, rows, cols, static_cast<double>(need) / gib, sets,
                     static_cast<double>(set) / gib, static_cast<double>(scratch) / gib,
                     static_cast<double>(instrument) / gib,
                     dev.kind() == "cpu" ? fmt::format(", {:.3f} GiB float64 reference",
                                                       static_cast<double>(reference) / gib)
                                         : std::string(),
                     static_cast<double>(budget) / gib, dev.kind());
}

raw_run measure(device &dev, json environment, const run_plan &plan, const arm_resolver &resolve,
                progress_sink &progress, const engine_hooks &hooks) {
  if (plan.proto == nullptr)
    throw io_error("measure: the run plan has no protocol");
  engine e(dev, plan, resolve, progress, hooks);
  return e.run(std::move(environment));
}

} // namespace prereg
