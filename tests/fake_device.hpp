// A fake prereg::device for tests: host memory like the CPU device, but its timed windows,
// clocks, memory peaks and instrument return planted facts (samples, memory, clocks,
// correctness, environment, instrument), so the real measurement engine, every defect
// detector, the run engine and the audit are tested without a device. The arms are the real
// CPU arms; a planted correctness failure corrupts what the engine downloads.
#pragma once

#include "base/fs.hpp"
#include "base/json.hpp"
#include "base/rng.hpp"
#include "crypto/crypto.hpp"
#include "device/device.hpp"
#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "run/run.hpp"
#include "spec/arm_code.hpp"
#include "spec/protocol.hpp"
#include "store/store.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace prereg::testing {

/// What the fake plants. Every function gets the cell; the defaults give a clean run: stable,
/// trend-free samples well above the timer resolution and below the ceiling, non-zero peak
/// memory, no harness allocation, a steady clock, passing correctness, no other processes.
struct fake_plants {
  std::string device_name = "Fake Device 1";
  /// Samples of a cell; `n` is the protocol's repetitions.
  std::function<std::vector<double>(const cell_key &, std::int64_t n)> samples;
  std::function<std::uint64_t(const cell_key &)> peak_bytes;
  std::function<std::uint64_t(const cell_key &)> harness_bytes_in_window;
  std::function<double(const cell_key &)> clock_mhz;
  /// Why the device cannot take a kernel at a pass and shape (the engine turns it into a
  /// cell-skipped deviation), or nullopt.
  std::function<std::optional<std::string>(const arm_info &, pass_kind, std::int64_t rows,
                                           std::int64_t cols)>
      cannot_run;
  std::set<std::string> failing_arms;   ///< arms whose correctness check fails in every cell
  json other_processes = json::array(); ///< environment.other_processes
  instrument_record instrument = default_instrument();
  std::optional<std::string> throw_in_measure; ///< the run's measurement throws error(exit 1)
  /// Harness allocations larger than this fail (std::bad_alloc), as a full device would.
  std::optional<std::size_t> max_allocation;
  /// Work a cell's arm leaves pending after each sample's window [ms], found by drain() on top
  /// of the idle drain (0.01 ms); unset: the fake cannot tell (drain() gives nullopt).
  std::function<double(const cell_key &)> off_window_ms;
  /// Warm-up window times of a cell by warm-up index (default: a steady 0.1 ms).
  std::function<double(const cell_key &, std::size_t i)> warmup_ms;
  /// A planted kernel clock: the kernels of a cell's i-th kept sample; unset: no kernel clock.
  /// Every other window (instrument, warm-up) reports no kernels.
  std::function<window_kernels(const cell_key &, std::size_t i)> kernels;
  std::uint64_t kernel_records_dropped = 0;
  /// A planted state reader: the device's state after a cell's i-th kept sample; unset: the
  /// fake has no state reader.
  std::function<device_state_sample(const cell_key &, std::size_t i)> states;

  /// Roofs at the planted ceilings (with_roofs): read 1200 GB/s, write 900 GB/s over 1 MiB
  /// windows, and a 100 TFLOP/s fp32 ceiling of 1e9 FLOPs a call; a type not listed in
  /// `compute` has no compute ceiling (the fake says why).
  static roofs_record default_roofs() {
    roofs_record r;
    const double mb = 1u << 20;
    r.read = {"fake read sweep", 1u << 20, {}, 0.0};
    for (const double g : {1190.0, 1200.0, 1210.0})
      r.read.samples_ms.push_back(mb / (g * 1e9) * 1e3);
    r.write = {"fake write fill", 1u << 20, {}, 0.0};
    for (const double g : {890.0, 900.0, 910.0})
      r.write.samples_ms.push_back(mb / (g * 1e9) * 1e3);
    compute_roof c;
    c.method = "fake GEMM";
    c.shape = "m=1000 n=1000 k=500";
    c.flops = 1000000000;
    c.samples_ms = {0.0101, 0.01, 0.0099};
    r.compute["fp32"] = c;
    return r;
  }
  /// This plant with roofs (schema_version 8 reports).
  fake_plants with_roofs(roofs_record r = default_roofs()) const {
    fake_plants p = *this;
    p.instrument.roofs = std::move(r);
    return p;
  }

