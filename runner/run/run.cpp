// The run engine: the only place that ties store, backend, analysis, report and ledger.
#include "run/run.hpp"
#include "arms/outside_arm.hpp"

#include "base/fs.hpp"
#include "base/rng.hpp"
#include "base/time.hpp"
#include "crypto/keyring.hpp"
#include "engine/measure.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "report/report.hpp"
#include "report/report_text.hpp"
#include "run/isolate.hpp"
#include "spec/operation.hpp"
#include "spec/registry.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <random>
#include <set>
#include <span>

namespace prereg {
namespace fs = std::filesystem;
namespace {

std::atomic<int> g_signal{0};

extern "C" void on_signal(int sig) { g_signal.store(sig); }

/// Installs SIGINT/SIGTERM handlers for the lifetime of a run; restores the old ones.
class signal_guard {
public:
  signal_guard() {
    g_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &m_old_int);
    sigaction(SIGTERM, &sa, &m_old_term);
  }
  ~signal_guard() {
    sigaction(SIGINT, &m_old_int, nullptr);
    sigaction(SIGTERM, &m_old_term, nullptr);
  }
  signal_guard(const signal_guard &) = delete;
  signal_guard &operator=(const signal_guard &) = delete;

private:
  struct sigaction m_old_int {};
  struct sigaction m_old_term {};
};

void throw_if_signalled() {
  if (const int sig = g_signal.load(); sig != 0)
    throw error(exit_code::failure,
                fmt::format("run interrupted by {}", sig == SIGINT ? "SIGINT" : "SIGTERM"));
}

/// Progress on stderr when it is a terminal: the phase, its cells done/total, the run's elapsed
/// time and the phase's ETA (from the phase's own rate: the instrument's set-up and the
/// correctness gate do not inflate the timing phase's estimate); redrawn at least every
/// half second during long steps.
class terminal_progress final : public progress_sink {
public:
  explicit terminal_progress(bool enabled) : m_enabled(enabled), m_start(clock::now()) {}
  ~terminal_progress() override {
    if (m_enabled && m_drawn)
      fmt::print(stderr, "\n");
  }
  void phase(std::string_view name) override {
    throw_if_signalled();
    m_phase = name;
    m_phase_start = clock::now();
    m_done = m_total = 0;
    draw();
  }
  void cell_done(std::size_t done, std::size_t total) override {
    throw_if_signalled();
    m_done = done;
    m_total = total;
    draw();
  }
  void tick() override {
    throw_if_signalled();
    if (clock::now() - m_last_draw >= std::chrono::milliseconds(500))
      draw();
  }

private:
  using clock = std::chrono::steady_clock;
  void draw() {
    m_last_draw = clock::now();
    if (!m_enabled)
      return;
    const auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
    const double elapsed = seconds(m_last_draw - m_start);
    std::string cells;
    if (m_total > 0) {
      cells = fmt::format("  cells {}/{}", m_done, m_total);
      if (m_done > 0 && m_total >= m_done)
        cells += fmt::format("  ETA {:.0f}s", seconds(m_last_draw - m_phase_start) /
                                                  static_cast<double>(m_done) *
                                                  static_cast<double>(m_total - m_done));
    }
    fmt::print(stderr, "\r\033[K[{}]{}  elapsed {:.0f}s", m_phase, cells, elapsed);
    m_drawn = true;
  }
  bool m_enabled;
  bool m_drawn = false;
  std::string m_phase = "start";
  std::size_t m_done = 0;
  std::size_t m_total = 0;
  clock::time_point m_start;
  clock::time_point m_phase_start = m_start;
  clock::time_point m_last_draw = m_start;
};

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

namespace {

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

} // namespace

std::size_t reap_vanished_runs(const store &s, const signing_key &key) {
  file_lock lock(s.lock_path());
  ledger l = s.get_ledger();
  const auto entries = l.entries();
  const std::set<std::string> ended = ended_runs(entries);
  const std::string host = host_name();
  std::size_t reaped = 0;
  for (const auto &start : entries) {
    if (start.value("event", "") != ledger_event::run_start)
      continue;
    const std::string run_id = start.value("run_id", "");
    if (ended.count(run_id) != 0 || start.value("host", "") != host ||
        pid_alive(start.value("pid", 0)))
      continue;
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
      fmt::print(stderr, "prereg: removed {}, left by run {} which the ledger records as ended\n",
                 escape_control(entry.path().string()), escape_control(run_id));
  }
}

} // namespace

