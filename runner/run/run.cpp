// `prereg run`: the only place that ties store, measuring side, report and ledger; a short
// driver (run_protocol) over its phases: verify, start the measuring side, load the key, plan,
// start the run in the ledger, measure, write, sign and publish.
#include "run/run.hpp"

#include "arms/outside_arm.hpp"
#include "base/fs.hpp"
#include "base/process.hpp"
#include "base/rng.hpp"
#include "base/time.hpp"
#include "crypto/keyring.hpp"
#include "model/report_model.hpp"
#include "prereg/error.hpp"
#include "report/report.hpp"
#include "report/report_text.hpp"
#include "run/ceiling_cache.hpp"
#include "run/isolate.hpp"
#include "run/phases.hpp"
#include "run/progress.hpp"
#include "run/source_changes.hpp"
#include "spec/registry.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <ctime>
#include <random>
#include <set>
#include <span>

namespace prereg {
namespace fs = std::filesystem;
namespace {

using detail::throw_if_signalled;

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0)
    return "unknown";
  return buf;
}

bool pid_alive(std::int64_t pid) {
  if (pid <= 0)
    return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

json deviation(std::string kind, std::string message, json extra = json::object()) {
  extra["kind"] = std::move(kind);
  extra["message"] = std::move(message);
  return extra;
}

fs::path partial_dir(const fs::path &folder, const std::string &run_id) {
  return folder / ("." + run_id + ".partial");
}

/// The run ids in `entries` that have a run-complete or run-aborted entry.
std::set<std::string> ended_runs(std::span<const json> entries) {
  std::set<std::string> ended;
  for (const auto &e : entries) {
    const auto ev = e.value("event", "");
    if (ev == ledger_event::run_complete || ev == ledger_event::run_aborted)
      ended.insert(e.value("run_id", ""));
  }
  return ended;
}

/// Removes the .RUNID.partial folders under `folder` of runs that the ledger records as ended
/// (left by a kill -9), saying so on stderr; a folder of a run still going, or of a run this
/// ledger does not know, is left alone.
void remove_stale_partials(const fs::path &folder, std::span<const json> entries) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    return;
  const std::set<std::string> ended = ended_runs(entries);
  for (const auto &entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 10 || name[0] != '.' || !name.ends_with(".partial"))
      continue;
    const std::string run_id = name.substr(1, name.size() - 9);
    if (ended.count(run_id) == 0 || !entry.is_directory(ec))
      continue; // not ours, or still running
    fs::remove_all(entry.path(), ec);
    if (!ec)
      notice(fmt::format("removed {}, left by run {} which the ledger records as ended",
                         escape_control(entry.path().string()), escape_control(run_id)));
  }
}

} // namespace

run_plan plan_run(const protocol &proto, const std::string &hash, device &dev,
                  const operation_desc &op, std::vector<json> &deviations) {
  run_plan plan;
  plan.proto = &proto;
  plan.seed = seed_from_hash(hash);
  for (const auto &c : all_cells(proto)) {
    const arm_spec &spec = *find_arm_spec(proto, c.arm);
    if (spec.outside()) { // known once loaded, in the measuring process: the engine checks it
      plan.cells.push_back(c);
      continue;
    }
    const arm_info *info = find_arm(proto.device, spec.kernel);
    auto why = cannot_run(*info, c.pass, c.rows, c.cols, proto.type);
    if (!why)
      why = device_cannot_run(dev, op, *info, spec, c.pass, c.rows, c.cols, proto.type);
    if (why)
      deviations.push_back(deviation("cell-skipped", *why, {{"cell", to_json(c)}}));
    else
      plan.cells.push_back(c);
  }
  return plan;
}

std::size_t reap_vanished_runs(const store &s, const signing_key &key) {
  file_lock lock(s.lock_path());
  ledger l = s.get_ledger();
  std::vector<json> vanished; // copied: the appends below invalidate l.entries()
  {
    const std::vector<json> &entries = l.entries();
    const std::set<std::string> ended = ended_runs(entries);
    const std::string host = host_name();
    for (const auto &start : entries) {
      if (start.value("event", "") != ledger_event::run_start)
        continue;
      const std::string run_id = start.value("run_id", "");
      if (ended.count(run_id) != 0 || start.value("host", "") != host ||
          pid_alive(start.value("pid", 0)))
        continue;
      vanished.push_back(start);
    }
  }
  std::size_t reaped = 0;
  for (const json &start : vanished) {
    const std::string run_id = start.value("run_id", "");
    l.append({{"event", ledger_event::run_aborted},
              {"protocol_hash", start.value("protocol_hash", "")},
              {"run_id", run_id},
              {"attempt", start.value("attempt", 0)},
              {"reason", fmt::format("process {} vanished without finishing (killed?); noticed "
                                     "by a later command",
                                     start.value("pid", 0))}},
             key);
    ++reaped;
  }
  return reaped;
}

