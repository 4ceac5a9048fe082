// `prereg merge` (docs/scale-out.md): shards of one run into one signed report, or complete
// reports of one protocol from several devices into a replication report; and its audit.
#pragma once

#include "audit/audit.hpp"
#include "base/json.hpp"
#include "crypto/crypto.hpp"
#include "store/store.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg {

/// The merged report format's version (report.json member `merge_version`).
inline constexpr int merge_format_version = 1;
/// The layout of the merged pages this build writes (tool.renderer; absent = 1).
inline constexpr int merged_renderer_version = 2;
inline constexpr const char *merge_payload_type = "application/vnd.prereg.merge+json";

enum class merge_kind { shards, replication };

struct merge_options {
  std::vector<std::filesystem::path> parts; ///< report folders
  merge_kind kind = merge_kind::shards;
  std::filesystem::path out_dir; ///< reports root: the report goes to out_dir/<id>/<merge id>
};

/// Audits every part (each must pass), checks the merge rules (one protocol hash; shards: one
/// device model, one N, no shard twice, every shard present — else exit 3 naming the missing
/// cells; replication: complete reports, as many as the protocol's replication.devices), builds
/// the merged report, signs it, writes it with copies of the parts under a temp folder renamed
/// into place (never over an existing folder) and appends a `merge` ledger entry. Returns the
/// folder.
std::filesystem::path merge_reports(const store &s, const merge_options &o, const trust_root &trust,
                                    const signing_key &key);

/// True if `dir`/report.json is a merged report (it has the member merge_version).
[[nodiscard]] bool is_merged_report(const std::filesystem::path &dir);

/// The audit of a merged report: envelope, payload, protocol, parts (each part's own audit, from
/// the copies the report keeps), merge (the merged report rebuilt from the parts, byte for
/// byte), pages, ledger (its merge entry).
[[nodiscard]] audit_result
audit_merged_report(const std::filesystem::path &dir, const store &s, const trust_root &trust,
                    const std::vector<std::filesystem::path> &checkpoints);

/// The merged report's report.md and report.html from its report.json object.
[[nodiscard]] std::string render_merged_markdown(const json &merged);
[[nodiscard]] std::string render_merged_html(const json &merged);

/// The pooled verdict of per-device verdicts by a replication rule needing `threshold` of
/// `devices` confirmations: confirmed when at least `threshold` confirm; refuted when more than
/// devices - threshold refute (confirmation is out of reach); else inconclusive.
[[nodiscard]] std::string pooled_verdict(std::int64_t confirmed, std::int64_t refuted,
                                         std::int64_t devices, std::int64_t threshold);

} // namespace prereg
