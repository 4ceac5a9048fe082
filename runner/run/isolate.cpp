// The measuring side of a run, in this process or in a forked child without the signing key
// (docs/engine.md, "The measuring process"), and the raw facts' JSON that crosses the pipe.
#include "run/isolate.hpp"

#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "spec/operation.hpp"
#include "spec/registry.hpp"

#include "arms/outside_arm.hpp"

#include "arms/outside_common.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace prereg {
namespace {

// --- reading the child's JSON strictly ---------------------------------------------------

[[noreturn]] void bad(const std::string &path, std::string_view what) {
  throw io_error(fmt::format("the measuring process sent an invalid result: {} {}", path, what));
}

const json &member(const json &o, const std::string &path, const char *name) {
  if (!o.is_object())
    bad(path, "is not an object");
  const auto it = o.find(name);
  if (it == o.end())
    bad(path + "." + name, "is missing");
  return *it;
}

double number(const json &j, const std::string &path, bool null_is_nan = false) {
  if (null_is_nan && j.is_null())
    return std::numeric_limits<double>::quiet_NaN();
  if (!j.is_number())
    bad(path, "is not a number");
  return j.get<double>();
}

std::uint64_t count(const json &j, const std::string &path) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0))
    bad(path, "is not a non-negative integer");
  return j.get<std::uint64_t>();
}

std::string text(const json &j, const std::string &path) {
  if (!j.is_string())
    bad(path, "is not a string");
  return j.get<std::string>();
}

std::optional<std::string> optional_text(const json &o, const std::string &path, const char *name) {
  const json &j = member(o, path, name);
  if (j.is_null())
    return std::nullopt;
  return text(j, path + "." + name);
}

cell_key planned_key(const json &j, const std::string &path, const std::vector<cell_key> &cells) {
  cell_key k;
  k.arm = text(member(j, path, "arm"), path + ".arm");
  const std::string pass = text(member(j, path, "pass"), path + ".pass");
  if (pass != "fwd" && pass != "fwd+bwd")
    bad(path + ".pass", "is not a pass");
  k.pass = pass == "fwd" ? pass_kind::fwd : pass_kind::fwd_bwd;
  const json &rows = member(j, path, "rows"), &cols = member(j, path, "cols");
  if (!rows.is_number_integer() || !cols.is_number_integer())
    bad(path, "has a non-integer shape");
  k.rows = rows.get<std::int64_t>();
  k.cols = cols.get<std::int64_t>();
  if (std::find(cells.begin(), cells.end(), k) == cells.end())
    bad(path, "is not a planned cell");
  return k;
}

std::vector<double> numbers(const json &j, const std::string &path) {
  if (!j.is_array())
    bad(path, "is not an array");
  std::vector<double> v;
  for (std::size_t i = 0; i < j.size(); ++i)
    v.push_back(number(j[i], fmt::format("{}[{}]", path, i)));
  return v;
}

// --- the pipe --------------------------------------------------------------------------------

/// Writes all of `s`; false if the other end is gone.
bool write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

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

json error_message(const std::exception &e) {
  json j = {{"code", 1}, {"message", e.what()}, {"where", ""}};
  if (const auto *pe = dynamic_cast<const error *>(&e)) {
    j["code"] = static_cast<int>(pe->code());
    j["where"] = pe->where();
  }
  return {{"error", j}};
}

[[noreturn]] void rethrow(const json &msg) {
  const json &e = msg.at("error");
  const int code = e.value("code", 1);
  const auto kind = code >= 1 && code <= 5 ? static_cast<exit_code>(code) : exit_code::failure;
  throw error(kind, e.value("message", std::string("the measuring process failed")),
              e.value("where", std::string()));
}

// --- this process ----------------------------------------------------------------------------

class in_process final : public measuring_side {
public:
  in_process(const run_options &o, const protocol &proto, std::uint64_t seed)
      : m_options(o), m_proto(proto) {
    m_plan.proto = &m_proto;
    m_plan.seed = seed;
    m_plan.load_outside = o.load_outside;
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
    return out;
  }
  raw_run measure(progress_sink &progress) override {
    raw_run raw = prereg::measure(*m_device, m_environment, m_plan, m_options.resolve_arm, progress,
                                  m_options.hooks);
    attach_regions(raw);
    return raw;
  }

private:
  const run_options &m_options;
  const protocol &m_proto;
  run_plan m_plan;
  std::unique_ptr<device> m_device;
  json m_environment;
};

// --- a forked child ----------------------------------------------------------------------------

