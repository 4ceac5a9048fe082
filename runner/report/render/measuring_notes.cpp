// The cache policy and the copy ceiling's source, in words (measuring_notes.hpp).
#include "report/render/measuring_notes.hpp"

#include "base/time.hpp"
#include "report/render/body.hpp"
#include "report/render/format.hpp"

#include <fmt/format.h>

#include <cmath>

namespace prereg::render {

std::string cache_policy_text(const report_document &report) {
  const report_instrument &in = report.instrument;
  const std::string device = text(report.protocol.body, "device", "device");
  if (in.flush_bytes == 0)
    return "not flushed (`measurement: {l2_flush: false}`): each sample ran on the caches the "
           "previous call left, so these are warm-cache times";
  const std::string llc =
      in.llc_bytes > 0
          ? fmt::format("; the {}'s last-level cache holds {}", device == "cuda" ? "GPU" : "CPU",
                        bytes_text(static_cast<double>(in.llc_bytes)))
          : std::string();
  const json &env = report.environment;
  if (env.is_object() && env.contains("llc_override") && env["llc_override"].is_string()) {
    // The tests' smaller cache (PREREG_CPU_LLC_MB, docs/cpu.md): the sweep may not clear it.
    const auto detected = env.value("llc_bytes_detected", json(0));
    return fmt::format(
        "swept before each sample (a cache {} of {}), sized for a last-level cache of {} set by "
        "{} where the CPU reports {}: a sample may run on warm caches, and the ceilings may be "
        "cache speeds; a setting for tests, not for claims",
        in.flush_method.empty() ? "flush" : in.flush_method,
        bytes_text(static_cast<double>(in.flush_bytes)),
        bytes_text(static_cast<double>(in.llc_bytes)), env["llc_override"].get<std::string>(),
        detected.is_number() && detected.get<double>() > 0 ? bytes_text(detected.get<double>())
                                                           : std::string("an unknown size"));
  }
  return fmt::format(
      "flushed before each sample (a {} {} of {}{}): every sample is a cold-cache time, which "
      "is longer than what tools that repeat a call on warm caches report; a protocol with "
      "`measurement: {{l2_flush: false}}` times warm caches instead",
      device == "cuda" ? "L2" : "cache", in.flush_method.empty() ? "flush" : in.flush_method,
      bytes_text(static_cast<double>(in.flush_bytes)), llc);
}

std::optional<double> reused_ceiling_age_s(const report_document &report) {
  const auto &entry = report.instrument.ceiling_reused;
  if (!entry || !entry->is_object())
    return std::nullopt;
  const auto measured = rfc3339_seconds(text(*entry, "measured_at"));
  const auto started = rfc3339_seconds(report.run.started_at);
  if (!measured || !started)
    return std::nullopt;
  return *started - *measured;
}

std::string ceiling_source_text(const report_document &report) {
  const report_instrument &in = report.instrument;
  const std::string value =
      std::isfinite(in.ceiling_gbps) ? gbps_text(in.ceiling_gbps) : std::string("not measured");
  if (!in.ceiling_reused)
    return fmt::format("measured in this run: {}", value);
  const auto age = reused_ceiling_age_s(report);
  const std::string when = age ? fmt::format("{:.0f} min before this run", std::floor(*age / 60.0))
                               : "at a time unknown";
  return fmt::format("reused: {}, measured {} by {} on this device and build (not measured "
                     "again: `prereg try` reuses one up to an hour old, a protocol with "
                     "`measurement: {{ceiling: reuse}}` asks a run to)",
                     value, when, text(*in.ceiling_reused, "source", "an earlier run"));
}

} // namespace prereg::render
