// The correctness gate (gate.hpp): each shape's inputs and float64 reference made once, every
// cell's arm run once on them with poisoned outputs, its outputs compared.
#include "engine/gate.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

namespace prereg::engine_detail {
namespace {

/// The gate's walk over shapes, groups and cells.
class correctness_gate {
public:
  explicit correctness_gate(run_context &ctx) : m_ctx(ctx), m_groups(ctx.groups()) {
    for (const auto &g : m_groups)
      m_total += g.size();
    m_records.resize(ctx.plan.cells.size());
  }

  /// Every shape in first-appearance order, then the records in plan order.
  void run() {
    for (const cell_key &s : shapes())
      check_shape(s);
    for (auto &r : m_records)
      if (r)
        m_ctx.raw.correctness.push_back(std::move(*r));
  }

private:
  [[nodiscard]] std::vector<cell_key> shapes() const;
  void check_shape(const cell_key &shape_key);
  void check_group(const std::vector<std::size_t> &g, const shape &s, const host_tensors &t);
  bool check_group_on_device(const std::vector<std::size_t> &g, const shape &s, std::uint64_t seed);
  [[nodiscard]] bool host_reference_ready();
  void check_cells(const std::vector<std::size_t> &g, const shape &s, const buffer_set &set,
                   const checked_reference &ref);
  void fail_group(const std::vector<std::size_t> &g, const std::exception &e,
                  const char *what = "buffers for this shape could not be set up");
  void note_reference_failure(const std::exception &e);
  std::optional<correctness_record> check_one(std::size_t i, const shape &s, const buffer_set &set,
                                              const checked_reference &ref);
  bool capture_first_call(std::size_t i, const std::function<void()> &step,
                          tracked_allocator &alloc, bool &capturing);