fs::path run_protocol(const run_options &o) {
  const store s(o.store_root);
  // 1. Integrity first: nothing touches a device before this passes.
  const frozen_protocol fp = resolve_for_run(s, o.target, o.key_path);
  if (!fp.note.empty())
    fmt::print(stderr, "prereg: {}\n", fp.note);
  const protocol &proto = fp.proto;
  if (o.shard)
    (void)shard_cells(proto, *o.shard); // an empty shard: exit 2, before anything
  // The measuring side (device, plan, measurement) starts before the key is loaded: with
  // o.isolate it is a forked child that never holds the key (isolate.hpp).
  run_options measuring = o;
  measuring.load_outside = [project = s.project_root(), &fp](const arm_spec &spec) {
    const fs::path file = frozen_outside_file(project, fp, spec);
    return spec.source == arm_source::plugin ? load_plugin_arm(file, spec.entry, fp.proto, spec.id)
                                             : load_python_arm(file, spec.entry, fp.proto, spec.id);
  };
  const std::unique_ptr<measuring_side> side =
      start_measuring(measuring, proto, seed_from_hash(fp.hash));
  const signing_key key = load_or_create_key(o.key_path);
  s.add_key(key.public_part());
  reap_vanished_runs(s, key);

  // 2. The environment must be able to serve (exit 5 before the run starts; no ledger entry).
  // 3. The plan: every cell that can run; the rest become deviations.
  const measuring_plan planned = side->plan();
  run_meta meta;
  meta.device_ordinal = o.device_ordinal;
  meta.deviations = planned.skipped;
  meta.shard = o.shard;
  const std::string device_name = planned.environment.value("device_name", "unknown");

  // 4. Run start: attempt number and a unique run id, under the store lock.
  std::string run_id;
  {
    file_lock lock(s.lock_path());
    ledger l = s.get_ledger();
    const auto entries = l.entries();
    const std::int64_t attempt = next_attempt(entries, fp.hash);
    std::vector<std::string> other_devices;
    for (const auto &e : entries) {
      if (e.value("protocol_hash", "") != fp.hash)
        continue;
      if (e.value("event", "") == ledger_event::run_start) {
        const auto d = e.value("device_name", "");
        if (!d.empty() && d != device_name &&
            std::find(other_devices.begin(), other_devices.end(), d) == other_devices.end())
          other_devices.push_back(d);
      }
    }
    for (const auto &d : other_devices)
      meta.deviations.push_back(deviation(
          "device-changed",
          fmt::format("earlier runs of this protocol used {}, this one {}", d, device_name),
          {{"previous_device", d}, {"device", device_name}}));
    // A run id is reserved by creating its .partial folder (mkdir is atomic across processes
    // and stores); it must also be new to this ledger and have no report folder yet.
    const fs::path folder = o.out_dir / proto.id;
    remove_stale_partials(folder, entries);
    std::set<std::string> used;
    for (const auto &e : entries)
      used.insert(e.value("run_id", ""));
    std::random_device rd;
    for (int tries = 0;; ++tries) {
      if (tries == 1000)
        throw io_error("cannot reserve a run id", folder.string());
      run_id = fmt::format("{}-{}-{:06x}", utc_stamp(std::time(nullptr)), fp.hash.substr(0, 12),
                           rd() & 0xffffffu);
      if (used.count(run_id) != 0 || !create_directory_exclusive(partial_dir(folder, run_id)))
        continue;
      if (!fs::exists(folder / run_id))
        break;
      fs::remove(partial_dir(folder, run_id)); // ours, empty
    }
    meta.run_id = run_id;
    meta.attempt = attempt;
    meta.started_at = utc_now_rfc3339();
    const auto [head_seq, head_sha] = l.head();
    meta.ledger_head = report_ledger_head{head_seq, head_sha};
    try {
      json start = {{"event", ledger_event::run_start},
                    {"protocol_hash", fp.hash},
                    {"run_id", run_id},
                    {"attempt", attempt},
                    {"pid", static_cast<std::int64_t>(::getpid())},
                    {"host", host_name()},
                    {"device_name", device_name},
                    {"started_at", meta.started_at}};
      if (o.shard)
        start["shard"] = to_string(*o.shard);
      l.append(std::move(start), key);
    } catch (...) {
      std::error_code ec;
      fs::remove(partial_dir(folder, run_id), ec); // ours, empty
      throw;
    }
  }

  const fs::path final_dir = o.out_dir / proto.id / run_id;
  const fs::path temp_dir = partial_dir(o.out_dir / proto.id, run_id); // reserved above: ours
  bool published = false; // the report folder is ours to remove only once we renamed it there
  try {
    signal_guard guard;
    terminal_progress progress(!o.quiet && ::isatty(STDERR_FILENO));
    raw_run raw = side->measure(progress);
    throw_if_signalled();
    meta.finished_at = utc_now_rfc3339();
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

    const report_document report = build_report_document(fp, raw, meta);
    const std::string payload = canonical_json(to_json(report));
    write_file_atomic(temp_dir / "report.json", payload);
    write_file_atomic(temp_dir / "report.dsse.json", make_envelope(payload, key));
    write_file_atomic(temp_dir / "report.md", render_markdown(report));
    write_file_atomic(temp_dir / "report.html", render_html(report));
    throw_if_signalled();
    rename_no_replace(temp_dir, final_dir); // never over another run's report
    published = true;
    file_lock lock(s.lock_path());
    json complete = {{"event", ledger_event::run_complete},
                     {"protocol_hash", fp.hash},
                     {"run_id", run_id},
                     {"attempt", meta.attempt},
                     {"report_sha256", sha256_hex(payload)}};
    if (o.shard)
      complete["shard"] = to_string(*o.shard);
    s.get_ledger().append(std::move(complete), key);
  } catch (const std::exception &e) {
    std::error_code ec;
    fs::remove_all(temp_dir, ec);
    if (published)
      fs::remove_all(final_dir, ec);
    file_lock lock(s.lock_path());
    json aborted = {{"event", ledger_event::run_aborted},
                    {"protocol_hash", fp.hash},
                    {"run_id", run_id},
                    {"attempt", meta.attempt},
                    {"reason", e.what()}};
    if (o.shard)
      aborted["shard"] = to_string(*o.shard);
    s.get_ledger().append(std::move(aborted), key);
    throw;
  }
  return final_dir;
}

