// The CPU backend: probes the host, checks every arm against the float64 reference, measures
// the instrument (timer, read-sweep flush, copy ceiling, empty step) and times the plan.
#include "cpu/cpu_backend.hpp"

#include "cpu/cpu_arms.hpp"
#include "cpu/reference.hpp"
#include "prereg/error.hpp"
#include "prereg/rng.hpp"

#include <fmt/format.h>

#include <sched.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <sstream>
#include <thread>

namespace prereg {
namespace {

using steady = std::chrono::steady_clock;

constexpr std::uint64_t mib = 1024ull * 1024ull;
constexpr std::uint64_t min_flush_bytes = 64 * mib; // when the LLC size is unknown
constexpr std::uint64_t min_ceiling_bytes = 64 * mib;
constexpr int ceiling_copies = 9;
constexpr int launch_floor_steps = 1001;
constexpr int timer_reads = 200000;

// ---- the host --------------------------------------------------------------------------

std::optional<std::string> read_text(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The value of the first "key : value" line of /proc/cpuinfo whose key is `key`.
std::optional<std::string> cpuinfo_field(const std::string &text, std::string_view key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key)
      return trim(line.substr(colon + 1));
  }
  return std::nullopt;
}

// Largest cache of cpu0 from sysfs ("491520K", "32M"), 0 if unknown.
std::uint64_t read_llc_bytes() {
  std::uint64_t best = 0;
  for (int i = 0; i < 16; ++i) {
    const auto text = read_text(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", i));
    if (!text)
      continue;
    const std::string s = trim(*text);
    char *end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    std::uint64_t mult = 1;
    if (end != nullptr && (*end == 'K' || *end == 'k'))
      mult = 1024;
    if (end != nullptr && (*end == 'M' || *end == 'm'))
      mult = mib;
    if (end != nullptr && (*end == 'G' || *end == 'g'))
      mult = 1024 * mib;
    best = std::max<std::uint64_t>(best, v * mult);
  }
  return best;
}

// A /proc/meminfo field ("MemAvailable") in bytes, 0 if unknown.
std::uint64_t meminfo_bytes(std::string_view key) {
  const auto text = read_text("/proc/meminfo");
  if (!text)
    return 0;
  const auto v = cpuinfo_field(*text, key);
  return v ? std::strtoull(v->c_str(), nullptr, 10) * 1024ull : 0;
}

// The clock of the core this thread runs on [MHz]: cpufreq, else /proc/cpuinfo, else NaN.
// Read outside timed windows only.
double read_cpu_mhz() {
  const int cpu = sched_getcpu();
  if (cpu < 0)
    return std::numeric_limits<double>::quiet_NaN();
  if (const auto khz =
          read_text(fmt::format("/sys/devices/system/cpu/cpu{}/cpufreq/scaling_cur_freq", cpu)))
    return std::strtod(khz->c_str(), nullptr) / 1000.0;
  const auto text = read_text("/proc/cpuinfo");
  if (!text)
    return std::numeric_limits<double>::quiet_NaN();
  std::istringstream blocks(*text);
  bool ours = false;
  for (std::string line; std::getline(blocks, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "processor")
      ours = std::strtol(value.c_str(), nullptr, 10) == cpu;
    if (ours && key == "cpu MHz")
      return std::strtod(value.c_str(), nullptr);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// ---- memory billed to an arm ---------------------------------------------------------

// malloc-backed; a 64-byte header holds the size and links live blocks, so nothing else is
// allocated while an arm runs and leaks can be given back.
class tracking_allocator final : public step_allocator {
public:
  tracking_allocator() = default;
  tracking_allocator(const tracking_allocator &) = delete;
  tracking_allocator &operator=(const tracking_allocator &) = delete;
  ~tracking_allocator() override { release_all(); }

  void *allocate(std::size_t bytes) override {
    const std::size_t total = (bytes + header_bytes + 63) / 64 * 64;
    void *raw = std::aligned_alloc(64, total);
    if (raw == nullptr)
      throw std::bad_alloc();
    auto *h = new (raw) header{bytes, nullptr, m_head};
    if (m_head != nullptr)
      m_head->prev = h;
    m_head = h;
    m_current += bytes;
    m_peak = std::max(m_peak, m_current);
    return static_cast<char *>(raw) + header_bytes;
  }
  void release(void *p) override {
    if (p == nullptr)
      return;
    auto *h = reinterpret_cast<header *>(static_cast<char *>(p) - header_bytes);
    (h->prev != nullptr ? h->prev->next : m_head) = h->next;
    if (h->next != nullptr)
      h->next->prev = h->prev;
    m_current -= h->bytes;
    std::free(h);
  }
  /// Frees what is still held; returns its bytes (non-zero: the arm leaked).
  std::uint64_t release_all() {
    const std::uint64_t leaked = m_current;
    while (m_head != nullptr)
      release(reinterpret_cast<char *>(m_head) + header_bytes);
    return leaked;
  }
  /// Starts a new peak from what is held now.
  void reset_peak() { m_peak = m_current; }
  [[nodiscard]] std::uint64_t peak() const { return m_peak; }

private:
  struct header {
    std::size_t bytes;
    header *prev;
    header *next;
  };
  static constexpr std::size_t header_bytes = 64;
  header *m_head = nullptr;
  std::uint64_t m_current = 0;
  std::uint64_t m_peak = 0;
};

// ---- buffers ------------------------------------------------------------------------------

// The host buffers of one invocation.
struct io_buffers {
  std::vector<std::uint8_t> x, gamma, beta, dy, y, dx, dgamma, dbeta;
  std::vector<float> mean, rstd;
  std::int64_t rows = 0, cols = 0;
  dtype type = dtype::fp32;

  io_buffers(const reference::inputs64 &in, dtype t, bool poisoned)
      : x(reference::pack(in.x, t)), gamma(reference::pack(in.gamma, t)),
        beta(reference::pack(in.beta, t)), dy(reference::pack(in.dy, t)), rows(in.rows),
        cols(in.cols), type(t) {
    const auto n = static_cast<std::size_t>(rows * cols);
    const auto c = static_cast<std::size_t>(cols);
    if (poisoned) {
      y = dx = reference::poison(n, t);
      dgamma = dbeta = reference::poison(c, t);
      const auto p = reference::poison(static_cast<std::size_t>(rows), dtype::fp32);
      mean.resize(rows);
      std::memcpy(mean.data(), p.data(), p.size());
      rstd = mean;
    } else { // touched now, so no page is first faulted inside a timed window
      y.assign(n * element_bytes(t), 0);
      dx = y;
      dgamma.assign(c * element_bytes(t), 0);
      dbeta = dgamma;
      mean.assign(rows, 0.0f);
      rstd = mean;
    }
  }
  [[nodiscard]] norm_tensors tensors() {
    return {x.data(),  gamma.data(),  beta.data(),  y.data(), mean.data(), rstd.data(), dy.data(),
            dx.data(), dgamma.data(), dbeta.data(), rows,     cols,        type};
  }
};

// ---- timing ----------------------------------------------------------------------------

using step_fn = void (*)(void *);

// The one timing code: steady_clock around exactly one step. Not inlined, so every sample
// (empty steps included) runs the same instructions around the step.
[[gnu::noinline]] double time_step(step_fn fn, void *ctx) {
  const auto t0 = steady::now();
  fn(ctx);
  const auto t1 = steady::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

void empty_step(void * /*ctx*/) {}

struct step_context {
  const arm_ops *ops = nullptr;
  norm_tensors *sets = nullptr;
  std::int64_t repeat = 1;
  bool backward = false;
  step_allocator *alloc = nullptr;
};

void arm_step(void *p) {
  auto &c = *static_cast<step_context *>(p);
  for (std::int64_t k = 0; k < c.repeat; ++k) {
    c.ops->forward(c.sets[k], *c.alloc, nullptr);
    if (c.backward)
      c.ops->backward(c.sets[k], *c.alloc, nullptr);
  }
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Smallest non-zero difference between consecutive clock reads [ms].
double timer_resolution_ms() {
  auto best = steady::duration::max();
  auto prev = steady::now();
  for (int i = 0; i < timer_reads; ++i) {
    const auto now = steady::now();
    if (now != prev)
      best = std::min(best, now - prev);
    prev = now;
  }
  return std::chrono::duration<double, std::milli>(best).count();
}

// A large instrument buffer (flush, copy ceiling) filled with `fill`, on 2 MiB pages where the
// kernel allows (fewer page faults and TLB misses; the contents are what matter).
class big_buffer {
public:
  big_buffer(std::uint64_t bytes, std::uint8_t fill, const char *what) : m_bytes(bytes) {
    constexpr std::uint64_t huge = 2 * mib;
    const std::uint64_t rounded = (bytes + huge - 1) / huge * huge;
    m_data = static_cast<std::uint8_t *>(std::aligned_alloc(huge, rounded));
    if (m_data == nullptr)
      throw environment_error(fmt::format("cannot allocate the {}-byte {}", bytes, what));
#ifdef MADV_HUGEPAGE
    (void)madvise(m_data, rounded, MADV_HUGEPAGE); // advice only: 4 KiB pages work too
#endif
    std::memset(m_data, fill, bytes);
  }
  big_buffer(const big_buffer &) = delete;
  big_buffer &operator=(const big_buffer &) = delete;
  ~big_buffer() { std::free(m_data); }
  [[nodiscard]] std::uint8_t *data() const { return m_data; }
  [[nodiscard]] std::uint64_t bytes() const { return m_bytes; }

private:
  std::uint64_t m_bytes;
  std::uint8_t *m_data = nullptr;
};

// A buffer of non-zero bytes read (never written) to evict the arm's data from the caches.
class flush_buffer {
public:
  explicit flush_buffer(std::uint64_t bytes) : m_buf(bytes, 0xa5, "flush buffer") {}
  /// Reads one word of every 64-byte line into a volatile sink.
  void sweep() {
    const std::uint8_t *p = m_buf.data();
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i + 8 <= m_buf.bytes(); i += 64) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      sum += w;
    }
    m_sink = sum;
  }
  [[nodiscard]] std::uint64_t bytes() const { return m_buf.bytes(); }

private:
  big_buffer m_buf;
  volatile std::uint64_t m_sink = 0;
};

// ---- the backend --------------------------------------------------------------------------

struct resolved_arm {
  const arm_spec *spec = nullptr;
  const arm_info *info = nullptr;
  const arm_ops *ops = nullptr;
};

std::string element_name(std::string_view output, std::int64_t i, std::int64_t cols) {
  if (output == "dgamma" || output == "dbeta")
    return fmt::format("element {} (col {})", i, i);
  return fmt::format("element {} (row {}, col {})", i, i / cols, i % cols);
}

class cpu_backend final : public backend {
public:
  explicit cpu_backend(cpu_backend_options options) : m_options(std::move(options)) {
    if (!m_options.resolve)
      m_options.resolve = [](const arm_spec &a) { return cpu_arm_ops(a.kernel); };
  }

  [[nodiscard]] std::string_view device() const override { return "cpu"; }

  [[nodiscard]] json probe() override {
    json env = json::object();
    const auto cpuinfo = read_text("/proc/cpuinfo");
    std::optional<std::string> model;
    if (cpuinfo)
      model = cpuinfo_field(*cpuinfo, "model name");
    if (!model && cpuinfo)
      model = cpuinfo_field(*cpuinfo, "Hardware");
    env["device_name"] = model.value_or("unknown");
    env["cores"] = std::thread::hardware_concurrency();
    env["llc_bytes"] = read_llc_bytes();
    env["memory_bytes"] = meminfo_bytes("MemTotal");
    utsname u{};
    if (uname(&u) == 0) {
      env["os"] = u.sysname;
      env["kernel"] = u.release;
      env["machine"] = u.machine;
    } else {
      env["os"] = env["kernel"] = env["machine"] = "unknown";
    }
    env["other_processes"] = "unknown";
    env["threads"] = 1; // the arms run on the calling thread
    return env;
  }

  [[nodiscard]] std::optional<std::string> cannot_run(const arm_info &arm, pass_kind /*pass*/,
                                                      std::int64_t rows, std::int64_t cols,
                                                      dtype type,
                                                      std::int64_t repeat) const override {
    const double n = static_cast<double>(rows) * static_cast<double>(cols);
    const double eb = static_cast<double>(element_bytes(type));
    const double io_set = (4 * n + 4 * static_cast<double>(cols)) * eb + 2 * rows * 4.0;
    const double reference = 2 * (4 * n + 4 * static_cast<double>(cols) + 2 * rows) * 8.0;
    const double scratch = (arm.allocates_fwd || arm.allocates_bwd) ? 6 * n * 4.0 : 0.0;
    const double need =
        static_cast<double>(std::max<std::int64_t>(repeat, 1) + 1) * io_set + reference + scratch;
    const double avail = static_cast<double>(meminfo_bytes("MemAvailable")) / 2;
    if (need <= avail)
      return std::nullopt;
    return fmt::format("{} {}x{} needs about {:.1f} MiB (inputs and outputs x{}, float64 "
                       "reference copies, arm scratch) but half of MemAvailable is {:.1f} MiB",
                       arm.name, rows, cols, need / mib, std::max<std::int64_t>(repeat, 1) + 1,
                       avail / mib);
  }

  [[nodiscard]] raw_run measure(const run_plan &plan, progress_sink &progress) override {
    if (plan.proto == nullptr)
      throw io_error("cpu backend: the run plan has no protocol");
    const protocol &proto = *plan.proto;
    raw_run raw;
    raw.environment = probe();
    raw.instrument.llc_bytes = raw.environment["llc_bytes"].get<std::uint64_t>();

    // Which cells can run here, with their arms resolved.
    std::vector<resolved_arm> arms(plan.cells.size());
    std::vector<std::optional<std::string>> skip(plan.cells.size());
    for (std::size_t i = 0; i < plan.cells.size(); ++i) {
      const cell_key &k = plan.cells[i];
      const auto spec = std::find_if(proto.arms.begin(), proto.arms.end(),
                                     [&](const arm_spec &a) { return a.id == k.arm; });
      if (spec == proto.arms.end())
        throw io_error(
            fmt::format("cpu backend: the plan names arm '{}', not in the protocol", k.arm));
      arms[i].spec = &*spec;
      arms[i].info = find_arm("cpu", spec->kernel);
      arms[i].ops = m_options.resolve(*spec);
      if (arms[i].info == nullptr || arms[i].ops == nullptr)
        skip[i] = fmt::format("kernel {} has no CPU implementation in this build", spec->kernel);
      else
        skip[i] = cannot_run(*arms[i].info, k.pass, k.rows, k.cols, proto.type, spec->repeat);
      if (skip[i])
        raw.deviations.push_back(json{
            {"kind", "cell-skipped"}, // the run engine's name for it
            {"cell",
             {{"arm", k.arm}, {"pass", to_string(k.pass)}, {"rows", k.rows}, {"cols", k.cols}}},
            {"message", *skip[i]}});
    }

    check_correctness(plan, arms, skip, raw, progress);
    measure_instrument(proto, raw, progress);
    time_cells(plan, arms, skip, raw, progress);
    return raw;
  }

private:
  [[nodiscard]] operation op_of(const resolved_arm &a, const protocol &p) const {
    return reference::norm_operation(a.info != nullptr ? a.info->op : p.op);
  }

  void check_correctness(const run_plan &plan, const std::vector<resolved_arm> &arms,
                         const std::vector<std::optional<std::string>> &skip, raw_run &raw,
                         progress_sink &progress) {
    progress.phase("correctness");
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < plan.cells.size(); ++i) {
      const bool seen = std::any_of(todo.begin(), todo.end(),
                                    [&](std::size_t j) { return plan.cells[j] == plan.cells[i]; });
      if (!skip[i] && !seen)
        todo.push_back(i);
    }
    for (std::size_t d = 0; d < todo.size(); ++d) {
      const std::size_t i = todo[d];
      raw.correctness.push_back(check_one(plan, plan.cells[i], arms[i]));
      progress.cell_done(d + 1, todo.size());
    }
  }

  [[nodiscard]] correctness_record check_one(const run_plan &plan, const cell_key &key,
                                             const resolved_arm &arm) const {
    const protocol &proto = *plan.proto;
    const operation op = op_of(arm, proto);
    const bool backward = key.pass == pass_kind::fwd_bwd;
    correctness_record rec;
    rec.key = key;
    const auto in =
        reference::random_inputs(key.rows, key.cols, proto.type,
                                 reference::cell_seed(plan.seed, key.pass, key.rows, key.cols));
    const auto ref = reference::compute(op, in, backward);
    io_buffers buf(in, proto.type, true);
    tracking_allocator alloc;
    try {
      const norm_tensors t = buf.tensors();
      arm.ops->forward(t, alloc, nullptr);
      if (backward)
        arm.ops->backward(t, alloc, nullptr);
    } catch (const std::exception &e) {
      rec.detail = fmt::format("the arm threw: {}", e.what());
      return rec;
    }
    if (const auto leaked = alloc.release_all(); leaked != 0) {
      rec.detail = fmt::format("the arm did not release {} bytes of its step", leaked);
      return rec;
    }
    struct output {
      const char *name;
      const std::vector<std::uint8_t> *bytes;
      const std::vector<double> *ref;
    };
    std::vector<output> outputs{{"y", &buf.y, &ref.y}};
    if (backward) {
      outputs.push_back({"dx", &buf.dx, &ref.dx});
      outputs.push_back({"dgamma", &buf.dgamma, &ref.dgamma});
      if (op == operation::layernorm)
        outputs.push_back({"dbeta", &buf.dbeta, &ref.dbeta});
    }
    rec.passed = true;
    for (const auto &o : outputs) {
      const auto got = reference::unpack(*o.bytes, proto.type);
      const auto c =
          reference::compare(got, *o.ref, proto.correctness.rtol, proto.correctness.atol);
      rec.max_abs_error = std::max(rec.max_abs_error, c.max_abs_error);
      rec.max_rel_error = std::max(rec.max_rel_error, c.max_rel_error);
      rec.unwritten = rec.unwritten || c.unwritten;
      if (c.passed)
        continue;
      if (rec.passed) {
        const auto i = static_cast<std::size_t>(c.first_bad);
        const std::string where = element_name(o.name, c.first_bad, key.cols);
        rec.detail = reference::is_poison(got[i])
                         ? fmt::format("{}: unwritten (still poison) at {}", o.name, where)
                         : fmt::format("{}: {} is {:.9g}, reference {:.9g} (rtol {:g}, atol {:g})",
                                       o.name, where, got[i], (*o.ref)[i], proto.correctness.rtol,
                                       proto.correctness.atol);
      }
      rec.passed = false;
    }
    return rec;
  }

  void measure_instrument(const protocol &proto, raw_run &raw, progress_sink &progress) {
    instrument_record &ins = raw.instrument;
    ins.timer_resolution_ms = timer_resolution_ms();
    const std::uint64_t llc = ins.llc_bytes;
    m_flush.reset();
    if (proto.measurement.l2_flush) {
      m_flush = std::make_unique<flush_buffer>(llc == 0 ? min_flush_bytes
                                                        : std::max(2 * llc, min_flush_bytes));
      ins.flush_bytes = m_flush->bytes();
      ins.flush_method = "read-sweep";
    } else {
      ins.flush_bytes = 0;
      ins.flush_method = "none";
    }

    // The empty step under the same timing code.
    step_fn volatile empty = &empty_step;
    std::vector<double> floor(launch_floor_steps);
    for (auto &s : floor)
      s = time_step(empty, nullptr);
    ins.launch_floor_ms = median(floor);

    progress.phase("ceiling");
    const std::uint64_t bytes = std::max(4 * llc, min_ceiling_bytes);
    const big_buffer src(bytes, 0x5a, "copy source");
    const big_buffer dst(bytes, 0x00, "copy destination");
    struct copy_context {
      std::uint8_t *dst;
      const std::uint8_t *src;
      std::uint64_t bytes;
    } ctx{dst.data(), src.data(), bytes};
    const step_fn copy = [](void *p) {
      auto &c = *static_cast<copy_context *>(p);
      std::memcpy(c.dst, c.src, c.bytes);
    };
    copy(&ctx); // warm the page tables
    ins.ceiling_samples_gbps.clear();
    for (int i = 0; i < ceiling_copies; ++i) {
      if (m_flush)
        m_flush->sweep();
      const double ms = time_step(copy, &ctx);
      ins.ceiling_samples_gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
    }
    ins.ceiling_gbps = median(ins.ceiling_samples_gbps);
    ins.ceiling_bytes = bytes;
  }

  void time_cells(const run_plan &plan, const std::vector<resolved_arm> &arms,
                  const std::vector<std::optional<std::string>> &skip, raw_run &raw,
                  progress_sink &progress) {
    progress.phase("timing");
    const protocol &proto = *plan.proto;
    const auto reps =
        static_cast<std::size_t>(std::max<std::int64_t>(proto.measurement.repetitions, 0));
    std::vector<cell_record> records(plan.cells.size());
    for (std::size_t i = 0; i < plan.cells.size(); ++i) {
      records[i].key = plan.cells[i];
      records[i].samples_ms.reserve(reps);
      if (skip[i])
        records[i].error = *skip[i];
    }

    // Groups: one per (pass, rows, cols) in plan order; their cells in protocol arm order.
    std::vector<std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < plan.cells.size(); ++i) {
      if (skip[i])
        continue;
      const cell_key &k = plan.cells[i];
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto &grp) {
        const cell_key &o = plan.cells[grp.front()];
        return o.pass == k.pass && o.rows == k.rows && o.cols == k.cols;
      });
      if (g == groups.end()) {
        groups.emplace_back();
        g = groups.end() - 1;
      }
      const bool dup = std::any_of(g->begin(), g->end(),
                                   [&](std::size_t j) { return plan.cells[j].arm == k.arm; });
      if (!dup)
        g->push_back(i);
    }
    auto arm_rank = [&](std::size_t i) { return arms[i].spec - proto.arms.data(); };
    for (auto &g : groups)
      std::stable_sort(g.begin(), g.end(),
                       [&](std::size_t a, std::size_t b) { return arm_rank(a) < arm_rank(b); });

    rng order_rng(stream_seed(plan.seed, stream_id::arm_order));
    raw.instrument.clock_start_mhz = read_cpu_mhz();
    std::size_t done = 0, total = 0;
    for (const auto &g : groups)
      total += g.size();
    tracking_allocator alloc;
    for (const auto &g : groups) {
      const cell_key &k0 = plan.cells[g.front()];
      std::int64_t max_repeat = 1;
      for (std::size_t i : g)
        max_repeat = std::max(max_repeat, arms[i].spec->repeat);
      // Inputs and outputs for the whole group, before any timed window: `repeat` distinct
      // sets, shared by the group's arms.
      const auto in = reference::random_inputs(
          k0.rows, k0.cols, proto.type, reference::cell_seed(plan.seed, k0.pass, k0.rows, k0.cols));
      std::vector<io_buffers> sets;
      sets.reserve(static_cast<std::size_t>(max_repeat));
      for (std::int64_t s = 0; s < max_repeat; ++s)
        sets.emplace_back(in, proto.type, false);
      std::vector<norm_tensors> tensors;
      for (auto &s : sets)
        tensors.push_back(s.tensors());

      std::vector<bool> failed(plan.cells.size(), false);
      auto step_of = [&](std::size_t i) {
        return step_context{arms[i].ops, tensors.data(),
                            std::max<std::int64_t>(arms[i].spec->repeat, 1),
                            k0.pass == pass_kind::fwd_bwd, &alloc};
      };
      auto fail = [&](std::size_t i, const std::string &why) {
        failed[i] = true;
        records[i].error = why;
        alloc.release_all();
      };
      auto warm = [&](std::size_t i) {
        step_context ctx = step_of(i);
        for (std::int64_t w = 0; w < proto.measurement.warmup && !failed[i]; ++w) {
          try {
            arm_step(&ctx);
            if (const auto leaked = alloc.release_all(); leaked != 0)
              fail(i, fmt::format("the arm did not release {} bytes of its step", leaked));
          } catch (const std::exception &e) {
            fail(i, fmt::format("the arm threw during warmup: {}", e.what()));
          }
        }
      };
      auto sample = [&](std::size_t i) {
        if (failed[i])
          return;
        if (m_options.on_sample)
          m_options.on_sample(plan.cells[i]);
        step_context ctx = step_of(i);
        if (m_flush)
          m_flush->sweep();
        alloc.reset_peak();
        try {
          const double ms = time_step(&arm_step, &ctx);
          records[i].samples_ms.push_back(ms);
          records[i].peak_bytes = std::max(records[i].peak_bytes, alloc.peak());
          if (const auto leaked = alloc.release_all(); leaked != 0)
            fail(i, fmt::format("the arm did not release {} bytes of its step", leaked));
        } catch (const std::exception &e) {
          fail(i, fmt::format("the arm threw: {}", e.what()));
        }
      };

      if (proto.measurement.order == order_mode::interleaved) {
        for (std::size_t i : g)
          warm(i);
        for (std::size_t r = 0; r < reps; ++r) {
          std::vector<std::size_t> order = g; // Fisher-Yates, one generator for the run
          for (std::size_t j = order.size(); j > 1; --j)
            std::swap(order[j - 1], order[order_rng.below(j)]);
          for (std::size_t i : order)
            sample(i);
        }
      } else {
        for (std::size_t i : g) {
          warm(i);
          for (std::size_t r = 0; r < reps; ++r)
            sample(i);
        }
      }
      const double mhz = read_cpu_mhz();
      for (std::size_t i : g) {
        records[i].clock_mhz = mhz;
        progress.cell_done(++done, total);
      }
    }
    // Duplicate cells of the plan share the first one's record.
    for (std::size_t i = 0; i < plan.cells.size(); ++i) {
      if (skip[i] || !records[i].samples_ms.empty() || records[i].error)
        continue;
      for (std::size_t j = 0; j < i; ++j)
        if (plan.cells[j] == plan.cells[i]) {
          records[i] = records[j];
          break;
        }
    }
    raw.cells = std::move(records);
    m_flush.reset();
  }

  cpu_backend_options m_options;
  std::unique_ptr<flush_buffer> m_flush;
};

} // namespace

std::unique_ptr<backend> make_cpu_backend(cpu_backend_options options) {
  return std::make_unique<cpu_backend>(std::move(options));
}

std::unique_ptr<backend> make_cpu_backend() { return make_cpu_backend(cpu_backend_options{}); }

} // namespace prereg