  run_context &m_ctx;
  device_checks *m_checks = device_checks_for(m_ctx); ///< null: the host's reference
  std::vector<std::vector<std::size_t>> m_groups;
  std::size_t m_total = 0, m_done = 0;
  std::vector<std::optional<correctness_record>> m_records; ///< per plan cell
  /// The shape's host reference, computed after the shape's first call (host_reference_ready).
  struct host_reference {
    host_tensors *t = nullptr;
    shape s;
    pass_kind widest = pass_kind::fwd;
    bool done = false;
    std::string failure; ///< the reference failed: the detail of every cell checked after
  } m_host;
};

std::vector<cell_key> correctness_gate::shapes() const {
  std::vector<cell_key> shapes;
  for (const auto &g : m_groups) {
    const cell_key &k = m_ctx.plan.cells[g.front()];
    if (std::none_of(shapes.begin(), shapes.end(),
                     [&](const cell_key &s) { return s.same_shape(k); }))
      shapes.push_back(k);
  }
  return shapes;
}

/// A shape's inputs are drawn from one seed, for fwd+bwd when the shape has a fwd+bwd group (its
/// forward outputs are the fwd pass's): on the device per group where it computes the
/// reference, else once on the host, whose float64 reference is computed only after the
/// shape's first call returned (host_reference), so that nothing of it exists while that call
/// runs (docs/engine.md, "What is computed where").
void correctness_gate::check_shape(const cell_key &shape_key) {
  std::vector<const std::vector<std::size_t> *> mine;
  pass_kind widest = pass_kind::fwd;
  for (const auto &g : m_groups) {
    const cell_key &k = m_ctx.plan.cells[g.front()];
    if (!k.same_shape(shape_key))
      continue;
    mine.push_back(&g);
    if (k.pass == pass_kind::fwd_bwd)
      widest = pass_kind::fwd_bwd;
  }
  const operation_desc &op = m_ctx.op;
  const shape s = key_shape(op, shape_key);
  const std::uint64_t seed = shape_seed(m_ctx.plan.seed, widest, shape_key);
  std::optional<host_tensors> t; // drawn when a group needs the host's reference
  m_host = {};
  for (std::size_t k = 0; k < mine.size(); ++k) {
    try {
      if (m_checks != nullptr && check_group_on_device(*mine[k], s, seed))
        continue;
    } catch (const reference_failure &f) { // the operation's own reference: every cell left
      try {
        std::rethrow_exception(f.original);
      } catch (const std::exception &e) {
        note_reference_failure(e);
        for (std::size_t j = k; j < mine.size(); ++j)
          fail_group(*mine[j], e, "the operation's reference failed");
      }
      return;
    }
    if (!t) {
      t = reference::random_tensors(op, s, m_ctx.proto.type, seed);
      m_host = host_reference{&*t, s, widest, false, {}};
    }
    check_group(*mine[k], s, *t);
  }
}

/// The shape's host reference, computed on first use (after a call); false once it failed
/// (an operation file's reference: its message is kept for every cell left).
bool correctness_gate::host_reference_ready() {
  if (m_host.failure.empty() && !m_host.done && m_host.t != nullptr) {
    try {
      const watched_call w(-1, -1, static_cast<int>(call_phase::reference));
      m_ctx.op.reference(m_ctx.op, m_host.s, m_host.widest, *m_host.t); // fills the outputs
      m_host.done = true;
    } catch (const std::exception &e) {
      note_reference_failure(e);
      m_host.failure = fmt::format("the operation's reference failed: {}", describe(e));
    }
  }
  return m_host.failure.empty();
}

/// The group's inputs drawn on the device and its reference computed there; false when either
/// could not be set up (the host's path then runs).
bool correctness_gate::check_group_on_device(const std::vector<std::size_t> &g, const shape &s,
                                             std::uint64_t seed) {
  const operation_desc &op = m_ctx.op;
  const dtype type = m_ctx.proto.type;
  const pass_kind pass = m_ctx.plan.cells[g.front()].pass;
  std::optional<buffer_set> set;
  std::unique_ptr<device_reference> ref;
  try {
    set.emplace(m_ctx.dev, op, s, type, pass);
    fill_checked_inputs(*m_checks, op, s, type, pass, seed,
                        std::vector<void *>(set->data(), set->data() + set->size()));
    const watched_call w(-1, -1, static_cast<int>(call_phase::reference));
    ref = reference_on_device(m_ctx, *m_checks, s, pass,
                              std::vector<void *>(set->data(), set->data() + set->size()));
    m_ctx.dev.synchronize();
  } catch (const reference_failure &) {
    throw;
  } catch (const std::exception &) {
    if (m_ctx.dev.broken())
      throw;
    return false;
  }
  if (!ref)
    return false;
  check_cells(g, s, *set, checked_reference{nullptr, ref.get()});
  return true;
}

/// One buffer set for the group's pass, holding the shape's inputs; every cell checked on it.
void correctness_gate::check_group(const std::vector<std::size_t> &g, const shape &s,
                                   const host_tensors &t) {
  const operation_desc &op = m_ctx.op;
  const pass_kind pass = m_ctx.plan.cells[g.front()].pass;
  std::optional<buffer_set> set;
  try {
    set.emplace(m_ctx.dev, op, s, m_ctx.proto.type, pass);
    for (std::size_t i = 0; i < op.tensors.size(); ++i)
      if (op.tensors[i].role == tensor_role::input && op.used_in(i, pass)) {
        const auto bytes = reference::pack(t[i], element_type(op, i, m_ctx.proto.type));
        m_ctx.dev.upload(set->at(i), bytes.data(), bytes.size());
      }
  } catch (const std::exception &e) {
    fail_group(g, e);
    return;
  }
  check_cells(g, s, *set, checked_reference{&t, nullptr});
}

/// Every cell of the group checked on `set` against `ref`.
void correctness_gate::check_cells(const std::vector<std::size_t> &g, const shape &s,
                                   const buffer_set &set, const checked_reference &ref) {
  for (std::size_t i : g) {
    if (m_ctx.excluded[i] != nullptr) { // the watchdog's: no correctness run, no record
      m_ctx.progress.cell_done(++m_done, m_total);
      continue;
    }
    if (ref.host != nullptr && !m_host.failure.empty()) { // the reference failed: not called
      correctness_record rec;
      rec.key = m_ctx.plan.cells[i];
      rec.detail = m_host.failure;
      m_ctx.survive(rec.key, rec.detail);
      m_records[i] = std::move(rec);
      m_ctx.progress.cell_done(++m_done, m_total);
      continue;
    }
    m_records[i] = check_one(i, s, set, ref);
    if (!m_records[i]) // an outside arm that cannot be captured: skipped, with the reason
      m_ctx.record_skip(i);
    m_ctx.progress.cell_done(++m_done, m_total);
  }
}

/// The first failure of the operation's reference, kept on the context (its message and where).
void correctness_gate::note_reference_failure(const std::exception &e) {
  if (m_ctx.reference_failure)
    return;
  const auto *pe = dynamic_cast<const prereg::error *>(&e);
  m_ctx.reference_failure.emplace(e.what(), pe != nullptr ? pe->where() : std::string());
}

void correctness_gate::fail_group(const std::vector<std::size_t> &g, const std::exception &e,
                                  const char *what) {
  for (std::size_t i : g) {
    correctness_record rec;
    rec.key = m_ctx.plan.cells[i];
    rec.detail = fmt::format("{}: {}", what, describe(e));
    const std::string why = rec.detail;
    m_records[i] = std::move(rec);
    m_ctx.survive(m_ctx.plan.cells[i], why);
    m_ctx.progress.cell_done(++m_done, m_total);
  }
}

/// Cell i's correctness run: poisoned outputs, the arm's first call (captured and replayed for
/// graph launch), then its outputs against `ref`. Nothing: skipped (see capture_first_call).
std::optional<correctness_record> correctness_gate::check_one(std::size_t i, const shape &s,
                                                              const buffer_set &set,
                                                              const checked_reference &ref) {
  device &dev = m_ctx.dev;
  const cell_key &key = m_ctx.plan.cells[i];
  const bound_arm &arm = m_ctx.arms[i];
  correctness_record rec;
  rec.key = key;
  if (m_ctx.hooks.on_check)
    m_ctx.hooks.on_check(key);
  // Poison every output and saved tensor the pass writes.
  poison_outputs(dev, m_ctx.op, m_ctx.proto.type, key.pass, s, set);
  const auto first_call_start = std::chrono::steady_clock::now();
  auto alloc = dev.make_arm_allocator();
  std::vector<invocation> inv;
  bool capturing = false;
  {
    // The watch ends with the arm's call: the host reference computed after it is not the arm's.
    const watched_call watch = m_ctx.watch(i, call_phase::correctness);
    try {
      inv.push_back(
          make_invocation(m_ctx.op, set, key, m_ctx.proto.type, key.pass, arm, dev, *alloc));
      const auto step = [&] { run_step(arm, key.pass, inv, 1, *alloc, dev.stream()); };
      if (arm.spec->launch == launch_mode::graph) {
        if (!capture_first_call(i, step, *alloc, capturing))
          return std::nullopt;
      } else {
        step();
        dev.synchronize();
        check_released(*alloc);
      }
      if (inv.front().bound) { // outputs an outside arm returned rather than wrote
        inv.front().bound->collect();
        dev.synchronize();
      }
    } catch (const std::exception &e) {
      rec.detail = fmt::format("the arm failed in its correctness run: {}", describe(e));
      alloc->release_all(!capturing && !dev.broken()); // a failed capture's blocks never existed
      m_ctx.survive(key, rec.detail);
      return rec;
    }
  }
  m_ctx.first_call_ms[i] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first_call_start)
          .count();
  alloc->release_all();
  if (ref.host != nullptr && !host_reference_ready()) {
    rec.detail = m_host.failure;
    m_ctx.survive(key, rec.detail);
    return rec;
  }
  rec.passed = true;
  check_outputs(m_ctx, key.pass, s, set, ref, rec, "", arm);
  return rec;
}

/// A graph arm's first call: captured, then replayed. False: an outside arm whose library
/// cannot be captured, skipped (not failed) with the reason in ctx.skip. `capturing` stays
/// true while a failed capture propagates (its blocks never existed).
bool correctness_gate::capture_first_call(std::size_t i, const std::function<void()> &step,
                                          tracked_allocator &alloc, bool &capturing) {
  device &dev = m_ctx.dev;
  const bound_arm &arm = m_ctx.arms[i];
  capturing = true;
  std::unique_ptr<captured_step> captured;
  try {
    captured = dev.capture(step);
  } catch (const std::exception &e) {
    if (!arm.outside)
      throw;
    alloc.release_all(false);
    m_ctx.survive(m_ctx.plan.cells[i], e.what());
    m_ctx.skip[i] = fmt::format("launch: graph: arm {} cannot be captured into a CUDA graph: {}",
                                arm.spec->id, describe(e));
    return false;
  }
  capturing = false;
  check_released(alloc);
  dev.replay(*captured);
  dev.synchronize();
  return true;
}

} // namespace