fs::path try_protocol(const run_options &o) {
  // The file as it is: validated like a freeze, but nothing is stored, signed or ledgered.
  frozen_protocol fp;
  fp.source = read_file(o.target);
  fp.proto = parse_protocol(fp.source, o.target);
  fp.body = to_json(fp.proto);
  fp.canonical = canonical_json(fp.body);
  fp.hash = sha256_hex(fp.canonical);
  json kernels = json::object();
  for (const auto &arm : fp.proto.arms) {
    if (arm.outside()) { // the file as it is now, hashed like a freeze would
      const fs::path file = outside_file(fs::absolute(o.target).parent_path(), arm.file);
      kernels[arm.id] = {{arm.source == arm_source::plugin ? "plugin" : "python", arm.file},
                         {"entry", arm.entry},
                         {"file", file.string()},
                         {"sha256", outside_file_sha256(file, arm.id)}};
      continue;
    }
    kernels[arm.id] = {{"kernel", arm.kernel},
                       {"source_sha256", find_arm(fp.proto.device, arm.kernel)->source_sha256}};
  }
  fp.freeze = {{"exploratory", "not frozen: `prereg try` ran the file as it was"},
               {"protocol_hash", fp.hash},
               {"source_sha256", sha256_hex(fp.source)},
               {"kernels", kernels},
               {"tool_version", build_info::version}};
  const protocol &proto = fp.proto;

  if (!o.make_device)
    throw std::logic_error("run_options.make_device is not set");
  if (!o.resolve_arm)
    throw std::logic_error("run_options.resolve_arm is not set");
  std::unique_ptr<device> dev = o.make_device(proto.device, o.device_ordinal);
  json environment = dev->probe();
  run_meta meta;
  meta.device_ordinal = o.device_ordinal;
  run_plan plan = plan_run(proto, fp.hash, *dev, operation_named(proto.op), meta.deviations);
  plan.load_outside = [dir = fs::absolute(o.target).parent_path(), &proto](const arm_spec &spec) {
    const fs::path file = outside_file(dir, spec.file); // unfrozen: the file as it is now
    return spec.source == arm_source::plugin ? load_plugin_arm(file, spec.entry, proto, spec.id)
                                             : load_python_arm(file, spec.entry, proto, spec.id);
  };

  std::time_t t = std::time(nullptr);
  do {
    meta.run_id = "EXPLORATORY-" + utc_stamp(t++) + "-" + fp.hash.substr(0, 12);
  } while (fs::exists(o.out_dir / proto.id / meta.run_id));
  meta.started_at = utc_now_rfc3339();
  const fs::path final_dir = o.out_dir / proto.id / meta.run_id;
  const fs::path temp_dir = o.out_dir / proto.id / ("." + meta.run_id + ".partial");
  try {
    signal_guard guard;
    terminal_progress progress(!o.quiet && ::isatty(STDERR_FILENO));
    raw_run raw = measure(*dev, environment, plan, o.resolve_arm, progress, o.hooks);
    attach_regions(raw);
    throw_if_signalled();
    meta.finished_at = utc_now_rfc3339();
    report_document report = build_report_document(fp, raw, meta);
    report.exploratory = true;
    const std::string payload = canonical_json(to_json(report));
    write_file_atomic(temp_dir / "report.json", payload);
    write_file_atomic(temp_dir / "report.md", render_markdown(report));
    write_file_atomic(temp_dir / "report.html", render_html(report));
    fs::rename(temp_dir, final_dir);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(temp_dir, ec); // ours alone: the name is unique to this attempt
    throw;
  }
  return final_dir;
}

} // namespace prereg
