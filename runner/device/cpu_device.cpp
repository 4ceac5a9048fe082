// The CPU device: the host's primitives for the measurement engine (docs/engine.md) — host
// memory, a steady-clock window, a read-sweep flush of the last-level cache, the core clock.
#include "device/device.hpp"

#include "device/cpu_roofs.hpp"

#include "base/rng.hpp"
#include "prereg/error.hpp"
#include "spec/reference.hpp"

#include <fmt/format.h>

#include <sched.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <thread>

namespace prereg {
namespace {

using steady = std::chrono::steady_clock;

constexpr std::uint64_t mib = 1024ull * 1024ull;
constexpr std::uint64_t min_flush_bytes = 64 * mib; // when the LLC size is unknown
constexpr std::uint64_t min_ceiling_bytes = 64 * mib;
constexpr int ceiling_copies = 9;
constexpr int stream_runs = 3;  // read and write ceilings: windows of 2 x LLC each (docs/cpu.md)
constexpr int compute_runs = 9; // the FMA loop, a few ms a call
constexpr int launch_floor_steps = 51; // each flushed like a sample: ~40 ms apiece here
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

// The cache size the device plans with: PREREG_CPU_LLC_MB MiB (a whole number from 1 to 1048576;
// the tests' setting, docs/cpu.md) in place of the detected one, else the detected one.
struct llc_choice {
  std::uint64_t bytes = 0;
  std::uint64_t detected = 0;
  std::string override; ///< "PREREG_CPU_LLC_MB=N" when it was set and taken
};

llc_choice choose_llc() {
  llc_choice c;
  c.detected = c.bytes = read_llc_bytes();
  const char *v = std::getenv("PREREG_CPU_LLC_MB");
  if (v == nullptr || *v == '\0')
    return c;
  char *end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || *v == '-' || n < 1 || n > 1048576)
    throw invalid_input(fmt::format("PREREG_CPU_LLC_MB is not a whole number of MiB from 1 to "
                                    "1048576: '{}'",
                                    message_excerpt(v)),
                        "the environment");
  c.bytes = n * mib;
  c.override = fmt::format("PREREG_CPU_LLC_MB={}", n);
  return c;
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
class tracking_allocator final : public tracked_allocator {
public:
  tracking_allocator() = default;
  tracking_allocator(const tracking_allocator &) = delete;
  tracking_allocator &operator=(const tracking_allocator &) = delete;
  ~tracking_allocator() override { release_all(true); }

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
  [[nodiscard]] std::uint64_t current() const override { return m_current; }
  [[nodiscard]] std::uint64_t peak() const override { return m_peak; }
  void reset_peak() override { m_peak = m_current; }
  std::uint64_t release_all(bool /*free_memory*/) override {
    const std::uint64_t leaked = m_current; // host blocks always exist: always freed
    while (m_head != nullptr)
      release(reinterpret_cast<char *>(m_head) + header_bytes);
    return leaked;
  }

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

// ---- timing ----------------------------------------------------------------------------

// The one timing code: steady_clock around exactly one step. Not inlined, so every sample
// (empty steps included) runs the same instructions around the step.
[[gnu::noinline]] double time_step(const std::function<void()> &step) {
  const auto t0 = steady::now();
  step();
  const auto t1 = steady::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
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

// A large instrument buffer (the flush) filled with `fill`, on 2 MiB pages where the kernel
// allows (fewer page faults and TLB misses; the contents are what matter).
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

// ---- the device -------------------------------------------------------------------------------

/// fill_uniform of an integer, bool or fp8 type: integers lo + below(hi - lo); fp8 U(lo, hi)
/// kept inside the range, drawn again while zero (64 attempts, then the range's fallback).
void fill_typed(std::uint8_t *p, std::size_t n, dtype type, double lo, double hi, rng &g) {
  const std::size_t w = element_bytes(type);
  for (std::size_t i = 0; i < n; ++i) {
    double v = 0.0;
    if (is_integral(type)) {
      v = lo + static_cast<double>(g.below(static_cast<std::uint64_t>(hi - lo)));
    } else {
      for (int attempt = 0; attempt < 64 && v == 0.0; ++attempt)
        v = reference::fp8_inside(lo + (hi - lo) * g.uniform(), lo, hi, type);
      if (v == 0.0)
        v = reference::fp8_fallback(lo, hi, type);
    }
    reference::encode(v, type, p + i * w);
  }
}

class cpu_device final : public device {
public:
  cpu_device() : m_choice(choose_llc()), m_llc(m_choice.bytes) {}

  [[nodiscard]] std::string_view kind() const override { return "cpu"; }

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
    env["llc_bytes"] = m_llc;
    if (!m_choice.override.empty()) { // the tests' smaller cache: the page says so
      env["llc_override"] = m_choice.override;
      env["llc_bytes_detected"] = m_choice.detected;
    }
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

  [[nodiscard]] std::uint64_t memory_budget() const override {
    return meminfo_bytes("MemAvailable") / 2;
  }
  [[nodiscard]] std::int64_t processors() const override { return 1; }

  [[nodiscard]] instrument_plan instrument() const override {
    instrument_plan p;
    p.llc_bytes = m_llc;
    p.flush_bytes = m_llc == 0 ? min_flush_bytes : std::max(2 * m_llc, min_flush_bytes);
    p.flush_method = "read-sweep";
    // Each of the two copy buffers is 2 x LLC (4 x LLC read and written per copy): out of any
    // cache, and no more memory than that (a 480 MiB L3 already makes ~2.9 GB with the flush).
    p.ceiling_bytes = std::max(2 * m_llc, min_ceiling_bytes);
    p.ceiling_copies = ceiling_copies;
    p.ceiling_warmup = 1; // maps the destination's pages
    p.floor_steps = launch_floor_steps;
    p.floor_warmup = 0;
    p.stream_bytes = p.flush_bytes; // 2 x LLC: a sweep that misses the cache whatever it holds
    p.stream_runs = stream_runs;
    p.stream_warmup = 1;
    p.compute_runs = compute_runs;
    p.compute_warmup = 1;
    return p;
  }

  [[nodiscard]] void *allocate(std::size_t bytes) override {
    void *p = std::aligned_alloc(64, std::max<std::size_t>((bytes + 63) / 64 * 64, 64));
    if (p == nullptr)
      throw std::bad_alloc();
    std::memset(p, 0, bytes); // touched now: no page is first faulted inside a timed window
    return p;
  }
  void release(void *p) noexcept override { std::free(p); }
  [[nodiscard]] std::unique_ptr<tracked_allocator> make_arm_allocator() override {
    return std::make_unique<tracking_allocator>();
  }
  void upload(void *dst, const void *src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void download(void *dst, const void *src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy(void *dst, const void *src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void fill_poison(void *p, std::size_t n, dtype type) override {
    reference::fill_poison(p, n, type);
  }
  void fill_uniform(void *p, std::size_t n, dtype type, double lo, double hi, std::uint64_t seed,
                    std::int64_t cols, double row_offset) override {
    rng g(seed);
    if (is_integral(type) || is_fp8(type)) {
      fill_typed(static_cast<std::uint8_t *>(p), n, type, lo, hi, g);
      return;
    }
    double offset = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (cols > 0 && i % static_cast<std::size_t>(cols) == 0)
        offset = -row_offset + 2 * row_offset * g.uniform();
      double v = 0;
      while (v == 0.0)
        v = reference::round_to(offset + lo + (hi - lo) * g.uniform(), type);
      if (type == dtype::fp32)
        static_cast<float *>(p)[i] = static_cast<float>(v);
      else if (type == dtype::fp16)
        static_cast<std::uint16_t *>(p)[i] = reference::float_to_half(static_cast<float>(v));
      else
        static_cast<std::uint16_t *>(p)[i] = reference::float_to_bf16(static_cast<float>(v));
    }
  }

  void prepare_flush() override {
    if (!m_flush)
      m_flush = std::make_unique<big_buffer>(instrument().flush_bytes, 0xa5, "flush buffer");
  }
  /// Reads one word of every 64-byte line into a volatile sink.
  void flush() override {
    if (!m_flush)
      prepare_flush();
    const std::uint8_t *p = m_flush->data();
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i + 8 <= m_flush->bytes(); i += 64) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      sum += w;
    }
    m_sink = sum;
  }
  [[nodiscard]] window_result timed(const std::function<void()> &step) override {
    return {time_step(step), 0};
  }
  [[nodiscard]] std::optional<stream_methods> stream_roofs() const override {
    return cpu_roofs::methods();
  }
  void read_stream(const void *p, std::size_t bytes) override {
    m_sink = cpu_roofs::read_sweep(p, bytes);
  }
  void write_stream(void *p, std::size_t bytes) override { cpu_roofs::write_fill(p, bytes); }
  [[nodiscard]] std::unique_ptr<compute_step> compute_ceiling(std::string_view type,
                                                              std::string &why_not) override {
    if (type == "fp32")
      return cpu_roofs::fp32_fma_step();
    why_not = fmt::format("the cpu device has no {} arithmetic loop (it measures fp32 only)", type);
    return nullptr;
  }
  void empty_step() override {}
  [[nodiscard]] resolution timer_resolution() override {
    return {timer_resolution_ms(),
            fmt::format("measured: smallest non-zero difference of {} consecutive "
                        "std::chrono::steady_clock reads",
                        timer_reads)};
  }
  [[nodiscard]] double clock_mhz() override { return read_cpu_mhz(); }
  void synchronize() override {}
  [[nodiscard]] void *stream() const override { return nullptr; }

  [[nodiscard]] std::optional<std::string> cannot_capture() const override {
    return "the cpu device cannot capture a step (graph launch needs CUDA)";
  }
  [[nodiscard]] std::unique_ptr<captured_step> capture(const std::function<void()> &) override {
    throw invalid_input("the cpu device cannot capture a step");
  }
  void replay(captured_step &) override {
    throw invalid_input("the cpu device cannot replay a step");
  }

private:
  llc_choice m_choice;
  std::uint64_t m_llc;
  std::unique_ptr<big_buffer> m_flush;
  volatile std::uint64_t m_sink = 0;
};

} // namespace

std::unique_ptr<device> make_cpu_device() { return std::make_unique<cpu_device>(); }

} // namespace prereg
