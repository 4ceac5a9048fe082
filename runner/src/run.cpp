// The run engine: the only place that ties store, backend, analysis, report and ledger.
#include "prereg/run.hpp"

#include "prereg/error.hpp"
#include "prereg/fs.hpp"
#include "prereg/isolate.hpp"
#include "prereg/keyring.hpp"
#include "prereg/ledger.hpp"
#include "prereg/measure.hpp"
#include "prereg/operation.hpp"
#include "prereg/registry.hpp"
#include "prereg/report.hpp"
#include "prereg/report_text.hpp"
#include "prereg/rng.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>

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

/// Progress on stderr (cells done/total, elapsed, ETA) when stderr is a terminal.
class terminal_progress final : public progress_sink {
public:
  explicit terminal_progress(bool enabled) : m_enabled(enabled), m_start(clock::now()) {}
  ~terminal_progress() override {
    if (m_enabled && m_drawn) fmt::print(stderr, "\n");
  }
  void phase(std::string_view name) override {
    throw_if_signalled();
    m_phase = name;
    draw(0, 0);
  }
  void cell_done(std::size_t done, std::size_t total) override {
    throw_if_signalled();
    draw(done, total);
  }

private:
  using clock = std::chrono::steady_clock;
  void draw(std::size_t done, std::size_t total) {
    if (!m_enabled) return;
    const double elapsed = std::chrono::duration<double>(clock::now() - m_start).count();
    std::string eta = "?";
    if (done > 0 && total >= done)
      eta = fmt::format("{:.0f}s", elapsed / static_cast<double>(done) *
                                       static_cast<double>(total - done));
    fmt::print(stderr, "\r\033[K[{}] cells {}/{}  elapsed {:.0f}s  ETA {}", m_phase, done, total,
               elapsed, eta);
    m_drawn = true;
  }
  bool m_enabled;
  bool m_drawn = false;
  std::string m_phase = "start";
  clock::time_point m_start;
};

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string utc_stamp(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

bool pid_alive(std::int64_t pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

json deviation(std::string kind, std::string message, json extra = json::object()) {
  extra["kind"] = std::move(kind);
  extra["message"] = std::move(message);
  return extra;
}

json cell_json(const cell_key &c) {
  return {{"arm", c.arm}, {"pass", std::string(to_string(c.pass))}, {"rows", c.rows},
          {"cols", c.cols}};
}

} // namespace

std::vector<cell_key> all_cells(const protocol &p) {
  std::vector<cell_key> cells;
  for (const auto &arm : p.arms)
    for (const auto pass : p.passes)
      for (const auto rows : p.rows)
        for (const auto cols : p.cols) cells.push_back({arm.id, pass, rows, cols});
  return cells;
}

std::size_t reap_vanished_runs(const store &s, const signing_key &key) {
  file_lock lock(s.lock_path());
  ledger l = s.get_ledger();
  const auto entries = l.entries();
  const std::string host = host_name();
  std::size_t reaped = 0;
  for (const auto &start : entries) {
    if (start.value("event", "") != ledger_event::run_start) continue;
    const std::string run_id = start.value("run_id", "");
    const bool ended = std::any_of(entries.begin(), entries.end(), [&](const json &e) {
      const auto ev = e.value("event", "");
      return (ev == ledger_event::run_complete || ev == ledger_event::run_aborted) &&
             e.value("run_id", "") == run_id;
    });
    if (ended || start.value("host", "") != host || pid_alive(start.value("pid", 0))) continue;
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

fs::path run_protocol(const run_options &o) {
  const store s(o.store_root);
  // 1. Integrity first: nothing touches a device before this passes.
  const frozen_protocol fp = resolve_for_run(s, o.target);
  const protocol &proto = fp.proto;
  // The measuring side (device, plan, measurement) starts before the key is loaded: with
  // o.isolate it is a forked child that never holds the key (isolate.hpp).
  const std::unique_ptr<measuring_side> side =
      start_measuring(o, proto, seed_from_hash(fp.hash));
  const signing_key key = load_or_create_key(o.key_path);
  s.add_key(key.public_part());
  reap_vanished_runs(s, key);

  // 2. The environment must be able to serve (exit 5 before the run starts; no ledger entry).
  // 3. The plan: every cell that can run; the rest become deviations.
  const measuring_plan planned = side->plan();
  run_meta meta;
  meta.device_ordinal = o.device_ordinal;
  meta.deviations = planned.skipped;
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
      if (e.value("protocol_hash", "") != fp.hash) continue;
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
    std::time_t t = std::time(nullptr);
    const auto taken = [&](const std::string &id) {
      return fs::exists(o.out_dir / proto.id / id) ||
             std::any_of(entries.begin(), entries.end(),
                         [&](const json &e) { return e.value("run_id", "") == id; });
    };
    do {
      run_id = utc_stamp(t++) + "-" + fp.hash.substr(0, 12);
    } while (taken(run_id));
    meta.run_id = run_id;
    meta.attempt = attempt;
    meta.started_at = utc_now_rfc3339();
    l.append({{"event", ledger_event::run_start},
              {"protocol_hash", fp.hash},
              {"run_id", run_id},
              {"attempt", attempt},
              {"pid", static_cast<std::int64_t>(::getpid())},
              {"host", host_name()},
              {"device_name", device_name},
              {"started_at", meta.started_at}},
             key);
  }

  const fs::path final_dir = o.out_dir / proto.id / run_id;
  const fs::path temp_dir = o.out_dir / proto.id / ("." + run_id + ".partial");
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
            {{"cell", cell_json(c.key)}}));
    for (const auto &c : raw.cells)
      if (c.error)
        meta.deviations.push_back(deviation(
            "arm-error", fmt::format("arm {} failed during the run: {}", c.key.arm, *c.error),
            {{"cell", cell_json(c.key)}}));

    const report_document report = build_report_document(fp, raw, meta);
    const std::string payload = canonical_json(to_json(report));
    fs::remove_all(temp_dir);
    write_file_atomic(temp_dir / "report.json", payload);
    write_file_atomic(temp_dir / "report.dsse.json", make_envelope(payload, key));
    write_file_atomic(temp_dir / "report.md", render_markdown(report));
    write_file_atomic(temp_dir / "report.html", render_html(report));
    throw_if_signalled();
    fs::rename(temp_dir, final_dir);
    published = true;
    file_lock lock(s.lock_path());
    s.get_ledger().append({{"event", ledger_event::run_complete},
                           {"protocol_hash", fp.hash},
                           {"run_id", run_id},
                           {"attempt", meta.attempt},
                           {"report_sha256", sha256_hex(payload)}},
                          key);
  } catch (const std::exception &e) {
    std::error_code ec;
    fs::remove_all(temp_dir, ec);
    if (published) fs::remove_all(final_dir, ec);
    file_lock lock(s.lock_path());
    s.get_ledger().append({{"event", ledger_event::run_aborted},
                           {"protocol_hash", fp.hash},
                           {"run_id", run_id},
                           {"attempt", meta.attempt},
                           {"reason", e.what()}},
                          key);
    throw;
  }
  return final_dir;
}

} // namespace prereg
