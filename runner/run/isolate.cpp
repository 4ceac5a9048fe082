// The parent's side of the measuring process (docs/engine.md, "The measuring process"): it
// forks the child (and the spares the watchdog may need) before the key is loaded, reads the
// child's newline-framed JSON messages strictly over a channel that names each byte's sender,
// enforces the watchdog's limit on every call of arm code and the parent's own bounds
// (run/parent_bound.hpp), and reaps the child;
// start_measuring chooses that or the measuring side in this process.
#include "run/isolate.hpp"

#include "base/json_reader.hpp"
#include "base/process.hpp"
#include "crypto/keyring.hpp"
#include "model/report_model.hpp"
#include "prereg/error.hpp"
#include "run/channel.hpp"
#include "run/measuring_child.hpp"
#include "run/measuring_process.hpp"
#include "run/parent_bound.hpp"
#include "run/progress.hpp"
#include "run/raw_json.hpp"
#include "run/sandbox.hpp"
#include "run/watchdog.hpp"

#include <fmt/format.h>

#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

namespace prereg {
namespace {

using detail::bad_result;
using detail::child_node;
using detail::strict_count;

/// A cell of the child's plan (checked against the protocol again in raw_from_json).
cell_key plan_cell(const json_node &c) {
  cell_key k;
  k.arm = c["arm"].str();
  k.pass = c["pass"].str() == "fwd" ? pass_kind::fwd : pass_kind::fwd_bwd;
  if (c.has("shape")) {
    if (const std::string why = read_shape_json(c.value(), true, k); !why.empty())
      c.fail(why);
    return k;
  }
  k.rows = static_cast<std::int64_t>(strict_count(c["rows"]));
  k.cols = static_cast<std::int64_t>(strict_count(c["cols"]));
  return k;
}

/// One line from the child, parsed: an object with at least one member.
json parse_message(const std::string &line) {
  json msg;
  try {
    msg = json::parse(line);
  } catch (const std::exception &) {
    bad_result("message", "is not JSON");
  }
  if (!msg.is_object() || msg.size() < 1)
    bad_result("message", "is not an object");
  return msg;
}

/// The sandbox's first line: {layers, reason, probes} (run/sandbox.hpp).
report_isolation read_isolation(const json &j) {
  return detail::read_isolation_message(child_node(j, "isolation"));
}

/// The child's plan message, read strictly.
measuring_plan read_plan(const json &j) {
  measuring_plan out;
  const json_node p = child_node(j, "plan");
  out.environment = p["environment"].object().value();
  const json_node cells = p["cells"];
  const std::size_t n = cells.array_size();
  for (std::size_t i = 0; i < n; ++i)
    out.cells.push_back(plan_cell(cells.at(i)));
  const json_node skipped = p["skipped"];
  (void)skipped.array_size();
  for (const auto &d : skipped.value())
    out.skipped.push_back(d);
  if (p.has("scratch")) {
    const json_node s = p["scratch"];
    out.scratch = report_scratch{strict_count(s["bytes"]), {}, s["reason"].str()};
    const json_node folders = s["folders"];
    for (std::size_t i = 0; i < folders.array_size(); ++i)
      out.scratch->folders.push_back(folders.at(i).str());
  }
  return out;
}

class forked final : public measuring_side {
public:
  forked(const run_options &o, const protocol &proto, std::uint64_t seed)
      : m_proto(proto), m_watchdog(proto), m_spares(detail::watchdog::spares_for(proto)),
        m_silence_s(detail::silence_limit_s(proto.measurement.call_timeout())),
        m_calls(detail::calls_bound(proto)) {
    m_processes = detail::measuring_process::fork_all(o, proto, seed, 1 + m_spares);
    // From here on no other process of this user may read this one's memory, environment or
    // descriptors through /proc or ptrace: the key is loaded only after this (docs/engine.md).
    m_not_dumpable = ::prctl(PR_SET_DUMPABLE, 0) == 0;
    m_bound.emplace(m_silence_s, m_calls);
    m_processes.front()->start({});
  }
  forked(const forked &) = delete;
  forked &operator=(const forked &) = delete;

  measuring_plan plan() override {
    bring_up(nullptr);
    measuring_plan out = m_first;
    detail::finish_isolation(*out.isolation, m_not_dumpable);
    return out;
  }