namespace {

// --- the phases of run_protocol, in order ----------------------------------------------------

/// 1. Integrity first: nothing touches a device before this passes.
frozen_protocol verify_target(const store &s, const run_options &o) {
  frozen_protocol fp = resolve_for_run(s, o.target, o.key_path, python_source_changes);
  if (!fp.note.empty())
    notice(fp.note);
  if (o.shard)
    (void)shard_cells(fp.proto, *o.shard); // an empty shard: exit 2, before anything
  return fp;
}

/// `--instrument-from DIR`: the baseline report's instrument, for a grading's submission (or
/// reward) protocol of the same task only (docs/grading.md).
std::optional<instrument_record> given_instrument(const run_options &o, const frozen_protocol &fp) {
  if (o.instrument_from.empty())
    return std::nullopt;
  const auto &g = fp.proto.grading;
  if (!g || g->role == "baseline")
    throw invalid_input("--instrument-from is for the protocol of a grading's submission (prereg "
                        "grade, prereg reward) only");
  const fs::path file = o.instrument_from / "report.json";
  const json j = parse_json_strict(read_file(file), file.string());
  const report_document base =
      report_from_json(j, file.string(), report_part::protocol | report_part::instrument);
  const json &bg = base.protocol.body.contains("grading") ? base.protocol.body["grading"] : json();
  if (!bg.is_object() || bg.value("role", "") != "baseline" || bg.value("task", "") != g->task)
    throw invalid_input("--instrument-from names no baseline report of this protocol's task",
                        file.string());
  return base.instrument;
}

/// The options of the measuring side: `o` with the frozen protocol's outside arms to load.
/// The side starts before the key is loaded: with o.isolate it is a forked child that never
/// holds the key (isolate.hpp).
run_options measuring_options(const store &s, const run_options &o, const frozen_protocol &fp) {
  run_options measuring = o;
  measuring.hooks.given_instrument = given_instrument(o, fp);
  measuring.load_outside = [project = s.project_root(), &fp](const arm_spec &spec) {
    const fs::path file = frozen_outside_file(project, fp, spec);
    return spec.source == arm_source::plugin ? load_plugin_arm(file, spec.entry, fp.proto, spec.id)
                                             : load_python_arm(file, spec.entry, fp.proto, spec.id);
  };
  return measuring;
}

/// The signing key, its public part in the store, and earlier runs that vanished reaped.
signing_key load_run_key(const store &s, const fs::path &key_path) {
  signing_key key = load_or_create_key(key_path);
  s.add_key(key.public_part());
  reap_vanished_runs(s, key);
  return key;
}

/// 2.-3. The metadata a plan gives (its skipped cells are deviations).
run_meta meta_from_plan(const run_options &o, const measuring_plan &planned) {
  run_meta meta;
  meta.device_ordinal = o.device_ordinal;
  meta.deviations = planned.skipped;
  meta.shard = o.shard;
  meta.scratch = planned.scratch;
  meta.isolation = planned.isolation; // the measuring process's walls (docs/engine.md)
  return meta;
}

/// A device-changed deviation per device an earlier run-start of `hash` names besides `device`.
std::vector<json> device_changes(std::span<const json> entries, const std::string &hash,
                                 const std::string &device_name) {
  std::vector<std::string> other_devices;
  for (const auto &e : entries) {
    if (e.value("protocol_hash", "") != hash)
      continue;
    if (e.value("event", "") == ledger_event::run_start) {
      const auto d = e.value("device_name", "");
      if (!d.empty() && d != device_name &&
          std::find(other_devices.begin(), other_devices.end(), d) == other_devices.end())
        other_devices.push_back(d);
    }
  }
  std::vector<json> out;
  for (const auto &d : other_devices)
    out.push_back(
        deviation("device-changed",
                  fmt::format("earlier runs of this protocol used {}, this one {}", d, device_name),
                  {{"previous_device", d}, {"device", device_name}}));
  return out;
}

/// A new run id, reserved by creating its .partial folder under `folder` (mkdir is atomic
/// across processes and stores); it is also new to this ledger and has no report folder yet.
std::string reserve_run_id(const fs::path &folder, std::span<const json> entries,
                           const std::string &hash) {
  std::set<std::string> used;
  for (const auto &e : entries)
    used.insert(e.value("run_id", ""));
  std::random_device rd;
  for (int tries = 0;; ++tries) {
    if (tries == 1000)
      throw io_error("cannot reserve a run id", folder.string());
    std::string run_id = fmt::format("{}-{}-{:06x}", utc_stamp(std::time(nullptr)),
                                     hash.substr(0, 12), rd() & 0xffffffu);
    if (used.count(run_id) != 0 || !create_directory_exclusive(partial_dir(folder, run_id)))
      continue;
    if (!fs::exists(folder / run_id))
      return run_id;
    fs::remove(partial_dir(folder, run_id)); // ours, empty
  }
}

/// The run-start entry; if it cannot be appended, the reserved folder is given back.
void append_run_start(ledger &l, const run_options &o, const frozen_protocol &fp,
                      const run_meta &meta, const std::string &device_name,
                      const signing_key &key) {
  try {
    json start = {{"event", ledger_event::run_start},
                  {"protocol_hash", fp.hash},
                  {"run_id", meta.run_id},
                  {"attempt", meta.attempt},
                  {"pid", static_cast<std::int64_t>(::getpid())},
                  {"host", host_name()},
                  {"device_name", device_name},
                  {"started_at", meta.started_at}};
    if (o.shard)
      start["shard"] = to_string(*o.shard);
    l.append(std::move(start), key);
  } catch (...) {
    std::error_code ec;
    fs::remove(partial_dir(o.out_dir / fp.proto.id, meta.run_id), ec); // ours, empty
    throw;
  }
}

/// 4. Run start, under the store lock: the attempt number, a unique run id, the ledger head
/// the run extends, and the run-start entry.
void start_run(const store &s, const run_options &o, const frozen_protocol &fp,
               const std::string &device_name, const signing_key &key, run_meta &meta) {
  file_lock lock(s.lock_path());
  ledger l = s.get_ledger();
  const std::vector<json> &entries = l.entries(); // not used after the append below
  const std::int64_t attempt = next_attempt(entries, fp.hash);
  for (auto &d : device_changes(entries, fp.hash, device_name))
    meta.deviations.push_back(std::move(d));
  const fs::path folder = o.out_dir / fp.proto.id;
  remove_stale_partials(folder, entries);
  meta.run_id = reserve_run_id(folder, entries, fp.hash);
  meta.attempt = attempt;
  meta.started_at = utc_now_rfc3339();
  const auto [head_seq, head_sha] = l.head();
  meta.ledger_head = report_ledger_head{head_seq, head_sha};
  append_run_start(l, o, fp, meta, device_name, key);
}

/// The deviations the measurement itself found: arms that failed correctness or the run.
void add_outcome_deviations(const raw_run &raw, run_meta &meta) {
  for (const auto &c : raw.correctness)
    if (!c.passed)
      meta.deviations.push_back(deviation(
          "arm-excluded",
          fmt::format("arm {} failed correctness at {} {}x{}: excluded from verdicts there",
                      c.key.arm, to_string(c.key.pass), c.key.rows, c.key.cols),
          {{"cell", to_json(c.key)}}));
  for (const auto &c : raw.cells)
    if (c.error)
      meta.deviations.push_back(deviation(
          "arm-error", fmt::format("arm {} failed during the run: {}", c.key.arm, *c.error),
          {{"cell", to_json(c.key)}}));
}

using run_clock = std::chrono::steady_clock;

double ms_between(run_clock::time_point a, run_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// When the run's steps ended: its start, the measure call's start and end.
struct run_times {
  run_clock::time_point start, measure_start, measure_end;
};

/// Writes report.json, its signature, report.md and report.html into `dir`; the payload. The
/// report records the run's phases up to its analysis (docs/report.md, "phases").
std::string write_signed_report(const fs::path &dir, const frozen_protocol &fp, const raw_run &raw,
                                const run_meta &meta, const signing_key &key, const run_times &t) {
  report_document report = build_report_document(fp, raw, meta);
  const auto built = run_clock::now();
  report.phases = make_report_phases(ms_between(t.start, t.measure_start),
                                     ms_between(t.measure_start, t.measure_end), raw,
                                     ms_between(t.measure_end, built), ms_between(t.start, built));
  std::string payload = canonical_json(to_json(report));
  write_file_atomic(dir / "report.json", payload);
  write_file_atomic(dir / "report.dsse.json", make_envelope(payload, key));
  write_file_atomic(dir / "report.md", render_markdown(report));
  write_file_atomic(dir / "report.html", render_html(report));
  return payload;
}

/// Appends the run's run-complete or run-aborted `entry` (its event and last member set),
/// under the store lock.
void append_run_end(const store &s, const run_options &o, const frozen_protocol &fp,
                    const run_meta &meta, json entry, const signing_key &key) {
  file_lock lock(s.lock_path());
  entry["protocol_hash"] = fp.hash;
  entry["run_id"] = meta.run_id;
  entry["attempt"] = meta.attempt;
  if (o.shard)
    entry["shard"] = to_string(*o.shard);
  s.get_ledger().append(std::move(entry), key);
}

/// The copy ceiling's cache for this run (run/ceiling_cache.hpp): the device's identity, and the
/// entry offered for reuse (null: the run measures it).
struct ceiling_use {
  json identity;
  json offered;
};

/// 4b. A protocol with `measurement.ceiling: reuse` is offered a signed ceiling of this device
/// and build measured at most an hour before the run started (docs/engine.md).
ceiling_use offer_ceiling(const frozen_protocol &fp, const measuring_plan &planned,
                          const signing_key &key, const run_meta &meta, measuring_side &side) {
  ceiling_use c{ceiling_identity(planned.environment, fp.proto.device), nullptr};
  if (fp.proto.measurement.reuse_ceiling)
    c.offered = find_ceiling(c.identity, key, meta.started_at);
  if (c.offered.is_object())
    side.offer_ceiling(c.offered);
  return c;
}

/// 5.-7. Measure, analyse, write and sign into the reserved folder, publish it and record the
/// run complete; any failure or interrupt removes what was written and records it aborted. A
/// ceiling the run measured is kept in the cache afterwards.
fs::path measure_and_publish(const store &s, const run_options &o, const frozen_protocol &fp,
                             measuring_side &side, const signing_key &key, run_meta &meta,
                             run_times times, const ceiling_use &ceiling) {
  const fs::path final_dir = o.out_dir / fp.proto.id / meta.run_id;
  const fs::path temp_dir = partial_dir(o.out_dir / fp.proto.id, meta.run_id); // ours
  bool published = false; // the report folder is ours to remove only once we renamed it there
  try {
    detail::signal_guard guard;
    detail::terminal_progress progress(!o.quiet && ::isatty(STDERR_FILENO));
    times.measure_start = run_clock::now();
    raw_run raw = side.measure(progress);
    times.measure_end = run_clock::now();
    meta.watchdog = side.watchdog();
    throw_if_signalled();
    check_ceiling_reuse(raw.instrument, ceiling.offered);
    meta.finished_at = utc_now_rfc3339();
    add_outcome_deviations(raw, meta);
    if (!raw.arm_log.empty()) { // the outside arms' tracebacks, named in the report by hash
      write_file_atomic(temp_dir / "arm-errors.log", raw.arm_log);
      meta.arm_log = report_log{"arm-errors.log", sha256_hex(raw.arm_log)};
    }
    const std::string payload = write_signed_report(temp_dir, fp, raw, meta, key, times);
    throw_if_signalled();
    rename_no_replace(temp_dir, final_dir); // never over another run's report
    published = true;
    append_run_end(s, o, fp, meta,
                   {{"event", ledger_event::run_complete}, {"report_sha256", sha256_hex(payload)}},
                   key);
    remember_ceiling(ceiling.identity, raw.instrument, meta.started_at, "run " + meta.run_id, key);
  } catch (const std::exception &e) {
    std::error_code ec;
    fs::remove_all(temp_dir, ec);
    if (published)
      fs::remove_all(final_dir, ec);
    try {
      append_run_end(s, o, fp, meta, {{"event", ledger_event::run_aborted}, {"reason", e.what()}},
                     key);
    } catch (const std::exception &again) { // a full disk: say both, the first reason first
      throw io_error(fmt::format("{}; the run-aborted entry could not be appended either ({}): "
                                 "a later command records the run as vanished",
                                 e.what(), again.what()));
    }
    throw;
  }
  return final_dir;
}

} // namespace

fs::path run_protocol(const run_options &o) {
  run_times times;
  times.start = run_clock::now();
  const store s(o.store_root);
  const frozen_protocol fp = verify_target(s, o);
  const run_options measuring = measuring_options(s, o, fp); // outlives the side, which holds it
  const std::unique_ptr<measuring_side> side =
      start_measuring(measuring, fp.proto, seed_from_hash(fp.hash));
  const signing_key key = load_run_key(s, o.key_path);
  // 2. The environment must be able to serve (exit 5 before the run starts; no ledger entry).
  // 3. The plan: every cell that can run; the rest become deviations.
  const measuring_plan planned = side->plan();
  run_meta meta = meta_from_plan(o, planned);
  const std::string device_name = planned.environment.value("device_name", "unknown");
  start_run(s, o, fp, device_name, key, meta);
  const ceiling_use ceiling = offer_ceiling(fp, planned, key, meta, *side);
  return measure_and_publish(s, o, fp, *side, key, meta, times, ceiling);
}

} // namespace prereg
