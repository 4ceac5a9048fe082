// The audit of a merged report: envelope, protocol, parts (each part's own audit, from the copies
// the report keeps), merge (rebuilt from the parts, byte for byte), pages, ledger.
#include "run/merge.hpp"

#include "base/fs.hpp"
#include "run/merge/build.hpp"
#include "run/merge/rules.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <stdexcept>

namespace prereg {
namespace fs = std::filesystem;
namespace {

using merge_detail::list_some;
using merge_detail::part;

[[noreturn]] void fail(const std::string &why) { throw std::runtime_error(why); }

// What the checks read and what each leaves for the next.
struct merged_audit {
  const fs::path &dir;
  const store &s;
  const trust_root &trust;
  const std::vector<fs::path> &checkpoints;
  std::string bytes; ///< report.json
  json report;
  std::vector<std::string> signers;
  std::vector<part> parts;
  std::optional<protocol> proto;
};

void run_check(audit_result &result, const char *name, const std::function<std::string()> &check) {
  audit_check c{name, false, {}};
  try {
    c.detail = check();
    c.passed = true;
  } catch (const std::exception &e) {
    c.detail = escape_control(e.what());
  }
  result.checks.push_back(std::move(c));
}

void verify_signatures(merged_audit &a, const json &env, const std::string &payload) {
  const json &sigs = env.at("signatures");
  if (!sigs.is_array() || sigs.empty())
    fail("the envelope holds no signature");
  for (const auto &sig : sigs) {
    const std::string keyid = sig.value("keyid", "");
    const auto k = a.trust.find(a.s, keyid);
    if (!k)
      fail(fmt::format("signature by an unknown or unpinned key {}", keyid));
    if (!k->verify(dsse_pae(merge_payload_type, payload), base64_decode(sig.value("sig", ""))))
      fail(fmt::format("the signature by {} does not verify", keyid.substr(0, 12)));
    a.signers.push_back(keyid);
  }
}

std::string check_envelope(merged_audit &a) {
  a.bytes = read_file(a.dir / "report.json");
  a.report = parse_json_strict(a.bytes, (a.dir / "report.json").string());
  const json env = parse_json_strict(read_file(a.dir / "report.dsse.json"),
                                     (a.dir / "report.dsse.json").string());
  if (env.value("payloadType", "") != merge_payload_type)
    fail(fmt::format("payloadType is not {}", merge_payload_type));
  const std::string payload = base64_decode(env.value("payload", ""));
  if (payload != a.bytes)
    fail("report.json is not the signed payload");
  if (canonical_json(a.report) != a.bytes)
    fail("report.json is not in RFC 8785 canonical form");
  verify_signatures(a, env, payload);
  return fmt::format("{} signature(s) verify over the DSSE PAE of report.json ({})",
                     a.signers.size(), merge_payload_type);
}

std::string check_protocol(merged_audit &a) {
  const std::string hash = a.report.at("protocol").at("hash").get<std::string>();
  const json &body = a.report.at("protocol").at("body");
  if (protocol_hash(body) != hash)
    fail("protocol.body does not hash to protocol.hash");
  const frozen_protocol fp = a.s.load(hash);
  if (fp.canonical != canonical_json(body))
    fail("protocol.body differs from the frozen copy");
  if (canonical_json(fp.freeze) != canonical_json(a.report.at("protocol").at("freeze")))
    fail("protocol.freeze differs from the store's freeze record");
  a.proto = fp.proto;
  return fmt::format("body hashes to {}, equals the frozen copy; freeze record equals the "
                     "store's",
                     hash.substr(0, 12));
}

// The parts the report keeps under its own folder.
std::vector<part> kept_parts(const merged_audit &a) {
  std::vector<part> parts;
  for (const auto &p : a.report.at("parts")) {
    const fs::path rel = p.at("path").get<std::string>();
    if (rel.is_absolute() || rel.lexically_normal().string().starts_with(".."))
      fail(fmt::format("parts[].path {} leaves the report folder", rel.string()));
    parts.push_back(merge_detail::read_part(a.dir / rel));
  }
  return parts;
}

std::string check_parts(merged_audit &a) {
  a.parts = kept_parts(a);
  std::vector<std::string> summary;
  for (const auto &p : a.parts) {
    const audit_result r = audit_report(p.dir, a.s, a.trust, a.checkpoints);
    if (!r.passed())
      fail(fmt::format("part {} fails its audit: {}", p.doc.run.run_id, list_some(r.failed())));
    summary.push_back(p.doc.run.run_id);
  }
  return fmt::format("{} part(s) kept under parts/ each pass every audit check: {}", a.parts.size(),
                     list_some(summary, 4));
}

// The top-level members in which `rebuilt` and `report` differ.
std::vector<std::string> differing_members(const json &rebuilt, const json &report) {
  std::vector<std::string> differ;
  for (const auto &[key, val] : rebuilt.items())
    if (!report.contains(key) || canonical_json(report.at(key)) != canonical_json(val))
      differ.push_back(key);
  for (const auto &[key, val] : report.items())
    if (!rebuilt.contains(key))
      differ.push_back(key);
  return differ;
}

std::string check_merge(merged_audit &a) {
  if (!a.proto)
    fail("the protocol check failed");
  if (a.parts.empty())
    fail("the parts check failed");
  const std::string kind = a.report.value("kind", "");
  if (kind != "shards" && kind != "replication")
    fail("kind is neither shards nor replication");
  const merge_kind k = kind == "shards" ? merge_kind::shards : merge_kind::replication;
  merge_detail::check_rules(a.parts, k, *a.proto);
  const json rebuilt =
      merge_detail::build_merged(a.parts, k, *a.proto, a.report.at("merge"), a.report.at("tool"));
  if (canonical_json(rebuilt) != a.bytes)
    fail("the report differs from the merge rebuilt from its parts in: " +
         list_some(differing_members(rebuilt, a.report)));
  return fmt::format("the {} merge rebuilt from its {} part(s) equals report.json byte for byte "
                     "(verdicts recomputed)",
                     kind, a.parts.size());
}

std::string check_pages(const merged_audit &a) {
  if (read_file(a.dir / "report.md") != render_merged_markdown(a.report))
    fail("report.md differs from the page rendered from report.json");
  if (read_file(a.dir / "report.html") != render_merged_html(a.report))
    fail("report.html differs from the page rendered from report.json");
  return std::string("report.md and report.html equal the pages rendered from report.json");
}

// The report's one merge entry in the ledger, checked against the report.
const json &merge_entry(const merged_audit &a, const ledger &l, const std::string &hash,
                        const std::string &merge_id) {
  const json *found = nullptr;
  std::size_t count = 0;
  for (const auto &e : l.entries())
    if (e.value("event", "") == ledger_event::merge && e.value("merge_id", "") == merge_id &&
        e.value("protocol_hash", "") == hash) {
      found = &e;
      ++count;
    }
  if (count != 1)
    fail(fmt::format("the ledger holds {} merge entries for {}", count, merge_id));
  if (found->value("report_sha256", "") != sha256_hex(a.bytes))
    fail("the merge entry records another report_sha256");
  json run_ids = json::array();
  for (const auto &p : a.report.at("parts"))
    run_ids.push_back(p.at("run_id"));
  if (canonical_json(found->at("parts")) != canonical_json(run_ids))
    fail("the merge entry names other parts");
  return *found;
}

std::string check_ledger(const merged_audit &a) {
  const std::string hash = a.report.at("protocol").at("hash").get<std::string>();
  const std::string merge_id = a.report.at("merge").at("merge_id").get<std::string>();
  const ledger l = a.s.get_ledger();
  const key_lookup keys = [&](const std::string &fp) { return a.trust.find(a.s, fp); };
  const std::size_t n = l.verify(keys);
  const json &found = merge_entry(a, l, hash, merge_id);
  const fs::path folder = fs::absolute(a.dir).lexically_normal();
  const fs::path named = folder.has_filename() ? folder : folder.parent_path();
  if (named.filename().string() != merge_id)
    fail(fmt::format("the report folder is not named {}", merge_id));
  return fmt::format("ledger verifies ({} entries); merge {} recorded at seq {} with this "
                     "report's sha256",
                     n, merge_id, found.value("seq", 0));
}

} // namespace

audit_result audit_merged_report(const fs::path &dir, const store &s, const trust_root &trust,
                                 const std::vector<fs::path> &checkpoints) {
  audit_result result;
  result.report_dir = dir;
  merged_audit a{dir, s, trust, checkpoints, {}, {}, {}, {}, {}};
  run_check(result, "envelope", [&] { return check_envelope(a); });
  run_check(result, "protocol", [&] { return check_protocol(a); });
  run_check(result, "parts", [&] { return check_parts(a); });
  run_check(result, "merge", [&] { return check_merge(a); });
  run_check(result, "pages", [&] { return check_pages(a); });
  run_check(result, "ledger", [&] { return check_ledger(a); });
  result.trust = trust.describe(s, a.signers);
  result.history = fmt::format("merged report of {} part(s)", a.parts.size());
  return result;
}

} // namespace prereg