  /// A clean instrument: 1000 GB/s ceiling, 1 ns timer, 64 MiB flush over a 16 MiB cache.
  static instrument_record default_instrument() {
    instrument_record in;
    in.ceiling_gbps = 1000;
    in.ceiling_samples_gbps = {999, 1000, 1001};
    in.ceiling_bytes = 256u << 20;
    in.launch_floor_ms = 0.001;
    in.timer_resolution_ms = 1e-6;
    in.flush_bytes = 64u << 20;
    in.flush_method = "read-sweep";
    in.llc_bytes = 16u << 20;
    in.clock_start_mhz = 3000;
    return in;
  }
};

/// Trend-free samples around `base_ms`: a repeating +-1% pattern (Spearman rho near 0).
inline std::vector<double> steady_samples(double base_ms, std::int64_t n) {
  static constexpr double pattern[] = {0.0, 0.01, -0.01, 0.005, -0.005};
  std::vector<double> s;
  for (std::int64_t i = 0; i < n; ++i)
    s.push_back(base_ms * (1.0 + pattern[(i * 3) % 5]));
  return s;
}

/// Samples that rise with the repetition index (drift).
inline std::vector<double> drifting_samples(double base_ms, std::int64_t n) {
  std::vector<double> s;
  for (std::int64_t i = 0; i < n; ++i)
    s.push_back(base_ms * (1.0 + 0.02 * static_cast<double>(i)));
  return s;
}

/// Samples alternating between base and 3 x base (IQR/median far above 0.5).
inline std::vector<double> unstable_samples(double base_ms, std::int64_t n) {
  std::vector<double> s;
  for (std::int64_t i = 0; i < n; ++i)
    s.push_back(base_ms * ((i % 2) == 0 ? 1.0 : 3.0));
  return s;
}

/// What the engine told the fake through its hooks: the cell being checked or sampled.
struct fake_state {
  std::optional<cell_key> checking; ///< the cell whose correctness run is under way
  std::optional<cell_key> sampling; ///< the cell whose next window is a kept sample
  std::optional<cell_key> last;     ///< the cell of the last kept sample
  std::optional<cell_key> warming;  ///< the cell of the last warm-up (set by the test's hook)
  bool drained_last = false;        ///< drain() has reported the last sample's pending work
  std::vector<std::pair<cell_key, std::size_t>> taken;   ///< kept samples per cell so far
  std::vector<std::pair<cell_key, std::size_t>> warmups; ///< warm-ups per cell so far
  static std::size_t next(std::vector<std::pair<cell_key, std::size_t>> &v, const cell_key &k) {
    for (auto &[key, n] : v)
      if (key == k)
        return n++;
    v.emplace_back(k, 1);
    return 0;
  }
  std::size_t next_sample(const cell_key &k) { return next(taken, k); }
  std::size_t next_warmup(const cell_key &k) { return next(warmups, k); }
};

/// The fake device.
class fake_device final : public device {
public:
  fake_device(fake_plants plants, std::shared_ptr<fake_state> state, std::int64_t repetitions)
      : m_plants(std::move(plants)), m_state(std::move(state)), m_reps(repetitions) {}