/// Progress in the child: each event becomes one line to the parent.
class piped_progress final : public progress_sink {
public:
  explicit piped_progress(int fd) : m_fd(fd) {}
  void phase(std::string_view name) override { send({{"phase", std::string(name)}}); }
  void cell_done(std::size_t done, std::size_t total) override {
    send({{"done", done}, {"total", total}});
  }
  void send(const json &j) const {
    if (!write_all(m_fd, j.dump() + "\n"))
      std::_Exit(1); // the parent is gone: nothing to report to
  }

private:
  int m_fd;
};

[[noreturn]] void child_main(const run_options &o, const protocol &proto, std::uint64_t seed,
                             int to_parent, int from_parent) {
  piped_progress out(to_parent);
  try {
    in_process side(o, proto, seed);
    const measuring_plan p = side.plan();
    json cells = json::array();
    for (const auto &c : p.cells)
      cells.push_back(to_json(c));
    out.send(
        {{"plan", {{"environment", p.environment}, {"cells", cells}, {"skipped", p.skipped}}}});
    char go = 0;
    ssize_t n;
    while ((n = ::read(from_parent, &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1)
      std::_Exit(0); // the parent decided not to measure
    const raw_run raw = side.measure(out);
    out.send({{"raw", raw_to_json(raw)}});
  } catch (const std::exception &e) {
    out.send(error_message(e));
  }
  std::_Exit(0); // never back into the parent's stack (no destructors, no atexit handlers)
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char *name = ::strsignal(sig);
    return fmt::format("was killed by signal {} ({})", sig, name != nullptr ? name : "?");
  }
  if (WIFEXITED(status))
    return fmt::format("exited with status {} before sending its result", WEXITSTATUS(status));
  return "ended abnormally";
}

class forked final : public measuring_side {
public:
  forked(const run_options &o, const protocol &proto, std::uint64_t seed) {
    int up[2], down[2];
    if (::pipe2(up, O_CLOEXEC) != 0)
      throw io_error(fmt::format("pipe: {}", std::strerror(errno)));
    if (::pipe2(down, O_CLOEXEC) != 0) {
      ::close(up[0]);
      ::close(up[1]);
      throw io_error(fmt::format("pipe: {}", std::strerror(errno)));
    }
    const pid_t parent = ::getpid();
    m_pid = ::fork();
    if (m_pid < 0) {
      for (int fd : {up[0], up[1], down[0], down[1]})
        ::close(fd);
      throw io_error(fmt::format("fork: {}", std::strerror(errno)));
    }
    if (m_pid == 0) {
      ::close(up[0]);
      ::close(down[1]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL); // dies with the parent
      if (::getppid() != parent)
        std::_Exit(1);
      ::signal(SIGINT, SIG_IGN); // the parent decides what an interrupt means
      ::signal(SIGTERM, SIG_IGN);
      ::unsetenv("PREREG_KEY");
      outside::set_crash_channel(up[1]); // a crash in an outside arm: one error message up
      child_main(o, proto, seed, up[1], down[0]);
    }
    ::close(up[1]);
    ::close(down[0]);
    m_from_child = up[0];
    m_to_child = down[1];
    m_reader = std::make_unique<line_reader>(m_from_child);
  }
  ~forked() override {
    if (m_to_child >= 0)
      ::close(m_to_child);
    if (m_from_child >= 0)
      ::close(m_from_child);
    if (m_pid > 0) {
      ::kill(m_pid, SIGKILL);
      int status = 0;
      while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  forked(const forked &) = delete;
  forked &operator=(const forked &) = delete;

  measuring_plan plan() override {
    const json msg = next_message(nullptr, "plan");
    const json &p = msg.at("plan");
    measuring_plan out;
    out.environment = member(p, "plan", "environment");
    if (!out.environment.is_object())
      bad("plan.environment", "is not an object");
    // The planned cells must be cells of the protocol; they are checked again in raw_from_json.
    const json &cells = member(p, "plan", "cells");
    if (!cells.is_array())
      bad("plan.cells", "is not an array");
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string path = fmt::format("plan.cells[{}]", i);
      const json &c = cells[i];
      cell_key k;
      k.arm = text(member(c, path, "arm"), path + ".arm");
      k.pass = text(member(c, path, "pass"), path + ".pass") == "fwd" ? pass_kind::fwd
                                                                      : pass_kind::fwd_bwd;
      k.rows = static_cast<std::int64_t>(count(member(c, path, "rows"), path + ".rows"));
      k.cols = static_cast<std::int64_t>(count(member(c, path, "cols"), path + ".cols"));
      out.cells.push_back(k);
    }
    const json &skipped = member(p, "plan", "skipped");
    if (!skipped.is_array())
      bad("plan.skipped", "is not an array");
    for (const auto &d : skipped)
      out.skipped.push_back(d);
    m_cells = out.cells;
    return out;
  }

  raw_run measure(progress_sink &progress) override {
    if (!write_all(m_to_child, "g"))
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
      if (!line)
        throw io_error(fmt::format("the measuring process (pid {}) {}", m_pid, reap()));
      json msg;
      try {
        msg = json::parse(*line);
      } catch (const std::exception &) {
        bad("message", "is not JSON");
      }
      if (!msg.is_object() || msg.size() < 1)
        bad("message", "is not an object");
      if (msg.contains("error"))
        rethrow(msg);
      if (msg.contains("phase")) {
        if (progress != nullptr)
          progress->phase(text(msg["phase"], "phase"));
        continue;
      }
      if (msg.contains("done")) {
        done = count(msg["done"], "done");
        total = count(member(msg, "message", "total"), "total");
        if (progress != nullptr)
          progress->cell_done(done, total);
        continue;
      }
      if (!msg.contains(want))
        bad("message", fmt::format("is not the {} expected", want));
      return msg;
    }
  }

  /// Waits for the child that closed its pipe and says how it ended.
  std::string reap() {
    int status = 0;
    pid_t r;
    while ((r = ::waitpid(m_pid, &status, 0)) < 0 && errno == EINTR) {
    }
    const std::string how = r == m_pid ? describe_status(status) : "vanished";
    m_pid = -1;
    return how + "; the run failed";
  }

  pid_t m_pid = -1;
  int m_from_child = -1;
  int m_to_child = -1;
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
  return std::make_unique<in_process>(o, proto, seed);
}

namespace {

json kernel_names_json(const std::vector<kernel_name_record> &names) {
  json out = json::array();
  for (const auto &n : names)
    out.push_back({{"name", n.name}, {"calls", n.calls}, {"samples_ms", n.samples_ms}});
  return out;
}

// The kernel clock's per-sample facts of one cell: as many as its samples, or none.
void read_kernel_facts(const json &c, const std::string &p, cell_record &rec) {
  rec.kernel_ms = numbers(member(c, p, "kernel_ms"), p + ".kernel_ms");
  const json &counts = member(c, p, "kernel_counts");
  if (!counts.is_array())
    bad(p + ".kernel_counts", "is not an array");
  for (std::size_t i = 0; i < counts.size(); ++i)
    rec.kernel_counts.push_back(
        static_cast<std::int64_t>(count(counts[i], fmt::format("{}.kernel_counts[{}]", p, i))));
  const std::size_t n = rec.kernel_ms.size();
  if (n != 0 && n != rec.samples_ms.size())
    bad(p + ".kernel_ms", "does not have one value per sample");
  if (rec.kernel_counts.size() != n)
    bad(p + ".kernel_counts", "does not have one value per kernel_ms");
  if (c.contains("graph_kernel_counts")) {
    const json &graph = c.at("graph_kernel_counts");
    if (!graph.is_array())
      bad(p + ".graph_kernel_counts", "is not an array");
    for (std::size_t i = 0; i < graph.size(); ++i)
      rec.graph_kernel_counts.push_back(static_cast<std::int64_t>(
          count(graph[i], fmt::format("{}.graph_kernel_counts[{}]", p, i))));
    if (rec.graph_kernel_counts.size() != n)
      bad(p + ".graph_kernel_counts", "does not have one value per kernel_ms");
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(rec.kernel_ms[i]) || rec.kernel_ms[i] < 0)
      bad(fmt::format("{}.kernel_ms[{}]", p, i), "is not a finite time");
  const json &names = member(c, p, "kernel_names");
  if (!names.is_array())
    bad(p + ".kernel_names", "is not an array");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string q = fmt::format("{}.kernel_names[{}]", p, i);
    kernel_name_record k;
    k.name = text(member(names[i], q, "name"), q + ".name");
    k.calls = static_cast<std::int64_t>(count(member(names[i], q, "calls"), q + ".calls"));
    k.samples_ms = numbers(member(names[i], q, "samples_ms"), q + ".samples_ms");
    if (k.samples_ms.size() != n)
      bad(q + ".samples_ms", "does not have one value per sample");
    rec.kernel_names.push_back(std::move(k));
  }
}

} // namespace

