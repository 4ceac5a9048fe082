// The parent's side of the measuring process (docs/engine.md, "The measuring process"): it
// forks the child before the key is loaded, reads its newline-framed JSON messages strictly
// and reaps it; start_measuring chooses that or the measuring side in this process.
#include "run/isolate.hpp"

#include "base/json_reader.hpp"
#include "base/process.hpp"
#include "crypto/keyring.hpp"
#include "model/report_model.hpp"
#include "prereg/error.hpp"
#include "run/measuring_child.hpp"
#include "run/raw_json.hpp"
#include "run/sandbox.hpp"

#include <fmt/format.h>

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

namespace prereg {
namespace {

using detail::bad_result;
using detail::child_node;
using detail::strict_count;

/// Reads newline-framed messages from a pipe.
class line_reader {
public:
  explicit line_reader(int fd) : m_fd(fd) {}
  /// The next line; nullopt at end of file. `interrupted` is called when a signal interrupts
  /// the wait (it may throw).
  template <class F> std::optional<std::string> next(F &&interrupted) {
    for (;;) {
      if (const auto nl = m_buffer.find('\n'); nl != std::string::npos) {
        std::string line = m_buffer.substr(0, nl);
        m_buffer.erase(0, nl + 1);
        return line;
      }
      char chunk[65536];
      const ssize_t n = ::read(m_fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) {
        interrupted();
        continue;
      }
      if (n < 0)
        throw io_error(fmt::format("reading from the measuring process: {}", std::strerror(errno)));
      if (n == 0)
        return std::nullopt;
      m_buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }

  /// Whether bytes without a line end are left.
  [[nodiscard]] bool pending() const { return !m_buffer.empty(); }

private:
  int m_fd;
  std::string m_buffer;
};

std::string describe_status(const wait_status &st) {
  if (st.signalled()) {
    const int sig = st.signal();
    const char *name = ::strsignal(sig);
    return fmt::format("was killed by signal {} ({})", sig, name != nullptr ? name : "?");
  }
  if (st.exited())
    return fmt::format("exited with status {} before sending its result", st.exit_code());
  return "ended abnormally";
}

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

class forked final : public measuring_side {
public:
  forked(const run_options &o, const protocol &proto, std::uint64_t seed) {
    pipe_ends up = open_pipe(on_exec::close);
    pipe_ends down = open_pipe(on_exec::close);
    const pid_t parent = ::getpid();
    m_pid = fork_child([&] {
      up.read.reset();
      down.write.reset();
      detail::run_measuring_child(o, proto, seed, parent, up.write.get(), down.read.get());
    });
    // From here on no other process of this user may read this one's memory, environment or
    // descriptors through /proc or ptrace: the key is loaded only after this (docs/engine.md).
    m_not_dumpable = ::prctl(PR_SET_DUMPABLE, 0) == 0;
    up.write.reset();
    down.read.reset();
    m_from_child = std::move(up.read);
    m_to_child = std::move(down.write);
    m_reader = std::make_unique<line_reader>(m_from_child.get());
  }
  ~forked() override {
    m_to_child.reset();
    m_from_child.reset();
    if (m_pid > 0)
      kill_and_wait(m_pid);
  }
  forked(const forked &) = delete;
  forked &operator=(const forked &) = delete;

  measuring_plan plan() override {
    measuring_plan out;
    out.isolation = read_isolation(next_message(nullptr, "isolation").at("isolation"));
    detail::finish_isolation(*out.isolation, m_not_dumpable);
    const json msg = next_message(nullptr, "plan");
    const json_node p = child_node(msg.at("plan"), "plan");
    out.environment = p["environment"].object().value();
    const json_node cells = p["cells"];
    const std::size_t n = cells.array_size();
    for (std::size_t i = 0; i < n; ++i)
      out.cells.push_back(plan_cell(cells.at(i)));
    const json_node skipped = p["skipped"];
    (void)skipped.array_size();
    for (const auto &d : skipped.value())
      out.skipped.push_back(d);
    m_cells = out.cells;
    m_probe = out.environment;
    (void)next_message(nullptr, "loaded"); // the outside arms are loaded: their code runs now
    return out;
  }