  [[nodiscard]] std::string_view kind() const override { return "cpu"; }
  [[nodiscard]] json probe() override {
    return {{"device_name", m_plants.device_name},
            {"driver", "fake-driver 1.0"},
            {"runtime", "fake-runtime 1.0"},
            {"other_processes", m_plants.other_processes}};
  }
  [[nodiscard]] std::optional<std::string> cannot_take(const arm_info &arm, pass_kind pass,
                                                       std::int64_t rows,
                                                       std::int64_t cols) const override {
    if (!m_plants.cannot_run)
      return std::nullopt;
    return m_plants.cannot_run(arm, pass, rows, cols);
  }
  [[nodiscard]] std::uint64_t memory_budget() const override { return std::uint64_t{1} << 40; }
  [[nodiscard]] std::int64_t processors() const override { return 1; }
  [[nodiscard]] instrument_plan instrument() const override {
    instrument_plan p;
    p.llc_bytes = m_plants.instrument.llc_bytes;
    p.flush_bytes = m_plants.instrument.flush_bytes;
    p.flush_method = m_plants.instrument.flush_method;
    p.ceiling_bytes = 1 << 16; // really copied; the window reports the planted bandwidth
    p.ceiling_copies = static_cast<int>(m_plants.instrument.ceiling_samples_gbps.size());
    p.floor_steps = 3;
    if (m_plants.instrument.roofs) {
      p.stream_bytes = m_plants.instrument.roofs->read.bytes;
      p.stream_runs = static_cast<int>(m_plants.instrument.roofs->read.samples_ms.size());
      p.compute_runs = 3;
      p.compute_warmup = 1;
    }
    return p;
  }
  [[nodiscard]] std::optional<stream_methods> stream_roofs() const override {
    if (!m_plants.instrument.roofs)
      return std::nullopt;
    return stream_methods{m_plants.instrument.roofs->read.method,
                          m_plants.instrument.roofs->write.method};
  }
  void read_stream(const void *, std::size_t) override { m_next = window_kind::read; }
  void write_stream(void *, std::size_t) override { m_next = window_kind::write; }
  [[nodiscard]] std::unique_ptr<compute_step> compute_ceiling(std::string_view type,
                                                              std::string &why_not) override {
    const auto &roofs = m_plants.instrument.roofs;
    const compute_roof *planted = nullptr;
    if (roofs)
      if (const auto it = roofs->compute.find(std::string(type)); it != roofs->compute.end())
        planted = &it->second;
    if (planted == nullptr || !planted->unknown.empty()) {
      why_not = planted != nullptr ? planted->unknown
                                   : "the fake device has no " + std::string(type) + " ceiling";
      return nullptr;
    }
    auto step = std::make_unique<fake_compute>(*this, planted->samples_ms);
    step->method = planted->method;
    step->shape = planted->shape;
    step->flops = planted->flops;
    return step;
  }
  [[nodiscard]] void *allocate(std::size_t bytes) override {
    if (m_plants.max_allocation && bytes > *m_plants.max_allocation)
      throw std::bad_alloc();
    void *p = std::calloc(std::max<std::size_t>(bytes, 1), 1);
    if (p == nullptr)
      throw std::bad_alloc();
    return p;
  }
  void release(void *p) noexcept override { std::free(p); }
  [[nodiscard]] std::unique_ptr<tracked_allocator> make_arm_allocator() override {
    return std::make_unique<allocator>(*this);
  }
  void upload(void *dst, const void *src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void download(void *dst, const void *src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
    if (m_state->checking && m_plants.failing_arms.count(m_state->checking->arm) > 0 &&
        bytes >= sizeof(float))
      *static_cast<float *>(dst) += 0.5f; // a planted wrong output
  }
  void copy(void *dst, const void *src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
    m_next = window_kind::copy;
  }
  void fill_uniform(void *p, std::size_t n, dtype type, double lo, double hi, std::uint64_t seed,
                    std::int64_t, double) override {
    rng g(seed);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = lo + (hi - lo) * (0.25 + 0.5 * g.uniform());
      if (type == dtype::fp32)
        static_cast<float *>(p)[i] = static_cast<float>(v);
      else
        static_cast<std::uint16_t *>(p)[i] = 0x3c00; // 1.0 in fp16
    }
  }
  void prepare_flush() override {}
  void flush() override {}
  [[nodiscard]] window_result timed(const std::function<void()> &step) override {
    if (m_clock)
      m_windows.emplace_back(); // no kernels, unless a kept sample's planted ones
    m_next = window_kind::step;
    step();
    const window_kind kind = m_next;
    if (kind == window_kind::copy) {
      // The planted samples, scaled so that their median is the planted ceiling.
      std::vector<double> g = m_plants.instrument.ceiling_samples_gbps;
      std::vector<double> sorted = g;
      std::sort(sorted.begin(), sorted.end());
      const double scale = m_plants.instrument.ceiling_gbps / sorted[sorted.size() / 2];
      const double gbps = g[m_copies++ % g.size()] * scale;
      return {2.0 * static_cast<double>(1 << 16) / (gbps * 1e9) * 1e3, 0};
    }
    if (kind == window_kind::empty)
      return {m_plants.instrument.launch_floor_ms, 0};
    if (kind == window_kind::read || kind == window_kind::write) {
      const auto &r = kind == window_kind::read ? m_plants.instrument.roofs->read.samples_ms
                                                : m_plants.instrument.roofs->write.samples_ms;
      return {r[(kind == window_kind::read ? m_reads++ : m_writes++) % r.size()], 0};
    }
    if (kind == window_kind::compute) {
      const std::vector<double> &r = *m_compute_samples;
      return {r[m_computes++ % r.size()], 0};
    }
    if (!m_state->sampling) { // warmup
      if (m_plants.warmup_ms && m_state->warming)
        return {m_plants.warmup_ms(*m_state->warming, m_state->next_warmup(*m_state->warming)), 0};
      return {0.1, 0};
    }
    const cell_key k = *m_state->sampling;
    m_state->sampling.reset();
    m_state->last = k;
    m_state->drained_last = false;
    const std::size_t i = m_state->next_sample(k);
    if (m_plants.kernels && m_clock)
      m_windows.back() = m_plants.kernels(k, i);
    const std::vector<double> s =
        m_plants.samples ? m_plants.samples(k, m_reps) : default_samples(k, m_reps);
    return {s.at(i % s.size()),
            m_plants.harness_bytes_in_window ? m_plants.harness_bytes_in_window(k) : 0};
  }
  void empty_step() override { m_next = window_kind::empty; }
  [[nodiscard]] resolution timer_resolution() override {
    if (m_plants.throw_in_measure)
      throw io_error(*m_plants.throw_in_measure);
    return {m_plants.instrument.timer_resolution_ms, ""};
  }
  [[nodiscard]] double clock_mhz() override {
    if (!m_state->last)
      return m_plants.instrument.clock_start_mhz;
    return m_plants.clock_mhz ? m_plants.clock_mhz(*m_state->last) : 3000.0;
  }
  void synchronize() override {}
  [[nodiscard]] std::optional<double> drain() override {
    if (!m_plants.off_window_ms)
      return std::nullopt;
    const double idle = 0.01;
    if (!m_state->last || m_state->drained_last)
      return idle;
    m_state->drained_last = true; // the pending work of the last sample, once
    return idle + m_plants.off_window_ms(*m_state->last);
  }
  [[nodiscard]] std::optional<std::string> kernel_clock(bool on, std::string &why_not) override {
    if (!m_plants.kernels) {
      why_not = "the fake device has no kernel clock";
      return std::nullopt;
    }
    m_clock = on;
    return "fake kernel clock";
  }
  [[nodiscard]] std::vector<window_kernels> take_window_kernels() override {
    return std::exchange(m_windows, {});
  }
  [[nodiscard]] std::uint64_t kernel_records_dropped() override {
    return m_plants.kernel_records_dropped;
  }
  [[nodiscard]] std::optional<std::string> state_reader(std::string &why_not) override {
    if (!m_plants.states) {
      why_not = "the fake device has no state reader";
      return std::nullopt;
    }
    return "fake NVML";
  }
  [[nodiscard]] device_state_sample read_state() override {
    if (!m_plants.states || !m_state->last)
      return {}; // the instrument's cost readings
    for (const auto &[key, n] : m_state->taken)
      if (key == *m_state->last)
        return m_plants.states(key, n - 1);
    return {};
  }
  [[nodiscard]] void *stream() const override { return nullptr; }
  [[nodiscard]] std::optional<std::string> cannot_capture() const override {
    return "the fake device cannot capture";
  }
  [[nodiscard]] std::unique_ptr<captured_step> capture(const std::function<void()> &) override {
    throw io_error("the fake device cannot capture");
  }
  void replay(captured_step &) override { throw io_error("the fake device cannot replay"); }

