// The parent's side of the measuring process (docs/engine.md, "The measuring process"): it
// forks the child before the key is loaded, reads its newline-framed JSON messages strictly
// and reaps it; start_measuring chooses that or the measuring side in this process.
#include "run/isolate.hpp"

#include "base/json_reader.hpp"
#include "base/process.hpp"
#include "prereg/error.hpp"
#include "run/measuring_child.hpp"
#include "run/raw_json.hpp"

#include <fmt/format.h>

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
    const json msg = next_message(nullptr, "plan");
    const json_node p = child_node(msg.at("plan"), "plan");
    measuring_plan out;
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
    return out;
  }

  raw_run measure(progress_sink &progress) override {
    if (!write_all(m_to_child.get(), "g"))
      throw io_error(fmt::format("the measuring process (pid {}) is gone before measuring", m_pid));
    const json msg = next_message(&progress, "raw");
    return raw_from_json(msg.at("raw"), m_cells);
  }

private:
  /// The next message that is not progress; progress goes to `progress`. A signal while
  /// waiting is handed to `progress` (which throws for an interrupt).
  json next_message(progress_sink *progress, const char *want) {
    std::size_t done = 0, total = 0;
    const auto interrupted = [&] {
      if (progress != nullptr)
        progress->cell_done(done, total);
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
      if (msg.contains("phase")) {
        if (progress != nullptr)
          progress->phase(child_node(msg["phase"], "phase").str());
        continue;
      }
      if (msg.contains("done")) {
        done = strict_count(child_node(msg["done"], "done"));
        total = strict_count(child_node(child_node(msg, "message")["total"].value(), "total"));
        if (progress != nullptr)
          progress->cell_done(done, total);
        continue;
      }
      if (!msg.contains(want))
        bad_result("message", fmt::format("is not the {} expected", want));
      return msg;
    }
  }

  /// Waits for the child that closed its pipe and says how it ended.
  std::string reap() {
    const wait_status st = wait_for(m_pid);
    const std::string how = st.reaped ? describe_status(st) : "vanished";
    m_pid = -1;
    return how + "; the run failed";
  }

  pid_t m_pid = -1;
  unique_fd m_from_child;
  unique_fd m_to_child;
  std::unique_ptr<line_reader> m_reader;
  std::vector<cell_key> m_cells;
};

} // namespace

std::unique_ptr<measuring_side> start_measuring(const run_options &o, const protocol &proto,
                                                std::uint64_t seed) {
  if (!o.make_device)
    throw std::logic_error("run_options.make_device is not set");
  if (!o.resolve_arm)
    throw std::logic_error("run_options.resolve_arm is not set");
  if (o.isolate)
    return std::make_unique<forked>(o, proto, seed);
  return detail::measure_in_process(o, proto, seed);
}

} // namespace prereg
