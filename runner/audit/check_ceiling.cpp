// Part of the `statistics` check: where the copy ceiling came from (docs/audit.md). A run that
// reused an earlier measurement records the signed cache entry it took; the audit cannot measure
// again, so it checks that entry instead.
#include "audit/checks.hpp"

#include "base/time.hpp"
#include "crypto/signed_json.hpp"

#include <fmt/format.h>

#include <cmath>

namespace prereg::audit_detail {
namespace {

/// The entry is signed by a key that also signed the report's envelope, and verifies.
void check_entry_signature(const audit_context &ctx, const json &entry) {
  const std::string signer = record_signer(entry);
  bool signed_report = false;
  for (const auto &s : ctx.envelope().signatures)
    signed_report = signed_report || (s.is_object() && s.value("keyid", "") == signer);
  if (signer.empty() || !signed_report)
    fail("instrument.ceiling_reused is not signed by the report's signer");
  const auto key = ctx.key(signer);
  if (!key || !verify_record(entry, *key))
    fail("instrument.ceiling_reused: its signature does not verify");
}

/// The entry is of this device and this build, and its values are the instrument's.
void check_entry_facts(const report_document &doc, const json &entry) {
  const report_instrument &in = doc.instrument;
  const json identity = entry.value("identity", json::object());
  const json build = identity.value("build", json::object());
  if (build.value("version", "") != doc.tool.version ||
      build.value("git_commit", "") != doc.tool.git_commit ||
      build.value("build_flags", "") != doc.tool.build_flags)
    fail("instrument.ceiling_reused was measured by another build than the report's");
  const json device = identity.value("device", json::object());
  if (device.value("kind", "") != doc.protocol.body.value("device", ""))
    fail("instrument.ceiling_reused was measured on another kind of device");
  for (const auto &[k, v] : device.items())
    if (k != "kind" && (!doc.environment.contains(k) || doc.environment.at(k) != v))
      fail(fmt::format("instrument.ceiling_reused was measured on another device: its {} is "
                       "not the environment's",
                       k));
  bool same = false;
  try {
    same =
        entry.at("ceiling_gbps").get<double>() == in.ceiling_gbps &&
        entry.at("ceiling_samples_gbps").get<std::vector<double>>() == in.ceiling_samples_gbps &&
        entry.at("ceiling_bytes").get<std::uint64_t>() == in.ceiling_bytes &&
        // the copies' flush; the samples' is recorded only when they were flushed
        (in.flush_bytes == 0 || (entry.at("flush_bytes").get<std::uint64_t>() == in.flush_bytes &&
                                 entry.at("flush_method").get<std::string>() == in.flush_method));
  } catch (const std::exception &) {
    same = false;
  }
  if (!same)
    fail("instrument.ceiling_reused holds other values than the instrument's ceiling and flush");
}

} // namespace

std::string check_ceiling(const audit_context &ctx) {
  // The tool part only for a reused ceiling: a renderer this build lacks fails the pages alone.
  if (!ctx.doc(report_part::instrument).instrument.ceiling_reused)
    return "; ceiling: measured in this run";
  const report_document &doc =
      ctx.doc(report_part::instrument | report_part::run | report_part::tool |
              report_part::environment | report_part::protocol);
  const json &entry = *doc.instrument.ceiling_reused;
  if (!entry.is_object())
    fail("instrument.ceiling_reused is not an object");
  const json measurement = doc.protocol.body.value("measurement", json::object());
  if (measurement.value("ceiling", "measure") != "reuse")
    fail("the copy ceiling was reused, but the protocol does not say `measurement.ceiling: "
         "reuse`");
  check_entry_signature(ctx, entry);
  check_entry_facts(doc, entry);
  const auto measured = rfc3339_seconds(entry.value("measured_at", ""));
  const auto started = rfc3339_seconds(doc.run.started_at);
  if (!measured || !started)
    fail("instrument.ceiling_reused.measured_at or run.started_at is not an RFC 3339 time");
  const double age = *started - *measured;
  if (age < 0 || age > ceiling_reuse_max_age_s)
    fail(fmt::format("instrument.ceiling_reused was measured {:.0f} s before the run started, "
                     "not within 0 to {:.0f} s",
                     age, ceiling_reuse_max_age_s));
  return fmt::format("; ceiling: reused, {:.0f} min old, measured by {} (its signed entry "
                     "verifies)",
                     std::floor(age / 60.0), entry.value("source", "an earlier run"));
}

} // namespace prereg::audit_detail