  /// Default samples: arm "fused" at 0.1 ms, every other arm at 0.2 ms, scaled by rows/64.
  [[nodiscard]] static std::vector<double> default_samples(const cell_key &key, std::int64_t n) {
    const double base = (key.arm == "fused" ? 0.1 : 0.2) * static_cast<double>(key.rows) / 64.0;
    return steady_samples(base, n);
  }

private:
  enum class window_kind { step, copy, empty, read, write, compute };
  /// A planted compute ceiling's step: its windows report the planted times, warm-up first.
  class fake_compute final : public compute_step {
  public:
    fake_compute(fake_device &dev, const std::vector<double> &samples) : m_dev(dev) {
      m_dev.m_compute_samples = &samples;
      m_dev.m_computes = samples.size() - 1; // the warm-up call reports the last planted time
    }
    void run() override { m_dev.m_next = window_kind::compute; }

  private:
    fake_device &m_dev;
  };
  /// Host memory whose peak reports the planted peak of the last sampled cell.
  class allocator final : public tracked_allocator {
  public:
    explicit allocator(fake_device &dev) : m_dev(dev) {}
    ~allocator() override { release_all(true); }
    void *allocate(std::size_t bytes) override {
      void *p = std::malloc(std::max<std::size_t>(bytes, 1));
      if (p == nullptr)
        throw std::bad_alloc();
      m_blocks.emplace_back(p, bytes);
      m_current += bytes;
      return p;
    }
    void release(void *p) override {
      for (auto it = m_blocks.begin(); it != m_blocks.end(); ++it)
        if (it->first == p) {
          m_current -= it->second;
          std::free(p);
          m_blocks.erase(it);
          return;
        }
    }
    [[nodiscard]] std::uint64_t current() const override { return m_current; }
    [[nodiscard]] std::uint64_t peak() const override {
      const auto &last = m_dev.m_state->last;
      if (!last)
        return 0;
      return m_dev.m_plants.peak_bytes ? m_dev.m_plants.peak_bytes(*last) : 4096;
    }
    void reset_peak() override {}
    std::uint64_t release_all(bool) override {
      const std::uint64_t held = m_current;
      for (auto &[p, n] : m_blocks)
        std::free(p);
      m_blocks.clear();
      m_current = 0;
      return held;
    }