  void offer_ceiling(json entry) override { m_ceiling = std::move(entry); }

  raw_run measure(progress_sink &progress) override {
    for (;;) {
      try {
        return measure_once(progress);
      } catch (const detail::stuck_call &s) {
        restart(s, &progress);
        bring_up(&progress);
      }
    }
  }

  std::optional<report_watchdog> watchdog() const override { return m_watchdog.record(); }

private:
  detail::measuring_process &active() { return *m_processes[m_active]; }

  /// The active process's isolation, plan and loaded messages, restarting it (and the next)
  /// while a call of arm code hangs; a restarted process must plan what the first planned.
  void bring_up(progress_sink *progress) {
    for (;;) {
      try {
        measuring_plan p;
        p.isolation = read_isolation(next_message(nullptr, "isolation").at("isolation"));
        const json msg = next_message(nullptr, "plan");
        const measuring_plan planned = read_plan(msg.at("plan"));
        p.environment = planned.environment;
        p.cells = planned.cells;
        p.skipped = planned.skipped;
        p.scratch = planned.scratch;
        if (m_have_first)
          same_plan(p);
        else
          m_first = p;
        m_have_first = true;
        m_cells = p.cells;
        m_probe = p.environment;
        (void)next_message(nullptr, "loaded"); // the outside arms are loaded: their code runs now
        return;
      } catch (const detail::stuck_call &s) {
        restart(s, progress);
      }
    }
  }

  /// A restarted process's plan: the same cells, skips and device as the first one's.
  void same_plan(const measuring_plan &p) const {
    if (p.cells != m_first.cells || p.skipped != m_first.skipped ||
        p.environment.value("device_name", "") != m_first.environment.value("device_name", ""))
      throw io_error("the fresh measuring process the watchdog started planned differently from "
                     "the first one; the run failed");
  }

  raw_run measure_once(progress_sink &progress) {
    // The go byte: "g", or "c" and the offered ceiling's entry on one line (measuring_child.cpp).
    const std::string go = m_ceiling.is_object() ? "c" + m_ceiling.dump() + "\n" : "g";
    if (!active().send(go))
      throw io_error(
          fmt::format("the measuring process (pid {}) is gone before measuring", active().pid()));
    // The child waited for the go byte while this process went on (the ledger, the store's
    // lock): its silence counts from now.
    m_bound->heard();
    active().set_limit(detail::message_limit(m_cells.size(), m_proto.measurement.repetitions));
    const json msg = next_message(&progress, "raw");
    if (m_phase != "timing" || m_done != m_total)
      bad_result("raw", "arrived before the timing phase finished");
    raw_run raw = raw_from_json(msg.at("raw"), m_cells);
    if (raw.cells.size() > m_total)
      bad_result("raw.cells", "are more than the cells the timing phase counted");
    // The probe was sent before any outside code ran; only other_processes may grow since
    // (the device's finish_environment adds what it saw after the run).
    for (const auto &[k, v] : m_probe.items())
      if (!raw.environment.contains(k) || (raw.environment[k] != v && k != "other_processes"))
        bad_result("raw.environment." + k, "differs from the device's probe in the plan");
    m_watchdog.check_excluded(raw);
    active().expect_clean_end();
    return raw;
  }

  /// A call that did not return: the process is killed and the run goes on in the next spare
  /// without the arm (docs/engine.md, "The watchdog"); throws when none is left.
  void restart(const detail::stuck_call &s, progress_sink *progress) {
    active().kill();
    const std::string arm = m_watchdog.exclude(s, m_cells, m_spares_used < m_spares);
    ++m_spares_used;
    ++m_active;
    notice(escape_control(m_watchdog.notice(arm)));
    m_phase.clear();
    m_done = m_total = 0;
    if (progress != nullptr)
      progress->phase("restart");
    m_bound.emplace(m_silence_s, m_calls);
    m_phases = 0;
    active().start(m_watchdog.excluded());
  }

  /// What the reader checks between its waits: an interrupt, a call past the watchdog's limit.
  void between(progress_sink *progress) {
    if (progress != nullptr)
      progress->tick();
    else
      detail::throw_if_signalled();
    m_watchdog.check(active().page());
    if (const std::string why = m_bound->check(active().page()); !why.empty()) {
      const pid_t pid = active().pid();
      active().kill();
      throw io_error(fmt::format("the measuring process (pid {}) {}; it was killed and the run "
                                 "failed (docs/engine.md, \"The parent's bounds\")",
                                 pid, why));
    }
  }