  void offer_ceiling(json entry) override { m_ceiling = std::move(entry); }

  raw_run measure(progress_sink &progress) override {
    // The go byte: "g", or "c" and the offered ceiling's entry on one line (measuring_child.cpp).
    const std::string go = m_ceiling.is_object() ? "c" + m_ceiling.dump() + "\n" : "g";
    if (!write_all(m_to_child.get(), go))
      throw io_error(fmt::format("the measuring process (pid {}) is gone before measuring", m_pid));
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
    expect_clean_end();
    return raw;
  }

private:
  /// The next message that is not progress; progress goes to `progress`. A signal while
  /// waiting is handed to `progress` (which throws for an interrupt).
  json next_message(progress_sink *progress, const char *want) {
    const auto interrupted = [&] {
      if (progress != nullptr)
        progress->cell_done(m_done, m_total);
    };
    for (;;) {
      const auto line = m_reader->next(interrupted);
      if (!line) {
        const pid_t pid = m_pid; // before reap() forgets it
        const std::string how = reap();
        throw io_error(fmt::format("the measuring process (pid {}) {}", pid, how));
      }
      const json msg = parse_message(*line);
      if (msg.contains("error"))
        detail::rethrow_error_message(msg);
      if (progress == nullptr && (msg.contains("phase") || msg.contains("done")))
        bad_result("message", fmt::format("is progress before the {} expected", want));
      if (msg.contains("phase")) {
        m_phase = child_node(msg["phase"], "phase").str();
        m_done = m_total = 0;
        if (progress != nullptr)
          progress->phase(m_phase);
        continue;
      }
      if (msg.contains("done")) {
        const std::size_t done = strict_count(child_node(msg["done"], "done"));
        const std::size_t total =
            strict_count(child_node(child_node(msg, "message")["total"].value(), "total"));
        if (done != m_done + 1 || done > total || (m_done != 0 && total != m_total))
          bad_result("done", "is not the next count of finished cells");
        m_done = done;
        m_total = total;
        if (progress != nullptr)
          progress->cell_done(m_done, m_total);
        continue;
      }
      if (!msg.contains(want) || msg.size() != 1)
        bad_result("message", fmt::format("is not the {} expected", want));
      return msg;
    }
  }

  /// After the result: nothing more on the pipe, and the child ends with status 0. A second
  /// result, bytes after it or a child that ends otherwise fails the run (docs/engine.md).
  void expect_clean_end() {
    const auto extra = m_reader->next([] {});
    if (extra)
      bad_result("message", "follows the result (one result per measuring process)");
    if (m_reader->pending())
      bad_result("message", "follows the result without a line end");
    const pid_t pid = m_pid;
    const wait_status st = wait_for(m_pid);
    m_pid = -1;
    if (!st.reaped || !st.exited() || st.exit_code() != 0)
      throw io_error(
          fmt::format("the measuring process (pid {}) {} after its result; the run failed", pid,
                      st.reaped ? describe_status(st) : "vanished"));
  }

  /// Waits for the child that closed its pipe and says how it ended.
  std::string reap() {
    const wait_status st = wait_for(m_pid);
    const std::string how = st.reaped ? describe_status(st) : "vanished";
    m_pid = -1;
    return how + "; the run failed";
  }

  pid_t m_pid = -1;
  bool m_not_dumpable = false;
  json m_probe;                        ///< the plan's environment, sent before outside code ran
  std::string m_phase;                 ///< the last progress phase
  std::size_t m_done = 0, m_total = 0; ///< its progress
  unique_fd m_from_child;
  unique_fd m_to_child;
  std::unique_ptr<line_reader> m_reader;
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
