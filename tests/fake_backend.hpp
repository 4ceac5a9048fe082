// A fake prereg::backend for tests: it measures nothing and returns planted raw facts
// (samples, memory, clocks, correctness, environment, instrument), so every defect detector,
// the run engine and the audit are tested without a device.
#pragma once

#include "prereg/backend.hpp"
#include "prereg/crypto.hpp"
#include "prereg/error.hpp"
#include "prereg/fs.hpp"
#include "prereg/json.hpp"
#include "prereg/protocol.hpp"
#include "prereg/run.hpp"
#include "prereg/store.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
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
  /// An error recorded for a cell (its samples are still those of `samples`).
  std::function<std::optional<std::string>(const cell_key &)> cell_error;
  /// Why the backend cannot run a kernel at a pass and shape (the engine turns it into a
  /// cell-skipped deviation), or nullopt.
  std::function<std::optional<std::string>(const arm_info &, pass_kind, std::int64_t rows,
                                           std::int64_t cols)>
      cannot_run;
  std::set<std::string> failing_arms;   ///< arms whose correctness check fails in every cell
  json other_processes = json::array(); ///< environment.other_processes
  instrument_record instrument = default_instrument();
  std::optional<std::string> throw_in_measure; ///< measure() throws error(exit 1) with this

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

/// The fake. Cells are recorded in plan order.
class fake_backend final : public backend {
public:
  explicit fake_backend(fake_plants plants) : m_plants(std::move(plants)) {}

  [[nodiscard]] std::string_view device() const override { return "cpu"; }

  [[nodiscard]] json probe() override { return environment(); }

  [[nodiscard]] std::optional<std::string> cannot_run(const arm_info &arm, pass_kind pass,
                                                      std::int64_t rows, std::int64_t cols, dtype,
                                                      std::int64_t) const override {
    if (!m_plants.cannot_run)
      return std::nullopt;
    return m_plants.cannot_run(arm, pass, rows, cols);
  }

  [[nodiscard]] raw_run measure(const run_plan &plan, progress_sink &progress) override {
    progress.phase("fake");
    if (m_plants.throw_in_measure)
      throw io_error(*m_plants.throw_in_measure);
    const protocol &proto = *plan.proto;
    raw_run raw;
    raw.environment = environment();
    raw.instrument = m_plants.instrument;
    std::size_t done = 0;
    for (const auto &key : plan.cells) {
      const bool fails = m_plants.failing_arms.count(key.arm) > 0;
      correctness_record c;
      c.key = key;
      c.max_abs_error = fails ? 0.5 : 1e-7;
      c.max_rel_error = fails ? 0.25 : 2e-7;
      c.passed = !fails;
      c.detail = fails ? "y[0] differs from the float64 reference" : "";
      raw.correctness.push_back(c);

      cell_record r;
      r.key = key;
      r.samples_ms = m_plants.samples ? m_plants.samples(key, proto.measurement.repetitions)
                                      : default_samples(key, proto.measurement.repetitions);
      r.peak_bytes = m_plants.peak_bytes ? m_plants.peak_bytes(key) : 4096;
      r.harness_bytes_in_window =
          m_plants.harness_bytes_in_window ? m_plants.harness_bytes_in_window(key) : 0;
      r.clock_mhz = m_plants.clock_mhz ? m_plants.clock_mhz(key) : 3000.0;
      if (m_plants.cell_error)
        r.error = m_plants.cell_error(key);
      raw.cells.push_back(std::move(r));
      progress.cell_done(++done, plan.cells.size());
    }
    return raw;
  }

  /// Default samples: arm "fused" at 0.1 ms, every other arm at 0.2 ms, scaled by rows/64.
  [[nodiscard]] static std::vector<double> default_samples(const cell_key &key, std::int64_t n) {
    const double base = (key.arm == "fused" ? 0.1 : 0.2) * static_cast<double>(key.rows) / 64.0;
    return steady_samples(base, n);
  }

private:
  [[nodiscard]] json environment() const {
    return {{"device_name", m_plants.device_name},
            {"driver", "fake-driver 1.0"},
            {"runtime", "fake-runtime 1.0"},
            {"other_processes", m_plants.other_processes}};
  }
  fake_plants m_plants;
};

/// A run_options::make_backend that builds a fake with `plants` (for any device name).
inline auto fake_factory(fake_plants plants) {
  return [plants](const std::string &, int) -> std::unique_ptr<backend> {
    return std::make_unique<fake_backend>(plants);
  };
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
    o.make_backend = fake_factory(std::move(plants));
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
