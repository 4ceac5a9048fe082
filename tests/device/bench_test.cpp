// The timing sweep (skipped unless asked for: prereg_device_tests --no-skip -tc='bench*'):
// every CUDA arm through the real backend at 65536x1024 fp32 and 65536x896 fp16 (and bf16
// 4096x8192), printed as a table of median time, GB/s and % of the measured copy ceiling with
// the report's bytes model. No timing assertions.
#include "device_helpers.hpp"

#include "spec/bytes_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

using namespace prereg;
using namespace prereg::device_test;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

void sweep(const std::string &op, dtype type, std::int64_t rows, std::int64_t cols,
           std::vector<arm_spec> arms) {
  const protocol p = make_protocol(op, type, {rows}, {cols}, std::move(arms), 30, 5);
  const run_plan plan = make_plan(p, 0xbe7c4);
  quiet_progress progress;
  const raw_run raw = measure_on_cuda(plan, progress);
  std::printf("\n%s %s %lldx%lld  ceiling %.0f GB/s  launch floor %.4f ms  timer res %.6f ms  "
              "flush %llu MiB  clock start %.0f MHz\n",
              op.c_str(), std::string(to_string(type)).c_str(), static_cast<long long>(rows),
              static_cast<long long>(cols), raw.instrument.ceiling_gbps,
              raw.instrument.launch_floor_ms, raw.instrument.timer_resolution_ms,
              static_cast<unsigned long long>(raw.instrument.flush_bytes >> 20),
              raw.instrument.clock_start_mhz);
  std::printf("%-14s %-8s %10s %10s %8s %8s %10s %-7s %s\n", "arm", "pass", "median_ms", "iqr_ms",
              "GB/s", "%ceil", "peak_MiB", "correct", "max_abs/max_rel");
  for (std::size_t i = 0; i < raw.cells.size(); ++i) {
    const cell_record &c = raw.cells[i];
    const correctness_record &k = raw.correctness[i];
    std::vector<double> s = c.samples_ms;
    std::sort(s.begin(), s.end());
    const double med = median(s);
    const double iqr = s.empty() ? 0 : s[s.size() * 3 / 4] - s[s.size() / 4];
    // The report's bytes model (docs/analysis.md): fwd ~ 2 M N s, fwd+bwd ~ 5 M N s.
    const auto bytes = static_cast<double>(bytes_per_step(op, type, c.key.pass, rows, cols, 1));
    const double gbps = med > 0 ? bytes / (med * 1e6) : 0;
    std::printf(
        "%-14s %-8s %10.4f %10.4f %8.0f %7.1f%% %10.2f %-7s %.2e/%.2e%s\n", c.key.arm.c_str(),
        std::string(to_string(c.key.pass)).c_str(), med, iqr, gbps,
        100.0 * gbps / raw.instrument.ceiling_gbps, static_cast<double>(c.peak_bytes) / (1 << 20),
        k.passed ? "pass" : "FAIL", k.max_abs_error, k.max_rel_error,
        c.error ? (" error: " + *c.error).c_str() : (k.passed ? "" : (" " + k.detail).c_str()));
    CHECK(k.passed);
    CHECK_FALSE(c.error.has_value());
  }
  std::fflush(stdout);
}

} // namespace

TEST_CASE("bench: the fused and unfused arms at the seed shapes" * doctest::skip()) {
  const std::vector<arm_spec> ln{{"ln.fused", "layernorm.fused", launch_mode::stream, 1},
                                 {"ln.unfused", "layernorm.unfused", launch_mode::stream, 1},
                                 {"ln.lockgroup", "layernorm.lockgroup", launch_mode::stream, 1},
                                 {"ln.fused.graph", "layernorm.fused", launch_mode::graph, 1}};
  const std::vector<arm_spec> rms{{"rms.fused", "rmsnorm.fused", launch_mode::stream, 1},
                                  {"rms.unfused", "rmsnorm.unfused", launch_mode::stream, 1}};
  sweep("layernorm", dtype::fp32, 65536, 1024, ln);
  sweep("rmsnorm", dtype::fp32, 65536, 1024, rms);
  sweep("layernorm", dtype::fp16, 65536, 896, ln);
  sweep("rmsnorm", dtype::fp16, 65536, 896, rms);
  sweep("layernorm", dtype::bf16, 4096, 8192, ln);
}