  private:
    fake_device &m_dev;
    std::vector<std::pair<void *, std::size_t>> m_blocks;
    std::uint64_t m_current = 0;
  };

  fake_plants m_plants;
  std::shared_ptr<fake_state> m_state;
  std::int64_t m_reps;
  window_kind m_next = window_kind::step;
  std::size_t m_copies = 0;
  std::size_t m_reads = 0, m_writes = 0, m_computes = 0;
  const std::vector<double> *m_compute_samples = nullptr;
  bool m_clock = false;
  std::vector<window_kernels> m_windows; ///< timed with the clock on, not yet taken
};

/// Sets run options to measure on a fake with `plants` (for any device name): the device, the
/// real built-in CPU arms, and the hooks through which the fake learns which cell it serves.
inline void use_fake(run_options &o, fake_plants plants, std::int64_t repetitions) {
  auto state = std::make_shared<fake_state>();
  o.make_device = [plants, state, repetitions](const std::string &,
                                               int) -> std::unique_ptr<device> {
    *state = fake_state{};
    return std::make_unique<fake_device>(plants, state, repetitions);
  };
  o.resolve_arm = [](const arm_spec &, const arm_info &arm) {
    const arm_info *cpu = find_arm("cpu", arm.name);
    return cpu != nullptr ? builtin_arm_code(*cpu) : arm_code{};
  };
  o.hooks.on_sample = [state](const cell_key &k) {
    state->sampling = k;
    state->checking.reset(); // downloads after the gate are spot checks: never corrupted
  };
  o.hooks.on_check = [state](const cell_key &k) { state->checking = k; };
  o.hooks.on_warmup = [state](const cell_key &k) { state->warming = k; };
}

