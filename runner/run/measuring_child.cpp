// The measuring side that runs the engine: in this process, or in the forked child that sends
// its plan, progress and raw facts (or its error) to the parent, one JSON line each.
#include "run/measuring_child.hpp"

#include "arms/outside_common.hpp"
#include "base/process.hpp"
#include "base/sched.hpp"
#include "crypto/keyring.hpp"
#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "run/channel.hpp"
#include "run/raw_json.hpp"
#include "run/sandbox.hpp"
#include "run/scratch.hpp"
#include "spec/operation.hpp"
#include "spec/registry.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string>

namespace prereg::detail {
namespace {

class in_process final : public measuring_side {
public:
  in_process(const run_options &o, const protocol &proto, std::uint64_t seed)
      : m_options(o), m_proto(proto) {
    m_plan.proto = &m_proto;
    m_plan.seed = seed;
    m_plan.load_outside = o.load_outside;
  }
  /// The watchdog's exclusions and the scheduling record (the measuring process's).
  void set_measuring(std::map<std::string, std::string> excluded) {
    m_plan.excluded = std::move(excluded);
    m_plan.record_sched = true;
  }
  measuring_plan plan() override {
    m_device = m_options.make_device(m_proto.device, m_options.device_ordinal);
    measuring_plan out;
    out.environment = m_device->probe();
    m_environment = out.environment;
    const operation_desc &op = operation_named(m_proto.op);
    for (const auto &c :
         m_options.shard ? shard_cells(m_proto, *m_options.shard) : all_cells(m_proto)) {
      const arm_spec &spec = *find_arm_spec(m_proto, c.arm);
      if (spec.outside()) { // known once loaded (by the engine, here): the engine checks it
        out.cells.push_back(c);
        continue;
      }
      const arm_info *info = find_arm(m_proto.device, spec.kernel);
      auto why = cannot_run(*info, c.pass, c.rows, c.cols, m_proto.type);
      if (!why)
        why = device_cannot_run(*m_device, op, *info, spec, c.pass, c.rows, c.cols, m_proto.type);
      if (why)
        out.skipped.push_back({{"kind", "cell-skipped"}, {"message", *why}, {"cell", to_json(c)}});
      else
        out.cells.push_back(c);
    }
    m_plan.cells = out.cells;
    if (!m_defer_preload)
      preload_outside();
    return out;
  }
  /// The measuring child sends its plan before any outside code is loaded, then loads it here.
  void defer_preload() { m_defer_preload = true; }
  void offer_ceiling(json entry) override { m_plan.reuse_ceiling = std::move(entry); }
  raw_run measure(progress_sink &progress) override {
    raw_run raw = prereg::measure(*m_device, m_environment, m_plan, m_options.resolve_arm, progress,
                                  m_options.hooks);
    attach_regions(raw);
    raw.arm_log = outside::take_arm_log();
    return raw;
  }
  /// Loads the planned cells' outside arms now, before the run starts: a failure of the
  /// environment (no usable Python, a module the file imports not installed) ends the run here,
  /// exit 5 with nothing recorded; a failure of the arm's own code is kept and thrown when
  /// measuring starts, after the run-start, so that it is a recorded, aborted attempt.
  void preload_outside() {
    if (!m_options.load_outside)
      return;
    for (const auto &spec : m_proto.arms) {
      const bool planned = std::any_of(m_plan.cells.begin(), m_plan.cells.end(),
                                       [&](const cell_key &c) { return c.arm == spec.id; });
      if (!spec.outside() || !planned || m_plan.excluded.contains(spec.id))
        continue;
      try {
        const watched_call watch(static_cast<int>(&spec - m_proto.arms.data()), -1,
                                 static_cast<int>(call_phase::load));
        m_loaded.emplace(spec.id, m_options.load_outside(spec));
      } catch (const error &e) {
        if (e.code() == exit_code::environment)
          throw;
        m_load_failure = std::current_exception();
        break;
      }
    }
    m_plan.load_outside = [this](const arm_spec &spec) {
      if (m_load_failure)
        std::rethrow_exception(m_load_failure);
      const auto it = m_loaded.find(spec.id);
      return it != m_loaded.end() ? it->second : m_options.load_outside(spec);
    };
  }

private:
  const run_options &m_options;
  const protocol &m_proto;
  bool m_defer_preload = false;
  std::map<std::string, std::shared_ptr<outside_arm>> m_loaded;
  std::exception_ptr m_load_failure;
  run_plan m_plan;
  std::unique_ptr<device> m_device;
  json m_environment;
};

/// Progress in the child: each event becomes one line to the parent.
class piped_progress final : public progress_sink {
public:
  explicit piped_progress(int fd) : m_fd(fd) {}
  void phase(std::string_view name) override { send({{"phase", std::string(name)}}); }
  void cell_done(std::size_t done, std::size_t total) override {
    send({{"done", done}, {"total", total}});
  }
  /// One line; text that is not UTF-8 (an arm's message) is sent with U+FFFD in its place.
  void send(const json &j) const {
    if (!send_all(m_fd, j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"))
      std::_Exit(1); // the parent is gone: nothing to report to
  }

private:
  int m_fd;
};

/// What the sandbox hides and protects for a run with options `o`: the key, the store, the
/// reports folder and the project (the store's folder: protocols, kernels, outside files), and
/// prereg's caches. `prereg try` names no key and no store: the ones a run from here would use.
sandbox_paths paths_of(const run_options &o) {
  return sandbox_paths_for(o.key_path.empty() ? default_key_path("") : o.key_path,
                           o.store_root.empty() ? store::default_root("") : o.store_root,
                           o.out_dir);
}

/// The parent's go (isolate.cpp): "g", or "c" and a copy ceiling's entry on one line (at most
/// 1 MiB) offered for reuse; nullopt when the pipe closed first (the parent decided not to
/// measure). The entry, or null for a plain "g".
std::optional<json> read_go(int fd) {
  const auto byte = [&]() -> int {
    char c = 0;
    ssize_t n;
    while ((n = ::read(fd, &c, 1)) < 0 && errno == EINTR) {
    }
    return n == 1 ? static_cast<unsigned char>(c) : -1;
  };
  const int go = byte();
  if (go == 'g')
    return json();
  if (go != 'c')
    return std::nullopt;
  std::string line;
  for (int c = byte(); c != '\n'; c = byte()) {
    if (c < 0 || line.size() > (std::size_t{1} << 20))
      return std::nullopt;
    line.push_back(static_cast<char>(c));
  }
  try {
    return json::parse(line);
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

/// The parent's start message ({start: {exclude: {arm id: reason}}}, one line of at most 1 MiB):
/// the arms the watchdog left out. End of file: the parent needs no such process.
std::map<std::string, std::string> read_start(int channel) {
  std::string line;
  char c = 0;
  for (;;) {
    const ssize_t n = ::read(channel, &c, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n != 1 || line.size() > (std::size_t{1} << 20))
      std::_Exit(0);
    if (c == '\n')
      break;
    line += c;
  }
  std::map<std::string, std::string> excluded;
  try {
    const json msg = json::parse(line); // named: the items() below refer into it
    for (const auto &[arm, why] : msg.at("start").at("exclude").items())
      excluded[arm] = why.get<std::string>();
  } catch (const std::exception &) {
    std::_Exit(1);
  }
  return excluded;
}

[[noreturn]] void child_main(const run_options &o, const protocol &proto, std::uint64_t seed,
                             pid_t parent, int channel,
                             std::map<std::string, std::string> excluded) {
  piped_progress out(channel);
  // The first line, before any outside code is loaded: the walls this process stands in and
  // what their probes found.
  const isolation_facts facts = enter_sandbox(paths_of(o), {channel}, parent);
  const bool sandboxed = std::find(facts.layers.begin(), facts.layers.end(), "seccomp") !=
                         facts.layers.end(); // a filter can be added only where one stands
  out.send({{"isolation", facts.to_json()}});
  if (const std::string why = scratch_refusal(); !why.empty()) {
    out.send(error_message(io_error(why)));
    std::_Exit(0);
  }
  try {
    in_process side(o, proto, seed);
    side.set_measuring(std::move(excluded));
    side.defer_preload();
    const measuring_plan p = side.plan();
    json cells = json::array();
    for (const auto &c : p.cells)
      cells.push_back(to_json(c));
    json scratch = scratch_of_this_process().to_json();
    if (scratch_of_this_process().folders.empty() && scratch_of_this_process().reason.empty())
      scratch["reason"] = "no mount namespace of its own";
    out.send({{"plan",
               {{"environment", p.environment},
                {"cells", cells},
                {"skipped", p.skipped},
                {"scratch", std::move(scratch)}}}});
    if (proto.device == "cpu" && sandboxed) { // outputs are host memory: no fault handlers
      outside::install_crash_guard();         // prereg's own, first
      if (const std::string why = ban_fault_handlers(); !why.empty())
        throw io_error(fmt::format("the sandbox could not refuse fault handlers: {}", why));
    }
    side.preload_outside(); // outside code runs from here on
    out.send({{"loaded", true}});
    const auto go = read_go(channel);
    if (!go)
      std::_Exit(0); // the parent decided not to measure
    if (go->is_object())
      side.offer_ceiling(*go);
    const raw_run raw = side.measure(out);
    out.send({{"raw", raw_to_json(raw)}});
  } catch (const std::exception &e) {
    out.send(error_message(e));
  }
  std::_Exit(0); // never back into the parent's stack (no destructors, no atexit handlers)
}

} // namespace

json error_message(const std::exception &e) {
  json j = {{"code", 1}, {"message", e.what()}, {"where", ""}};
  if (const auto *pe = dynamic_cast<const error *>(&e)) {
    j["code"] = static_cast<int>(pe->code());
    j["where"] = pe->where();
  }
  return {{"error", j}};
}

void rethrow_error_message(const json &msg) {
  const json &e = msg.at("error");
  const int code = e.value("code", 1);
  const auto kind = code >= 1 && code <= 5 ? static_cast<exit_code>(code) : exit_code::failure;
  throw error(kind, e.value("message", std::string("the measuring process failed")),
              e.value("where", std::string()));
}

std::unique_ptr<measuring_side> measure_in_process(const run_options &o, const protocol &proto,
                                                   std::uint64_t seed) {
  return std::make_unique<in_process>(o, proto, seed);
}

void run_measuring_child(const run_options &o, const protocol &proto, std::uint64_t seed,
                         pid_t parent, int channel, watch_page *page) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL); // dies with the parent
  if (::getppid() != parent)
    std::_Exit(1);
  ::signal(SIGINT, SIG_IGN); // the parent decides what an interrupt means
  ::signal(SIGTERM, SIG_IGN);
  forget_key_variable(); // its bytes in the environment block /proc shows
  std::map<std::string, std::string> excluded = read_start(channel); // a spare waits here
  watch_attach(page); // the watchdog reads which call of arm code runs (docs/engine.md)
  count_continues();  // a stop during a sample is seen (cell_record::sched)
  outside::set_crash_channel(channel); // a crash in an outside arm: one error message up
  child_main(o, proto, seed, parent, channel, std::move(excluded));
}

} // namespace prereg::detail
