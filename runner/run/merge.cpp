// `prereg merge`: audited parts into one signed merged report, written under a temp folder,
// renamed into place and recorded in the ledger. The rules, the merged report, its pages and its
// audit are in merge/.
#include "run/merge.hpp"

#include "base/fs.hpp"
#include "base/time.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "run/merge/build.hpp"
#include "run/merge/rules.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <ctime>
#include <random>

namespace prereg {
namespace fs = std::filesystem;
namespace {

using merge_detail::list_some;
using merge_detail::part;

json current_tool() {
  return {{"name", "prereg"},
          {"version", build_info::version},
          {"git_commit", build_info::git_commit},
          {"build_flags", build_info::build_flags},
          {"renderer", merged_renderer_version}};
}

/// Copies the regular files of `from` (a part's folder) into `to`.
void copy_part(const fs::path &from, const fs::path &to) {
  fs::create_directories(to);
  for (const auto &e : fs::directory_iterator(from))
    if (e.is_regular_file())
      write_file_atomic(to / e.path().filename(), read_file(e.path()));
}

// Every part, each of which must audit clean (a merged report is never a part).
std::vector<part> read_audited_parts(const std::vector<fs::path> &dirs, const store &s,
                                     const trust_root &trust) {
  std::vector<part> parts;
  for (const auto &dir : dirs) {
    if (is_merged_report(dir))
      throw invalid_input("a merged report cannot be a part of another merge", dir.string());
    const audit_result a = audit_report(dir, s, trust);
    if (!a.passed())
      throw integrity_error(
          fmt::format("part does not audit clean: {} failed", list_some(a.failed())), dir.string());
    parts.push_back(merge_detail::read_part(dir));
  }
  return parts;
}

/// A fresh merge id and its temp folder, created exclusively.
struct reservation {
  std::string merge_id;
  fs::path temp;
};

reservation reserve_merge_folder(const fs::path &folder, merge_kind kind, const std::string &hash) {
  std::random_device rd;
  const std::string prefix = kind == merge_kind::shards ? "MERGE" : "REPLICATION";
  reservation r;
  for (int tries = 0;; ++tries) {
    if (tries == 1000)
      throw io_error("cannot reserve a merge id", folder.string());
    r.merge_id = fmt::format("{}-{}-{}-{:06x}", prefix, utc_stamp(std::time(nullptr)),
                             hash.substr(0, 12), rd() & 0xffffffu);
    r.temp = folder / ("." + r.merge_id + ".partial");
    if (fs::exists(folder / r.merge_id) || !create_directory_exclusive(r.temp))
      continue;
    break;
  }
  return r;
}

// Writes the merged report, its envelope, its pages and copies of the parts into `temp`;
// returns the signed payload (report.json).
std::string write_merged_folder(const fs::path &temp, const std::vector<part> &parts,
                                merge_kind kind, const frozen_protocol &fp,
                                const std::string &merge_id, const signing_key &key) {
  const json meta = {{"merge_id", merge_id}, {"merged_at", utc_now_rfc3339()}};
  const json merged = merge_detail::build_merged(parts, kind, fp.proto, meta, current_tool());
  const std::string payload = canonical_json(merged);
  for (const auto &p : parts)
    copy_part(p.dir, temp / "parts" / fp.proto.id / p.doc.run.run_id);
  write_file_atomic(temp / "report.json", payload);
  const std::string sig = key.sign(dsse_pae(merge_payload_type, payload));
  write_file_atomic(temp / "report.dsse.json",
                    canonical_json({{"payloadType", merge_payload_type},
                                    {"payload", base64_encode(payload)},
                                    {"signatures", json::array({{{"keyid", key.fingerprint()},
                                                                 {"sig", base64_encode(sig)}}})}}));
  write_file_atomic(temp / "report.md", render_merged_markdown(merged));
  write_file_atomic(temp / "report.html", render_merged_html(merged));
  return payload;
}

// Under the store's lock: renames `temp` to `final_dir` (never over another report) and appends
// the merge entry; a failed append removes the folder it just placed.
void publish(const store &s, const signing_key &key, const fs::path &temp,
             const fs::path &final_dir, const json &entry) {
  s.add_key(key.public_part());
  file_lock lock(s.lock_path());
  s.get_ledger().verify_for_append(&key);
  rename_no_replace(temp, final_dir);
  try {
    s.get_ledger().append(entry, key);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(final_dir, ec); // ours, just renamed, not yet in the ledger
    throw;
  }
}

} // namespace

bool is_merged_report(const fs::path &dir) {
  std::error_code ec;
  const fs::path file = dir / "report.json";
  if (!fs::is_regular_file(file, ec))
    return false;
  try {
    const json j = parse_json_strict(read_file(file), file.string());
    return j.is_object() && j.contains("merge_version");
  } catch (const std::exception &) {
    return false; // the ordinary audit says what is wrong with it
  }
}

fs::path merge_reports(const store &s, const merge_options &o, const trust_root &trust,
                       const signing_key &key) {
  std::vector<part> parts = read_audited_parts(o.parts, s, trust);
  if (parts.empty())
    throw invalid_input("merge: give at least one report folder");
  const frozen_protocol fp = s.load(parts.front().doc.protocol.hash);
  merge_detail::check_rules(parts, o.kind, fp.proto);

  const fs::path folder = o.out_dir / fp.proto.id;
  const reservation r = reserve_merge_folder(folder, o.kind, fp.hash);
  const fs::path final_dir = folder / r.merge_id;
  try {
    json run_ids = json::array();
    for (const auto &p : parts)
      run_ids.push_back(p.doc.run.run_id);
    const std::string payload = write_merged_folder(r.temp, parts, o.kind, fp, r.merge_id, key);
    publish(s, key, r.temp, final_dir,
            {{"event", ledger_event::merge},
             {"protocol_hash", fp.hash},
             {"merge_id", r.merge_id},
             {"kind", merge_detail::kind_name(o.kind)},
             {"parts", run_ids},
             {"report_sha256", sha256_hex(payload)}});
  } catch (...) {
    std::error_code ec;
    fs::remove_all(r.temp, ec);
    throw;
  }
  return final_dir;
}

} // namespace prereg
