// The dry run of `check` and `freeze` (dry_run.hpp): a plan of one cell per arm and pass at the
// smallest shape each arm takes, the engine's correctness gate over it (engine/dry_run.hpp),
// and its first failure as one line.
#include "run/dry_run.hpp"

#include "arms/outside_arm.hpp"
#include "arms/outside_common.hpp"
#include "base/rng.hpp"
#include "engine/dry_run.hpp"
#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "spec/outside_file.hpp"
#include "spec/registry.hpp"
#include "spec/shard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace prereg {
namespace fs = std::filesystem;
namespace {

std::int64_t elements(const cell_key &k) {
  const auto [rows, cols] = flat_rows_cols(k);
  return rows * cols;
}

/// Why built-in arm `spec` cannot take cell `k` on `dev`, or nullopt.
std::optional<std::string> builtin_cannot(const protocol &p, device &dev, const operation_desc &op,
                                          const arm_spec &spec, const cell_key &k) {
  const arm_info *info = find_arm(p.device, spec.kernel);
  if (info == nullptr)
    return fmt::format("kernel {} has no {} implementation in this build", spec.kernel, p.device);
  const auto [rows, cols] = flat_rows_cols(k);
  if (auto why = cannot_run(*info, k.pass, rows, cols, p.type))
    return why;
  return device_cannot_run(dev, op, *info, spec, k, p.type);
}

/// One cell per arm and pass: the smallest shape of the protocol (by elements, the first of
/// equals in plan order) that the arm can take here; an outside arm's smallest (the engine
/// checks it once loaded). An arm that can take none is not called, with the smallest's reason.
run_plan dry_plan(const protocol &p, device &dev, const operation_desc &op, dry_run_report &rep,
                  const std::map<std::string, std::string> &not_loaded) {
  run_plan plan;
  plan.proto = &p;
  plan.seed = seed_from_hash(protocol_hash(p)); // the run's seed: its gate's inputs at this shape
  std::vector<cell_key> cells = all_cells(p);
  std::stable_sort(cells.begin(), cells.end(),
                   [](const cell_key &a, const cell_key &b) { return elements(a) < elements(b); });
  for (const auto &spec : p.arms) {
    if (const auto nl = not_loaded.find(spec.id); spec.outside() && nl != not_loaded.end()) {
      rep.not_called.emplace_back(spec.id, "it could not be loaded here (the notice above)");
      continue;
    }
    for (const pass_kind pass : p.passes) {
      std::optional<std::string> first_why;
      for (const auto &k : cells) {
        if (k.arm != spec.id || k.pass != pass)
          continue;
        const auto why = spec.outside() ? std::nullopt : builtin_cannot(p, dev, op, spec, k);
        if (!why) {
          plan.cells.push_back(k);
          first_why.reset();
          break;
        }
        if (!first_why)
          first_why = *why;
      }
      if (first_why)
        rep.not_called.emplace_back(spec.id, fmt::format("{}: {}", to_string(pass), *first_why));
    }
  }
  return plan;
}

/// The file of an outside arm (its error's WHERE), "" for a built-in one.
std::string arm_where(const arm_spec &a, const fs::path &dir) {
  if (!a.outside())
    return {};
  return outside_file(dir, a.file).string();
}

/// " (line N of FILE)": the innermost line of the Python arm's own file in the tracebacks the
/// arms' log holds (the failure's), or "".
std::string line_in_log(const std::string &log, const arm_spec &a, const fs::path &dir) {
  if (a.source != arm_source::python)
    return {};
  const std::string file = outside_file(dir, a.file).string();
  const std::string mark = fmt::format("File \"{}\", line ", file);
  const auto at = log.rfind(mark);
  if (at == std::string::npos)
    return {};
  std::size_t end = at + mark.size();
  while (end < log.size() && log[end] >= '0' && log[end] <= '9')
    ++end;
  if (end == at + mark.size())
    return {};
  return fmt::format(" (line {} of {})", log.substr(at + mark.size(), end - at - mark.size()),
                     fs::path(file).filename().string());
}

/// The first failure of the dry run as one line (exit 2), or nothing.
void throw_first_failure(const protocol &p, const fs::path &dir, const dry_run_outcome &o) {
  const std::string log = outside::take_arm_log();
  if (o.reference_failure)
    throw invalid_input(
        fmt::format("dry run: {} (the operation's reference failed, not an arm: fix the "
                    "operation's reference)",
                    *o.reference_failure),
        o.reference_where);
  for (const auto &a : p.arms)
    for (const auto &c : o.correctness)
      if (c.key.arm == a.id && !c.passed)
        throw invalid_input(fmt::format("dry run: arm {} ({}) at {} {}: {}{}", a.id, a.label(),
                                        to_string(c.key.pass), shape_label(c.key),
                                        c.detail.empty() ? "failed" : c.detail,
                                        line_in_log(log, a, dir)),
                            arm_where(a, dir));
}

} // namespace