  /// The next message that is not progress; progress goes to `progress`.
  json next_message(progress_sink *progress, const char *want) {
    for (;;) {
      const auto line = active().next_line([&] { between(progress); });
      if (line)
        m_bound->heard();
      if (!line) {
        const pid_t pid = active().pid();
        const std::string how = active().reap();
        throw io_error(fmt::format("the measuring process (pid {}) {}; the run failed", pid, how));
      }
      const json msg = parse_message(*line);
      if (msg.contains("error"))
        detail::rethrow_error_message(msg);
      if (progress == nullptr && (msg.contains("phase") || msg.contains("done")))
        bad_result("message", fmt::format("is progress before the {} expected", want));
      if (msg.contains("phase") || msg.contains("done")) {
        take_progress(msg, *progress);
        continue;
      }
      if (!msg.contains(want) || msg.size() != 1)
        bad_result("message", fmt::format("is not the {} expected", want));
      return msg;
    }
  }

  /// A {phase} or {done, total} message, checked and shown.
  void take_progress(const json &msg, progress_sink &progress) {
    if (msg.contains("phase")) {
      // Progress is bounded, so that messages cannot keep a process past the parent's silence
      // limit for ever: a few phases, counts up to the cells planned.
      if (++m_phases > max_phases)
        bad_result("phase", fmt::format("is more than the {} phases a run has", max_phases));
      m_phase = child_node(msg["phase"], "phase").str();
      m_done = m_total = 0;
      progress.phase(m_phase);
      return;
    }
    const std::size_t done = strict_count(child_node(msg["done"], "done"));
    const std::size_t total =
        strict_count(child_node(child_node(msg, "message")["total"].value(), "total"));
    if (done != m_done + 1 || done > total || total > m_cells.size() ||
        (m_done != 0 && total != m_total))
      bad_result("done", "is not the next count of finished cells");
    m_done = done;
    m_total = total;
    progress.cell_done(m_done, m_total);
  }

  const protocol &m_proto;
  detail::watchdog m_watchdog;
  std::size_t m_spares;
  std::vector<std::unique_ptr<detail::measuring_process>> m_processes; ///< [0] first, then spares
  std::size_t m_active = 0, m_spares_used = 0;
  double m_silence_s;                          ///< the parent's silence limit [s]
  std::size_t m_calls;                         ///< the most calls a process may announce
  std::optional<detail::parent_bound> m_bound; ///< the active process's bounds
  static constexpr std::size_t max_phases = 64;
  std::size_t m_phases = 0; ///< the active process's phase messages
  bool m_not_dumpable = false;
  bool m_have_first = false;           ///< m_first holds the first process's plan
  measuring_plan m_first;              ///< the first process's plan
  json m_probe;                        ///< the plan's environment, sent before outside code ran
  std::string m_phase;                 ///< the last progress phase
  std::size_t m_done = 0, m_total = 0; ///< its progress
  std::vector<cell_key> m_cells;
  json m_ceiling; ///< the copy ceiling offered for reuse, or null
};

/// A missing key file is created by a short-lived child, so that it exists (and is masked) when
/// the measuring process starts while this process's memory never held it; a failure is left
/// for the parent's own load to report.
void create_key_apart(const std::filesystem::path &key_path) {
  std::error_code ec;
  if (key_path.empty() || std::filesystem::exists(key_path, ec))
    return;
  const pid_t pid = fork_child([&] {
    try {
      (void)load_or_create_key(key_path);
    } catch (...) {
      std::_Exit(1);
    }
    std::_Exit(0);
  });
  (void)wait_for(pid);
}

} // namespace

std::unique_ptr<measuring_side> start_measuring(const run_options &o, const protocol &proto,
                                                std::uint64_t seed) {
  if (!o.make_device)
    throw std::logic_error("run_options.make_device is not set");
  if (!o.resolve_arm)
    throw std::logic_error("run_options.resolve_arm is not set");
  if (o.isolate) {
    create_key_apart(o.key_path);
    return std::make_unique<forked>(o, proto, seed);
  }
  return detail::measure_in_process(o, proto, seed);
}

} // namespace prereg