void check_correctness(run_context &ctx) {
  ctx.progress.phase("correctness");
  correctness_gate(ctx).run();
}

std::string element_name(const operation_desc &op, std::size_t tensor, std::int64_t i,
                         const shape &s) {
  const auto &dims = op.tensors[tensor].dims;
  if (dims.empty())
    return "its value (a 0-dim tensor)";
  if (dims.size() == 1)
    return fmt::format("element {} ({} {})", i, dims[0] == "cols" ? "col" : "row", i);
  const std::int64_t inner = s.extents.at(static_cast<std::size_t>(op.axis_of(dims.back())));
  return fmt::format("element {} (row {}, col {})", i, i / inner, i % inner);
}

namespace {

/// One checked tensor's comparison, wherever its reference is: the result, the output's and the
/// reference's values at its first bad element, and whether the output is all poison.
struct tensor_check {
  reference::comparison c;
  double got = 0, ref = 0;
  bool all_poison = false;
  op_tolerance tol; ///< the tolerance it was compared with
};

/// Tensor t's tolerance: the protocol's `correctness`, exact for an integer or bool tensor, the
/// operation's own for an fp8 one (docs/operations.md, "Element types").
op_tolerance tolerance_of(const run_context &ctx, std::size_t t) {
  const correctness_spec &c = ctx.proto.correctness;
  return ctx.op.tolerance_of(t, op_tolerance{ctx.proto.type, c.rtol, c.atol}, ctx.proto.type);
}

tensor_check compare_tensor(const run_context &ctx, std::size_t t, const shape &s,
                            const buffer_set &set, const checked_reference &ref) {
  const operation_desc &op = ctx.op;
  const op_tolerance tol = tolerance_of(ctx, t);
  const dtype et = element_type(op, t, ctx.proto.type);
  tensor_check r;
  if (ref.on_device != nullptr) {
    const device_comparison d = ref.on_device->compare(t, set.at(t), et, tol.rtol, tol.atol);
    r.c = d.result;
    r.got = d.got;
    r.ref = d.ref;
    r.all_poison = d.all_poison;
    r.tol = tol;
    return r;
  }
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(op.elements(t, s)) * element_bytes(et));
  ctx.dev.download(bytes.data(), set.at(t), bytes.size());
  const std::vector<double> got = reference::unpack_output(bytes, et);
  r.all_poison =
      op.tensors[t].role == tensor_role::saved && // only saved tensors ask
      std::all_of(got.begin(), got.end(), [](double v) { return reference::is_poison(v); });
  r.c = reference::compare(got, (*ref.host)[t], tol.rtol, tol.atol);
  if (!r.c.passed) {
    const auto j = static_cast<std::size_t>(std::max<std::int64_t>(r.c.first_bad, 0));
    r.got = got[j];
    r.ref = (*ref.host)[t][j];
  }
  r.tol = tol;
  return r;
}

} // namespace