/// A small two-arm CPU protocol: 2 shapes x fwd, 20 repetitions, 200 bootstrap resamples.
/// P1 (fused faster at 128 rows) and P2 (fused needs no more memory) hold on a clean run.
inline const char *const test_protocol_yaml = R"yaml(prereg: 1
id: fake_ln
title: "Fake LayerNorm"
hypothesis: "The fused arm is faster than the unfused one and needs no more memory"
device: cpu
operation: layernorm
dtype: fp32
shapes:
  rows: [64, 128]
  cols: [256]
passes: [fwd]
arms:
  - id: unfused
    kernel: layernorm.unfused
  - id: fused
    kernel: layernorm.fused
measurement:
  repetitions: 20
  warmup: 2
analysis:
  bootstrap_resamples: 200
predictions:
  - id: P1
    claim: "At 128 rows the fused forward is faster than the unfused one"
    at: {rows: 128, pass: fwd}
    expect: "fused < unfused"
  - id: P2
    claim: "The fused arm needs no more memory than the unfused one"
    at: {pass: fwd}
    expect: "peak_mb(fused) <= peak_mb(unfused)"
)yaml";

/// A temporary folder with a store, a signing key (mode 0600) and a reports folder; removed
/// with everything in it on destruction.
class temp_lab {
public:
  temp_lab() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "prereg-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw io_error("mkdtemp failed", tmpl);
    root = tmpl;
    store_root = root / "store";
    key_path = root / "keys" / "signing.key";
    out_dir = root / "reports";
    std::filesystem::create_directories(key_path.parent_path());
    signing_key::generate().save(key_path);
  }
  temp_lab(const temp_lab &) = delete;
  temp_lab &operator=(const temp_lab &) = delete;
  ~temp_lab() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }

  [[nodiscard]] store st() const { return store(store_root); }
  [[nodiscard]] signing_key key() const { return signing_key::load(key_path); }

  /// Validates and freezes `yaml`, writes it to protocol.yaml; returns the hash.
  std::string freeze(std::string_view yaml = test_protocol_yaml) {
    const protocol p = parse_protocol(yaml, "protocol.yaml");
    write_file_atomic(root / "protocol.yaml", yaml);
    hash = st().freeze(yaml, p, key()).hash;
    return hash;
  }

  /// Options to run `target` (default: the frozen hash) on a fake with `plants`.
  [[nodiscard]] run_options options(fake_plants plants = {}, std::string target = {}) const {
    run_options o;
    o.target = target.empty() ? hash : std::move(target);
    o.store_root = store_root;
    o.key_path = key_path;
    o.out_dir = out_dir;
    o.quiet = true;
    use_fake(o, std::move(plants), 20); // test_protocol_yaml's repetitions
    return o;
  }

  /// Runs the frozen protocol on a fake with `plants`; returns the report folder.
  std::filesystem::path run(fake_plants plants = {}) {
    return run_protocol(options(std::move(plants)));
  }

  std::filesystem::path root;
  std::filesystem::path store_root;
  std::filesystem::path key_path;
  std::filesystem::path out_dir;
  std::string hash; ///< of the last freeze
};

/// A report folder's report.json, parsed.
inline json read_report(const std::filesystem::path &dir) {
  return parse_json_strict(read_file(dir / "report.json"), (dir / "report.json").string());
}

} // namespace prereg::testing