json dry_run_report::to_json() const {
  json j = {{"device", device}, {"not_run", not_run}};
  json c = json::array();
  for (const auto &k : calls)
    c.push_back(prereg::to_json(k));
  j["calls"] = std::move(c);
  json n = json::array();
  for (const auto &[arm, why] : not_called)
    n.push_back({{"arm", arm}, {"why", why}});
  j["not_called"] = std::move(n);
  return j;
}

dry_run_report dry_run_report::from_json(const json &j) {
  dry_run_report r;
  try {
    r.device = j.at("device").get<std::string>();
    r.not_run = j.at("not_run").get<std::string>();
    for (const auto &c : j.at("calls")) {
      cell_key k;
      k.arm = c.at("arm").get<std::string>();
      k.pass = c.at("pass").get<std::string>() == "fwd" ? pass_kind::fwd : pass_kind::fwd_bwd;
      if (const std::string why = read_shape_json(c, c.contains("shape"), k); !why.empty())
        throw std::runtime_error(why);
      r.calls.push_back(std::move(k));
    }
    for (const auto &n : j.at("not_called"))
      r.not_called.emplace_back(n.at("arm").get<std::string>(), n.at("why").get<std::string>());
  } catch (const std::exception &) {
    throw io_error("the process that loads the arms sent a malformed dry run report");
  }
  return r;
}

dry_run_report
dry_run_here(const protocol &p, const fs::path &protocol_dir,
             const std::function<std::unique_ptr<device>(const std::string &, int)> &make_device,
             const arm_resolver &resolve, const std::string &no_device,
             const std::map<std::string, std::string> &not_loaded) {
  dry_run_report rep;
  if (!no_device.empty()) {
    rep.not_run = no_device;
    return rep;
  }
  std::unique_ptr<device> dev = make_device(p.device, 0);
  const operation_desc &op = operation_named(p.op);
  run_plan plan = dry_plan(p, *dev, op, rep, not_loaded);
  plan.load_outside = [&](const arm_spec &spec) -> std::shared_ptr<outside_arm> {
    const fs::path file = outside_file(protocol_dir, spec.file);
    return spec.source == arm_source::plugin ? load_plugin_arm(file, spec.entry, p, spec.id)
                                             : load_python_arm(file, spec.entry, p, spec.id);
  };
  const dry_run_outcome o = dry_run(*dev, plan, resolve);
  throw_first_failure(p, protocol_dir, o);
  rep.device = p.device;
  for (const auto &c : o.correctness)
    rep.calls.push_back(c.key);
  for (const auto &d : o.skipped)
    rep.not_called.emplace_back(d.at("cell").value("arm", ""), d.value("message", ""));
  return rep;
}

std::string dry_run_line(const dry_run_report &r, const protocol &p) {
  if (r.device.empty())
    return {};
  // The calls grouped by pass and shape, in the order they were made.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const auto &k : r.calls) {
    const std::string where = fmt::format("{} {}", to_string(k.pass), shape_label(k));
    auto g =
        std::find_if(groups.begin(), groups.end(), [&](const auto &e) { return e.first == where; });
    if (g == groups.end()) {
      groups.push_back({where, {}});
      g = groups.end() - 1;
    }
    g->second.push_back(k.arm);
  }
  std::vector<std::string> parts;
  for (const auto &[where, arms] : groups)
    parts.push_back(fmt::format("{} ({})", where, fmt::join(arms, ", ")));
  if (parts.empty())
    return escape_control(fmt::format("dry run on {}: no arm could be called here", r.device));
  return escape_control(fmt::format(
      "dry run on {}: each arm called once, every output matches operation {}'s reference "
      "(rtol {:g}, atol {:g}) at {}",
      r.device, p.op, p.correctness.rtol, p.correctness.atol, fmt::join(parts, "; ")));
}

std::vector<std::string> dry_run_notices(const dry_run_report &r) {
  std::vector<std::string> out;
  if (!r.not_run.empty())
    out.push_back(escape_control(fmt::format(
        "the dry run was not done ({}): no arm and not the operation's reference were called; "
        "a mistake in them shows at `prereg run`",
        r.not_run)));
  for (const auto &[arm, why] : r.not_called)
    out.push_back(escape_control(
        fmt::format("dry run: arm {} was not called on this machine: {}", arm, why)));
  return out;
}

} // namespace prereg