void check_outputs(const run_context &ctx, pass_kind pass, const shape &s, const buffer_set &set,
                   const checked_reference &ref, correctness_record &rec,
                   const std::string &context, const bound_arm &arm) {
  const operation_desc &op = ctx.op;
  for (std::size_t t = 0; t < op.tensors.size(); ++t) {
    const tensor_desc &d = op.tensors[t];
    if (!d.checked || !op.used_in(t, pass) || (d.produced_by_bwd && pass != pass_kind::fwd_bwd))
      continue;
    const tensor_check k = compare_tensor(ctx, t, s, set, ref);
    // Saved statistics are optional for an outside arm: left unwritten, they are not checked.
    if (d.role == tensor_role::saved && arm.outside && arm.outside->stats_optional() &&
        k.all_poison)
      continue;
    const reference::comparison &c = k.c;
    rec.max_abs_error = std::max(rec.max_abs_error, c.max_abs_error);
    rec.max_rel_error = std::max(rec.max_rel_error, c.max_rel_error);
    rec.unwritten = rec.unwritten || c.unwritten;
    if (c.passed)
      continue;
    if (rec.passed) {
      const std::string where = element_name(op, t, c.first_bad, s);
      rec.detail = reference::is_poison(k.got)
                       ? fmt::format("{}: unwritten (still poison) at {}", d.name, where)
                   : c.constant
                       ? fmt::format("{}: every element is {:.9g}, the reference is not constant "
                                     "({} is {:.9g})",
                                     d.name, k.got, where, k.ref)
                       : fmt::format("{}: {} is {:.9g}, reference {:.9g} (rtol {:g}, atol {:g})",
                                     d.name, where, k.got, k.ref, k.tol.rtol, k.tol.atol);
      rec.detail = context + rec.detail;
    }
    rec.passed = false;
  }
}

} // namespace prereg::engine_detail
