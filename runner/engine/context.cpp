// One run of the engine: binding the plan's arms, grouping its cells (context.hpp).
#include "engine/context.hpp"

#include "arms/python_operation.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg::engine_detail {
namespace {

const arm_spec &spec_of(const protocol &p, const std::string &id) {
  if (const arm_spec *a = find_arm_spec(p, id))
    return *a;
  throw io_error(fmt::format("measure: the plan names arm '{}', not in the protocol", id));
}

/// The protocol's operation; an operation file's gets its Python reference here, in the
/// measuring process (docs/operations.md).
const operation_desc &operation_with_reference(const protocol &p) {
  const operation_desc &op = operation_named(p.op);
  if (op.outside)
    bind_python_reference(op, p.device);
  return op;
}

} // namespace

run_context::run_context(device &dev_, const run_plan &plan_, const arm_resolver &resolve,
                         progress_sink &progress_, const engine_hooks &hooks_)
    : dev(dev_), plan(plan_), proto(*plan_.proto), op(operation_with_reference(proto)),
      progress(progress_), hooks(hooks_) {
  arms.resize(plan.cells.size());
  skip.resize(plan.cells.size());
  excluded.assign(plan.cells.size(), nullptr);
  first_call_ms.assign(plan.cells.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    arms[i].spec = &spec_of(proto, plan.cells[i].arm);
    if (const auto it = plan.excluded.find(plan.cells[i].arm); it != plan.excluded.end())
      excluded[i] = &it->second; // never loaded, bound or called
    else if (arms[i].spec->outside())
      bind_outside(i);
    else
      bind_builtin(i, resolve);
  }
}

void run_context::bind_builtin(std::size_t i, const arm_resolver &resolve) {
  bound_arm &a = arms[i];
  a.info = find_arm(proto.device, a.spec->kernel);
  if (a.info != nullptr)
    a.code = resolve(*a.spec, *a.info);
  if (a.info == nullptr || a.code.empty()) {
    skip[i] = fmt::format("kernel {} has no {} implementation in this build", a.spec->kernel,
                          proto.device);
    return;
  }
  for (const auto &o : a.info->options) {
    double v = o.default_value;
    for (const auto &[name, value] : a.spec->options)
      if (name == o.name)
        v = value;
    a.options.push_back({o.name.c_str(), v});
  }
  if (a.spec->launch == launch_mode::graph)
    if (auto why = dev.cannot_capture())
      skip[i] = fmt::format("launch: graph: {}", *why);
}

/// An outside arm's cell: loaded once per arm (in this, the measuring process; a library or
/// file that cannot be loaded ends the run before anything is measured), then checked
/// against the cell like a built-in arm.
void run_context::bind_outside(std::size_t i) {
  bound_arm &a = arms[i];
  const cell_key &k = plan.cells[i];
  if (!plan.load_outside) {
    skip[i] =
        fmt::format("arm {} ({}) needs a loader for outside arms", a.spec->id, a.spec->label());
    return;
  }
  auto it = loaded.find(a.spec->id);
  if (it == loaded.end()) {
    const watched_call w = watch(i, call_phase::load);
    it = loaded.emplace(a.spec->id, plan.load_outside(*a.spec)).first;
  }
  a.outside = it->second;
  a.info = &a.outside->info();
  const auto [rows, cols] = flat_rows_cols(k);
  if (auto why = cannot_run(*a.info, k.pass, rows, cols, proto.type))
    skip[i] = *why;
  else if (auto why2 = device_cannot_run(dev, op, *a.info, *a.spec, k, proto.type))
    skip[i] = *why2;
}

std::vector<std::vector<std::size_t>> run_context::groups() const {
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    if (skip[i])
      continue;
    const cell_key &k = plan.cells[i];
    auto g = std::find_if(out.begin(), out.end(), [&](const auto &grp) {
      const cell_key &o = plan.cells[grp.front()];
      return o.pass == k.pass && o.same_shape(k);
    });
    if (g == out.end()) {
      out.emplace_back();
      g = out.end() - 1;
    }
    g->push_back(i);
  }
  const auto rank = [&](std::size_t i) { return arms[i].spec - proto.arms.data(); };
  for (auto &g : out)
    std::stable_sort(g.begin(), g.end(),
                     [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
  return out;
}

void run_context::survive(const cell_key &k, const std::string &why) const {
  if (dev.broken())
    throw error(exit_code::failure,
                fmt::format("the {} device was lost after arm '{}' failed ({}); the run "
                            "cannot continue",
                            dev.kind(), k.arm, why));
}

void run_context::record_skip(std::size_t i) {
  raw.deviations.push_back(skip_deviation(plan.cells[i], *skip[i]));
}

watched_call run_context::watch(std::size_t i, call_phase phase) const {
  return watched_call(static_cast<int>(arms[i].spec - proto.arms.data()), static_cast<int>(i),
                      static_cast<int>(phase));
}

json skip_deviation(const cell_key &k, const std::string &message) {
  return {{"kind", "cell-skipped"}, {"cell", to_json(k)}, {"message", message}};
}

std::string describe(const std::exception &e) {
  std::string s = e.what();
  if (const auto *pe = dynamic_cast<const prereg::error *>(&e);
      pe != nullptr && !pe->where().empty())
    s += fmt::format(" ({})", pe->where());
  return s;
}

} // namespace prereg::engine_detail
