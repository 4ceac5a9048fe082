// The tables of what was run and where: the run, the environment, the instrument, the design
// and the arms.
#include "report/render/setup_tables.hpp"
#include "report/render/roofline.hpp"

#include "report/render/body.hpp"
#include "report/render/format.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace prereg::render {
namespace {

std::string environment_value(const std::string &key, const json &value) {
  if (value.is_number() && key.size() > 6 && key.ends_with("_bytes")) {
    return fmt::format("{} ({} bytes)", bytes_text(value.get<double>()), value_text(value));
  }
  if (key == "other_processes") {
    if (value.is_array() && value.empty())
      return "none seen";
    if (value.is_string())
      return value.get<std::string>() + " (not observable here)";
  }
  return value_text(value);
}

std::string ceiling_text(const report_instrument &in) {
  std::string ceiling = "not measured";
  if (const auto c = finite(in.ceiling_gbps)) {
    ceiling = gbps_text(*c) + " (measured copy bandwidth, bytes read + written";
    const auto &samples = in.ceiling_samples_gbps;
    if (!samples.empty()) {
      double lo = INFINITY, hi = -INFINITY;
      for (const double s : samples)
        lo = std::min(lo, s), hi = std::max(hi, s);
      ceiling += fmt::format("; median of {} copies, range {} to {}", samples.size(),
                             three_digits(lo), three_digits(hi));
    }
    ceiling += " of " + bytes_text(static_cast<double>(in.ceiling_bytes));
    ceiling += ")";
  }
  return ceiling;
}

std::string flush_text(const report_instrument &in) {
  std::string out =
      in.flush_bytes == 0
          ? std::string("none")
          : fmt::format("reads {} ({})", bytes_text(static_cast<double>(in.flush_bytes)),
                        in.flush_method);
  if (in.llc_bytes > 0)
    out += fmt::format("; last-level cache {}", bytes_text(static_cast<double>(in.llc_bytes)));
  return out;
}

// The kernel clock (schema 4): shown where the report records one or why there is none.
void add_kernel_clock_row(table &t, const report_instrument &in, const json &env) {
  if (!in.kernel_clock.empty()) {
    std::string k = in.kernel_clock;
    if (const auto f = finite(in.kernel_clock_floor_ms))
      k += "; empty step with it on " + time_text(f) + " (launch floor without it " +
           time_text(finite(in.launch_floor_ms)) + ")";
    if (in.kernel_records_dropped > 0)
      k += fmt::format("; {} records dropped", in.kernel_records_dropped);
    t.rows.push_back({plain("kernel clock"), plain(k)});
  } else if (env.is_object() && env.contains("kernel_clock") && env["kernel_clock"].is_string()) {
    t.rows.push_back({plain("kernel clock"), plain(env["kernel_clock"].get<std::string>())});
  }
}

// An arm's options as "key value, ...", or "-".
std::string options_text(const json &arm) {
  std::string opts;
  if (const auto o = arm.find("options"); o != arm.end() && o->is_object())
    for (const auto &[k, val] : o->items())
      opts += (opts.empty() ? "" : ", ") + k + " " + value_text(val);
  return opts.empty() ? "-" : opts;
}

// Renderer 3: what an arm runs, as the protocol names it: a built-in kernel, or an outside
// arm's file (the freeze record's, resolved) and entry (`function:` or `name:`, `-` for a
// kernel).
std::pair<span, span> arm_code_spans(const json &arm, const json &frozen) {
  for (const auto &[key, entry] : {std::pair{"python", "function"}, {"plugin", "name"}}) {
    if (!arm.contains(key))
      continue;
    span file = code(text(frozen, "file", text(arm, key, "?")));
    file.prefix = std::string(key) + ": ";
    span e = code(text(arm, entry, "?"));
    e.prefix = std::string(entry) + ": ";
    return {file, e};
  }
  return {code(text(arm, "kernel", "?")), plain("-")};
}

// Renderer 3: the arm's source hash from the freeze record (a kernel's build hash, an outside
// file's SHA-256): 16 hex digits, the whole of it as the HTML tooltip.
span arm_hash_span(const json &frozen) {
  const std::string h = text(frozen, "source_sha256", text(frozen, "sha256"));
  if (h.empty())
    return plain("—");
  span s = code(h.substr(0, 16));
  s.title = h;
  return s;
}

// Renderer 3's arms table: what each arm runs (kernel, or file and entry) and its source hash.
table arms_table_r3(const view &v, bool any_options) {
  table t{{plain("arm"), plain("code"), plain("entry"), plain("source SHA-256"), plain("launch"),
           plain("repeat")},
          {false, false, false, false, false, true},
          {},
          true,
          "arms"};
  if (any_options) {
    t.header.push_back(plain("options"));
    t.numeric.push_back(false);
  }
  const json &frozen = child(v.report->protocol.freeze, "kernels");
  for (const json &a : child(*v.body, "arms")) {
    const json &record = child(frozen, text(a, "id"));
    auto [what, entry] = arm_code_spans(a, record);
    std::vector<span> row{code(text(a, "id", "?")),
                          std::move(what),
                          std::move(entry),
                          arm_hash_span(record),
                          plain(text(a, "launch", "?")),
                          plain(text(a, "repeat", "?"))};
    if (any_options)
      row.push_back(plain(options_text(a)));
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The outside arms of a protocol body (python or plugin), joined by ", "; "" when none.
std::string outside_arm_ids(const json &body) {
  std::string ids;
  for (const json &a : child(body, "arms"))
    if (a.contains("python") || a.contains("plugin"))
      ids += (ids.empty() ? "" : ", ") + text(a, "id", "?");
  return ids;
}

// run.isolation in words (docs/report.md): the mode, its layers or the reason, and which outside
// arms shared the measuring process with the built-in arms.
std::string isolation_words(const report_isolation &i, const json &body) {
  std::string out;
  if (isolation_mode(i) == "none")
    out = "none: " + i.reason;
  else
    out = fmt::format("{} ({}){}", isolation_mode(i), fmt::join(i.layers, ", "),
                      i.reason.empty() ? "" : "; missing: " + i.reason);
  const std::string ids = outside_arm_ids(body);
  if (!ids.empty())
    out += fmt::format("; outside arms ({}) ran in the one measuring process: its samples, "
                       "environment and correctness records are only as honest as their code",
                       ids);
  return out;
}

// run.watchdog in words (docs/report.md): the limit and each call it stopped.
std::string watchdog_words(const report_watchdog &w) {
  std::string out = fmt::format("{:g} s per call of arm code", w.call_timeout_s);
  if (w.stuck.empty())
    return out + "; no call was stopped";
  std::vector<std::string> stops;
  for (const auto &s : w.stuck) {
    std::string at;
    if (s.cell.is_object())
      try {
        at = " at " +
             cell_label(cell_key_from_json(s.cell, "run.watchdog.stuck.cell", "report.json"));
      } catch (const std::exception &) {
      }
    stops.push_back(
        fmt::format("arm {} ({}{}, stopped after {:.1f} s)", s.arm, s.phase, at, s.waited_s));
  }
  return out + fmt::format("; stopped: {}: those arms' cells failed and the run went on in a "
                           "fresh measuring process without them",
                           join(stops, "; "));
}

// run.scratch in words (docs/report.md): the size and folders of the measuring process's own
// scratch space, or why it had none.
std::string scratch_words(const report_scratch &s) {
  if (s.bytes == 0 || s.folders.empty())
    return "not bounded: " + s.reason;
  return fmt::format("{} MiB of its own over {} (writes there vanished with the measuring "
                     "process){}",
                     s.bytes >> 20, join(s.folders, ", "), s.reason.empty() ? "" : "; " + s.reason);
}

// run.isolation's probes in words (schema_version 8): each escape tried and what came back.
std::string probe_words(const report_isolation &i) {
  std::vector<std::string> parts;
  std::size_t escaped = 0;
  for (const auto &p : i.probes) {
    if (p.outcome == "contained")
      parts.push_back(p.error.empty() ? p.name + ": " + p.detail
                                      : p.name + " refused (" + p.error + ")");
    else if (p.outcome == "escaped")
      parts.push_back(p.name + " GOT PAST ITS WALL: " + p.detail);
    else
      parts.push_back(p.name + " not tried: " + p.detail);
    escaped += p.outcome == "escaped" ? 1 : 0;
  }
  return fmt::format("{} escape(s) tried before any outside code ran, {}: {}", i.probes.size(),
                     escaped == 0 ? "none got past its wall"
                                  : fmt::format("{} GOT PAST ITS WALL", escaped),
                     join(parts, "; "));
}

// "rows 1, 2 × cols 3", or over named axes each axis' extents in the operation's order.
std::string shapes_text(const view &v) {
  const json &e = extents(*v.body);
  if (!is_named(v))
    return fmt::format("rows {} × cols {}", list_text(child(e, "rows")),
                       list_text(child(e, "cols")));
  std::vector<std::string> parts;
  for (const auto &axis : v.axis_names)
    parts.push_back(axis + " " + list_text(child(e, axis)));
  return join(parts, " × ");
}

} // namespace

table run_table(const view &v) {
  const report_document &r = *v.report;
  const json &freeze = r.protocol.freeze;
  const report_run &run = r.run;
  const report_tool &tool = r.tool;
  table t{{plain("run"), plain("")}, {}, {}, true, "kv"};
  t.rows.push_back({plain("protocol"), code(text(*v.body, "id", "?"))});
  t.rows.push_back({plain("protocol hash"), code(r.protocol.hash)});
  t.rows.push_back({plain("frozen"), plain(fmt::format("{} by {}", text(freeze, "frozen_at", "?"),
                                                       text(freeze, "signer", "?")))});
  t.rows.push_back({plain("run id"), code(run.run_id)});
  t.rows.push_back(
      {plain("run time"), plain(fmt::format("{} → {}", run.started_at, run.finished_at))});
  t.rows.push_back(
      {plain("attempt"),
       plain(fmt::format("{} (this run's number among all runs of this protocol in the ledger)",
                         r.attempt))});
  t.rows.push_back(
      {plain("tool"), plain(fmt::format("{} {}, commit {}, {}", tool.name, tool.version,
                                        tool.git_commit, tool.build_flags))});
  if (run.isolation) // absent in reports before it: their pages stay as they were
    t.rows.push_back({plain("isolation"), plain(isolation_words(*run.isolation, *v.body))});
  if (run.watchdog) // version 8
    t.rows.push_back({plain("watchdog"), plain(watchdog_words(*run.watchdog))});
  if (run.scratch) // version 8
    t.rows.push_back({plain("scratch"), plain(scratch_words(*run.scratch))});
  if (run.isolation && !run.isolation->level.empty()) // schema_version 8
    t.rows.push_back({plain("isolation probes"), plain(probe_words(*run.isolation))});
  if (run.arm_log) {
    span log = code(run.arm_log->file);
    log.suffix = " (SHA-256 " + run.arm_log->sha256 + "): the outside arms' tracebacks";
    t.rows.push_back({plain("arm log"), log});
  }
  return t;
}

table environment_table(const view &v) {
  static const std::vector<std::pair<std::string, std::string>> known{
      {"device_name", "device"},
      {"driver_version", "driver"},
      {"runtime_version", "runtime"},
      {"compute_capability", "compute capability"},
      {"sm_count", "SMs"},
      {"l2_bytes", "L2 cache"},
      {"memory_bytes", "device memory"},
      {"sm_clock_mhz", "SM clock (MHz)"},
      {"memory_clock_mhz", "memory clock (MHz)"},
      {"cores", "cores"},
      {"llc_bytes", "last-level cache"},
      {"other_processes", "other processes"}};
  const json &env = v.report->environment;
  table t{{plain("environment"), plain("")}, {}, {}, true, "kv"};
  std::set<std::string> shown;
  for (const auto &[key, name] : known) {
    if (!env.is_object() || !env.contains(key))
      continue;
    t.rows.push_back({plain(name), plain(environment_value(key, env.at(key)))});
    shown.insert(key);
  }
  if (env.is_object())
    for (const auto &[key, value] : env.items())
      if (!shown.contains(key))
        t.rows.push_back({code(key), plain(environment_value(key, value))});
  t.rows.push_back(
      {plain("device ordinal"), plain(fmt::format("{}", v.report->run.device_ordinal))});
  return t;
}

table instrument_table(const view &v) {
  const report_instrument &in = v.report->instrument;
  table t{{plain("instrument"), plain("")}, {}, {}, true, "kv"};
  t.rows.push_back({plain("copy ceiling"), plain(ceiling_text(in))});
  add_roof_rows(t, in); // schema 8: the read, write and compute ceilings
  t.rows.push_back({plain("launch floor"), plain(time_text(finite(in.launch_floor_ms)) +
                                                 " (median time of an empty step)")});
  t.rows.push_back({plain("timer resolution"), plain(time_text(finite(in.timer_resolution_ms)))});
  t.rows.push_back({plain("cache flush"), plain(flush_text(in))});
  const auto clock = finite(in.clock_start_mhz);
  t.rows.push_back({plain("SM clock at start"),
                    plain(clock ? fmt::format("{:.0f} MHz", *clock) : std::string("not read"))});
  add_kernel_clock_row(t, in, v.report->environment);
  return t;
}

table design_table(const view &v) {
  const json &b = *v.body;
  const json &m = child(b, "measurement");
  const json &a = child(b, "analysis");
  const json &c = child(b, "correctness");
  table t{{plain("design"), plain("")}, {}, {}, true, "kv"};
  t.rows.push_back({plain("device"), plain(text(b, "device", "?"))});
  t.rows.push_back({plain("operation"), plain(fmt::format("{}, {}", text(b, "operation", "?"),
                                                          text(b, "dtype", "?")))});
  t.rows.push_back({plain("shapes"), plain(shapes_text(v))});
  t.rows.push_back({plain("passes"), plain(list_text(child(b, "passes")))});
  t.rows.push_back({plain("operating point"),
                    plain(v.op ? shape_text(v, v.op->first, v.op->second) : std::string("none"))});
  const json &stop = child(m, "stop"); // prereg: 2's stopping rule replaces the repetitions
  const std::string reps =
      stop.is_object()
          ? fmt::format("until the median's interval is within {} (at least {}, at most {} "
                        "samples, {} s per cell)",
                        text(stop, "rel_ci", "?"), text(stop, "min", "?"), text(stop, "max", "?"),
                        text(stop, "max_seconds", "?"))
          : text(m, "repetitions", "?") + " repetitions";
  t.rows.push_back(
      {plain("measurement"),
       plain(fmt::format("{} after {} warm-up steps, cache flush {}, {} order", reps,
                         text(m, "warmup", "?"), text(m, "l2_flush", "?") == "true" ? "on" : "off",
                         text(m, "order", "?")))});
  t.rows.push_back({plain("analysis"),
                    plain(fmt::format(
                        "statistic {}, confidence {}, {} bootstrap resamples, unstable if "
                        "IQR/median > {}",
                        text(a, "statistic", "?"), text(a, "confidence", "?"),
                        text(a, "bootstrap_resamples", "?"), text(a, "unstable_iqr_ratio", "?")))});
  t.rows.push_back({plain("tolerance"), plain(fmt::format("rtol {}, atol {}", text(c, "rtol", "?"),
                                                          text(c, "atol", "?")))});
  return t;
}

table arms_table(const view &v) {
  // An options column only where some arm sets options (prereg: 2), so earlier pages are
  // regenerated byte for byte.
  bool any_options = false;
  for (const json &a : child(*v.body, "arms"))
    if (const auto o = a.find("options"); o != a.end() && o->is_object() && !o->empty())
      any_options = true;
  if (v.renderer >= 3)
    return arms_table_r3(v, any_options);
  table t{{plain("arm"), plain("kernel"), plain("launch"), plain("repeat")},
          {false, false, false, true},
          {},
          true,
          "arms"};
  if (any_options) {
    t.header.push_back(plain("options"));
    t.numeric.push_back(false);
  }
  for (const json &a : child(*v.body, "arms")) {
    std::vector<span> row{code(text(a, "id", "?")), code(text(a, "kernel", "?")),
                          plain(text(a, "launch", "?")), plain(text(a, "repeat", "?"))};
    if (any_options)
      row.push_back(plain(options_text(a)));
    t.rows.push_back(std::move(row));
  }
  return t;
}

} // namespace prereg::render