json raw_to_json(const raw_run &raw) {
  json cells = json::array();
  for (const auto &c : raw.cells) {
    cells.push_back({{"key", to_json(c.key)},
                     {"samples_ms", c.samples_ms},
                     {"peak_bytes", c.peak_bytes},
                     {"harness_bytes_in_window", c.harness_bytes_in_window},
                     {"clock_mhz", finite_or_null(c.clock_mhz)},
                     {"error", c.error ? json(*c.error) : json(nullptr)},
                     {"first_call_ms", finite_or_null(c.first_call_ms)},
                     {"warmup_calls", c.warmup_calls},
                     {"off_window_ms", finite_or_null(c.off_window_ms)},
                     {"spot_checks", c.spot_checks},
                     {"input_mutated", c.input_mutated ? json(*c.input_mutated) : json(nullptr)},
                     {"kernel_ms", c.kernel_ms},
                     {"kernel_counts", c.kernel_counts},
                     {"kernel_names", kernel_names_json(c.kernel_names)}});
    if (!c.graph_kernel_counts.empty())
      cells.back()["graph_kernel_counts"] = c.graph_kernel_counts;
    if (!c.regions_ms.empty())
      cells.back()["regions_ms"] = c.regions_ms;
    if (!c.region_kernels_ms.empty())
      cells.back()["region_kernels_ms"] = c.region_kernels_ms;
  }
  json correctness = json::array();
  for (const auto &c : raw.correctness)
    correctness.push_back({{"key", to_json(c.key)},
                           {"max_abs_error", finite_or_null(c.max_abs_error)},
                           {"max_rel_error", finite_or_null(c.max_rel_error)},
                           {"unwritten", c.unwritten},
                           {"passed", c.passed},
                           {"detail", c.detail}});
  const instrument_record &in = raw.instrument;
  return {{"environment", raw.environment},
          {"instrument",
           {{"ceiling_gbps", finite_or_null(in.ceiling_gbps)},
            {"ceiling_samples_gbps", in.ceiling_samples_gbps},
            {"ceiling_bytes", in.ceiling_bytes},
            {"launch_floor_ms", finite_or_null(in.launch_floor_ms)},
            {"timer_resolution_ms", finite_or_null(in.timer_resolution_ms)},
            {"flush_bytes", in.flush_bytes},
            {"flush_method", in.flush_method},
            {"llc_bytes", in.llc_bytes},
            {"clock_start_mhz", finite_or_null(in.clock_start_mhz)},
            {"kernel_clock", in.kernel_clock},
            {"kernel_clock_floor_ms", finite_or_null(in.kernel_clock_floor_ms)},
            {"kernel_records_dropped", in.kernel_records_dropped}}},
          {"cells", cells},
          {"correctness", correctness},
          {"deviations", raw.deviations}};
}

raw_run raw_from_json(const json &j, const std::vector<cell_key> &planned) {
  raw_run raw;
  raw.environment = member(j, "raw", "environment");
  if (!raw.environment.is_object())
    bad("raw.environment", "is not an object");
  const json &in = member(j, "raw", "instrument");
  const std::string ip = "raw.instrument";
  const auto num = [&](const char *name) {
    return number(member(in, ip, name), ip + "." + name, true);
  };
  instrument_record &r = raw.instrument;
  r.ceiling_gbps = num("ceiling_gbps");
  r.ceiling_samples_gbps =
      numbers(member(in, ip, "ceiling_samples_gbps"), ip + ".ceiling_samples_gbps");
  r.ceiling_bytes = count(member(in, ip, "ceiling_bytes"), ip + ".ceiling_bytes");
  r.launch_floor_ms = num("launch_floor_ms");
  r.timer_resolution_ms = num("timer_resolution_ms");
  r.flush_bytes = count(member(in, ip, "flush_bytes"), ip + ".flush_bytes");
  r.flush_method = text(member(in, ip, "flush_method"), ip + ".flush_method");
  r.llc_bytes = count(member(in, ip, "llc_bytes"), ip + ".llc_bytes");
  r.clock_start_mhz = num("clock_start_mhz");
  r.kernel_clock = text(member(in, ip, "kernel_clock"), ip + ".kernel_clock");
  r.kernel_clock_floor_ms = num("kernel_clock_floor_ms");
  r.kernel_records_dropped =
      count(member(in, ip, "kernel_records_dropped"), ip + ".kernel_records_dropped");

  std::vector<cell_key> seen;
  const auto once = [&](const cell_key &k, const std::string &path) {
    if (std::find(seen.begin(), seen.end(), k) != seen.end())
      bad(path, "repeats a cell");
    seen.push_back(k);
  };
  const json &cells = member(j, "raw", "cells");
  if (!cells.is_array())
    bad("raw.cells", "is not an array");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string p = fmt::format("raw.cells[{}]", i);
    const json &c = cells[i];
    cell_record rec;
    rec.key = planned_key(member(c, p, "key"), p + ".key", planned);
    once(rec.key, p);
    rec.samples_ms = numbers(member(c, p, "samples_ms"), p + ".samples_ms");
    for (std::size_t s = 0; s < rec.samples_ms.size(); ++s)
      if (!std::isfinite(rec.samples_ms[s]) || rec.samples_ms[s] < 0)
        bad(fmt::format("{}.samples_ms[{}]", p, s), "is not a finite time");
    rec.peak_bytes = count(member(c, p, "peak_bytes"), p + ".peak_bytes");
    rec.harness_bytes_in_window =
        count(member(c, p, "harness_bytes_in_window"), p + ".harness_bytes_in_window");
    rec.clock_mhz = number(member(c, p, "clock_mhz"), p + ".clock_mhz", true);
    rec.error = optional_text(c, p, "error");
    rec.first_call_ms = number(member(c, p, "first_call_ms"), p + ".first_call_ms", true);
    rec.warmup_calls =
        static_cast<std::int64_t>(count(member(c, p, "warmup_calls"), p + ".warmup_calls"));
    rec.off_window_ms = number(member(c, p, "off_window_ms"), p + ".off_window_ms", true);
    rec.spot_checks =
        static_cast<std::int64_t>(count(member(c, p, "spot_checks"), p + ".spot_checks"));
    rec.input_mutated = optional_text(c, p, "input_mutated");
    read_kernel_facts(c, p, rec);
    for (const char *member_name : {"regions_ms", "region_kernels_ms"}) {
      const auto r = c.find(member_name);
      if (r == c.end())
        continue;
      if (!r->is_object())
        bad(fmt::format("{}.{}", p, member_name), "is not an object");
      auto &into =
          std::string_view(member_name) == "regions_ms" ? rec.regions_ms : rec.region_kernels_ms;
      for (const auto &[label, times] : r->items()) {
        const std::string rp = fmt::format("{}.{}.{}", p, member_name, label);
        into[label] = numbers(times, rp);
        if (into[label].size() != rec.samples_ms.size())
          bad(rp, "is not one time per sample");
        for (const double t : into[label])
          if (!std::isfinite(t) || t < 0)
            bad(rp, "holds a time that is not finite and non-negative");
      }
    }
    for (const auto &[label, times] : rec.region_kernels_ms)
      if (!rec.regions_ms.contains(label))
        bad(fmt::format("{}.region_kernels_ms.{}", p, label),
            "names a region the arm did not time");
    raw.cells.push_back(std::move(rec));
  }
  seen.clear();
  const json &corr = member(j, "raw", "correctness");
  if (!corr.is_array())
    bad("raw.correctness", "is not an array");
  for (std::size_t i = 0; i < corr.size(); ++i) {
    const std::string p = fmt::format("raw.correctness[{}]", i);
    const json &c = corr[i];
    correctness_record rec;
    rec.key = planned_key(member(c, p, "key"), p + ".key", planned);
    once(rec.key, p);
    rec.max_abs_error = number(member(c, p, "max_abs_error"), p + ".max_abs_error", true);
    rec.max_rel_error = number(member(c, p, "max_rel_error"), p + ".max_rel_error", true);
    const json &u = member(c, p, "unwritten"), &ok = member(c, p, "passed");
    if (!u.is_boolean() || !ok.is_boolean())
      bad(p, "has a non-boolean flag");
    rec.unwritten = u.get<bool>();
    rec.passed = ok.get<bool>();
    rec.detail = text(member(c, p, "detail"), p + ".detail");
    raw.correctness.push_back(std::move(rec));
  }
  const json &devs = member(j, "raw", "deviations");
  if (!devs.is_array())
    bad("raw.deviations", "is not an array");
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const std::string p = fmt::format("raw.deviations[{}]", i);
    const json &d = devs[i];
    if (text(member(d, p, "kind"), p + ".kind") != "cell-skipped")
      bad(p + ".kind", "is not a deviation the engine records");
    (void)text(member(d, p, "message"), p + ".message");
    (void)planned_key(member(d, p, "cell"), p + ".cell", planned);
    raw.deviations.push_back(d);
  }
  return raw;
}

} // namespace prereg
