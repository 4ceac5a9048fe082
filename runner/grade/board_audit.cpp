// The audit of a leaderboard: nine checks over the folder `prereg grade` wrote (board_audit.hpp).
#include "grade/board_audit.hpp"

#include "base/fs.hpp"
#include "grade/board.hpp"
#include "grade/board_read.hpp"
#include "grade/grading.hpp"
#include "grade/heldout.hpp"
#include "grade/protocols.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <set>
#include <stdexcept>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail(const std::string &why) { throw std::runtime_error(why); }

constexpr std::string_view check_names[] = {"envelope",    "task",   "reveal", "protocols", "parts",
                                            "submissions", "scores", "pages",  "ledger"};

/// What the checks read and leave for the next.
struct board_audit {
  const fs::path &dir;
  const store &s;
  const trust_root &trust;
  const std::vector<fs::path> &checkpoints;
  std::string bytes; ///< leaderboard.json
  json board;
  std::vector<std::string> signers;
  std::optional<frozen_protocol> task;
  std::optional<board_inputs> inputs;
};

void run_check(audit_result &result, std::string_view name,
               const std::function<std::string()> &check) {
  audit_check c{std::string(name), false, {}};
  try {
    c.detail = check();
    c.passed = true;
  } catch (const std::exception &e) {
    c.detail = escape_control(e.what());
  }
  result.checks.push_back(std::move(c));
}

std::string check_envelope(board_audit &a) {
  a.bytes = read_file(a.dir / "leaderboard.json");
  a.board = parse_json_strict(a.bytes, (a.dir / "leaderboard.json").string());
  const json env = parse_json_strict(read_file(a.dir / "leaderboard.dsse.json"),
                                     (a.dir / "leaderboard.dsse.json").string());
  if (env.value("payloadType", "") != leaderboard_payload_type)
    fail(fmt::format("payloadType is not {}", leaderboard_payload_type));
  const std::string payload = base64_decode(env.value("payload", ""));
  if (payload != a.bytes)
    fail("leaderboard.json is not the signed payload");
  if (canonical_json(a.board) != a.bytes)
    fail("leaderboard.json is not in RFC 8785 canonical form");
  if (a.board.value("leaderboard_version", 0) != leaderboard_format_version)
    fail("leaderboard_version is not 1");
  const json &sigs = env.at("signatures");
  if (!sigs.is_array() || sigs.empty())
    fail("the envelope holds no signature");
  for (const auto &sig : sigs) {
    const std::string keyid = sig.value("keyid", "");
    const auto k = a.trust.find(a.s, keyid);
    if (!k)
      fail(fmt::format("signature by an unknown or unpinned key {}", keyid));
    if (!k->verify(dsse_pae(leaderboard_payload_type, payload),
                   base64_decode(sig.value("sig", ""))))
      fail(fmt::format("the signature by {} does not verify", keyid.substr(0, 12)));
    a.signers.push_back(keyid);
  }
  return fmt::format("{} signature(s) verify over the DSSE PAE of leaderboard.json ({})",
                     a.signers.size(), leaderboard_payload_type);
}

std::string check_task(board_audit &a) {
  const json &t = a.board.at("task");
  const std::string hash = t.at("hash").get<std::string>();
  if (protocol_hash(t.at("body")) != hash)
    fail("task.body does not hash to task.hash");
  frozen_protocol fp = a.s.load(hash);
  if (fp.canonical != canonical_json(t.at("body")))
    fail("task.body differs from the frozen copy");
  if (canonical_json(fp.freeze) != canonical_json(t.at("freeze")))
    fail("task.freeze differs from the store's freeze record");
  if (!fp.proto.task)
    fail(fmt::format("protocol {} is not a task", hash.substr(0, 12)));
  a.task = std::move(fp);
  return fmt::format("task {} ({}) equals the frozen copy; freeze record equals the store's",
                     a.task->proto.id, hash.substr(0, 12));
}

std::string check_reveal(board_audit &a) {
  if (!a.task)
    fail("the task check failed");
  const auto &commitment = a.task->proto.task->commitment;
  const bool has = a.board.contains("heldout");
  if (!commitment) {
    if (has)
      fail("the task commits to no held-out secret, but the leaderboard reveals one");
    return "the task holds nothing out";
  }
  if (!has)
    fail("the task commits to a held-out secret, but the leaderboard reveals none");
  const json &h = a.board.at("heldout");
  if (h.at("commitment").get<std::string>() != *commitment)
    fail("heldout.commitment is not the task's");
  const heldout_secret secret = secret_from_json(h.at("reveal"), "heldout.reveal");
  const std::string got = commitment_of(secret);
  if (got != *commitment)
    fail(fmt::format("the revealed secret hashes to {}, not to the task's commitment {}: the "
                     "reveal was changed",
                     got.substr(0, 12), commitment->substr(0, 12)));
  (void)grading_axes(a.task->proto, &secret);
  return fmt::format("the revealed secret (salt, seed, {} held-out axis list(s)) hashes to the "
                     "task's commitment {}",
                     secret.axes.size(), commitment->substr(0, 12));
}

std::string check_protocols(board_audit &a) {
  if (!a.task)
    fail("the task check failed");
  a.inputs = inputs_from_board(a.board, a.dir, *a.task);
  std::size_t n = 0;
  for (const auto &g : a.inputs->gradings) {
    const std::string want = protocol_hash(
        rebuilt_grading_body(*a.task, a.inputs->reveal, g.grade_id, g.nonce, nullptr));
    if (g.baseline.doc.protocol.hash != want)
      fail(fmt::format("grading {}'s baseline ran protocol {}, not the grading's {}", g.grade_id,
                       g.baseline.doc.protocol.hash.substr(0, 12), want.substr(0, 12)));
    ++n;
  }
  for (const auto &e : a.inputs->entries) {
    const std::string want = protocol_hash(to_json(e.grading));
    const bool unbuilt = e.build.is_object() && !e.build.value("ok", true);
    if (e.protocol_hash != want && !(unbuilt && e.protocol_hash.empty()))
      fail(fmt::format("{}'s protocol_hash is not its grading protocol's {}", e.sub.name,
                       want.substr(0, 12)));
    if (e.run && e.run->doc.protocol.hash != want)
      fail(fmt::format("{}'s report ran another protocol", e.sub.name));
    if (!e.protocol_hash.empty())
      (void)a.s.load(e.protocol_hash); // frozen, and intact
    ++n;
    for (const auto &rt : e.retimes) {
      const std::string again = protocol_hash(retime_body(to_json(e.grading), rt.cell, rt.nonce));
      if (rt.protocol_hash != again)
        fail(fmt::format("{}'s re-timing protocol_hash is not the re-timing protocol's {}",
                         e.sub.name, again.substr(0, 12)));
      if (rt.run && rt.run->doc.protocol.hash != again)
        fail(fmt::format("{}'s re-timing report ran another protocol", e.sub.name));
      (void)a.s.load(again);
      ++n;
    }
  }
  return fmt::format("{} grading protocol(s) rebuilt from the task, the reveal and each "
                     "grading's nonce hash as recorded and are frozen",
                     n);
}

std::string check_parts(board_audit &a) {
  if (!a.inputs)
    fail("the protocols check failed");
  std::size_t n = 0;
  const auto audit_one = [&](const board_part &p) {
    const audit_result r = audit_report(a.dir / p.path, a.s, a.trust, a.checkpoints);
    if (!r.passed()) {
      std::string failed;
      for (const auto &f : r.failed())
        failed += (failed.empty() ? "" : ", ") + f;
      fail(fmt::format("part {} fails its audit: {}", p.path, failed));
    }
    ++n;
  };
  for (const auto &g : a.inputs->gradings)
    audit_one(g.baseline);
  for (const auto &e : a.inputs->entries) {
    if (e.run)
      audit_one(*e.run);
    for (const auto &rt : e.retimes)
      if (rt.run)
        audit_one(*rt.run);
  }
  return fmt::format("{} report(s) kept under parts/ each pass every audit check", n);
}

/// The outside file's sha256 a grading protocol's freeze record pins for its one arm.
std::string pinned_sha(const frozen_protocol &fp) {
  const json &k = fp.freeze.at("kernels");
  for (const auto &[arm, rec] : k.items())
    return rec.value("sha256", "");
  return "";
}

std::string check_submissions(board_audit &a) {
  if (!a.inputs)
    fail("the protocols check failed");
  const std::vector<submission> ledgered = submissions_of(a.s.get_ledger().entries(), a.task->hash);
  std::set<std::string> names;
  for (const auto &e : a.inputs->entries) {
    if (!names.insert(e.sub.name).second)
      fail(fmt::format("{} has two entries", e.sub.name));
    auto it = std::find_if(ledgered.begin(), ledgered.end(),
                           [&](const submission &s) { return s.id == e.sub.id; });
    if (it == ledgered.end())
      fail(fmt::format("submission {} has no submit entry of this task in the ledger", e.sub.id));
    json want = it->to_json(), got = e.sub.to_json();
    want["time"] = it->time, want["seq"] = it->seq, got["time"] = e.sub.time,
    got["seq"] = e.sub.seq;
    if (canonical_json(want) != canonical_json(got))
      fail(fmt::format("submission {} differs from its submit entry (seq {})", e.sub.id, it->seq));
    if (!e.protocol_hash.empty() && e.sub.kind != submission_kind::c_source &&
        pinned_sha(a.s.load(e.protocol_hash)) != e.sub.files.front().sha256)
      fail(fmt::format("{}'s grading protocol pins another file than the submitted {}", e.sub.id,
                       e.sub.files.front().name));
    for (const auto &rt : e.retimes)
      if (e.sub.kind != submission_kind::c_source &&
          pinned_sha(a.s.load(rt.protocol_hash)) != e.sub.files.front().sha256)
        fail(fmt::format("{}'s re-timing protocol pins another file than the submitted {}",
                         e.sub.id, e.sub.files.front().name));
  }
  return fmt::format("{} submission(s), each its ledger's submit entry, its file pinned by its "
                     "grading protocol",
                     a.inputs->entries.size());
}

std::string check_scores(board_audit &a) {
  if (!a.inputs)
    fail("the protocols check failed");
  const json rebuilt = build_leaderboard(*a.inputs, a.board.at("grade"), a.board.at("tool"));
  if (canonical_json(rebuilt) != a.bytes) {
    std::string differ;
    for (std::size_t i = 0; i < rebuilt.at("entries").size(); ++i)
      if (i >= a.board.at("entries").size() || rebuilt["entries"][i] != a.board["entries"][i]) {
        differ = fmt::format("entries[{}] ({})", i, rebuilt["entries"][i].value("name", ""));
        break;
      }
    fail("the leaderboard differs from the one rebuilt from its reports' raw samples" +
         (differ.empty() ? std::string() : " at " + differ));
  }
  std::size_t ranked = 0;
  for (const auto &e : a.board.at("entries"))
    ranked += e.at("rank").is_number() ? 1 : 0;
  return fmt::format("every score, interval, exclusion and rank recomputed from the reports' raw "
                     "samples equals leaderboard.json ({} ranked, {} excluded)",
                     ranked, a.board.at("entries").size() - ranked);
}

std::string check_pages(const board_audit &a) {
  if (read_file(a.dir / "leaderboard.md") != render_board_markdown(a.board))
    fail("leaderboard.md differs from the page rendered from leaderboard.json");
  if (read_file(a.dir / "leaderboard.html") != render_board_html(a.board))
    fail("leaderboard.html differs from the page rendered from leaderboard.json");
  return "leaderboard.md and leaderboard.html equal the pages rendered from leaderboard.json";
}

/// A failed entry's reason against the ledger: an aborted run's reason must be it.
void check_failure(const ledger &l, const board_entry &e) {
  const auto check = [&](const std::string &hash, const std::string &failure, const char *what) {
    for (const auto &x : l.entries())
      if (x.value("protocol_hash", "") == hash &&
          x.value("event", "") == ledger_event::run_aborted && x.value("reason", "") != failure)
        fail(fmt::format("{}'s {} failure is not its run's run-aborted reason (seq {})", e.sub.name,
                         what, x.value("seq", 0)));
  };
  if (!e.run && !e.protocol_hash.empty())
    check(e.protocol_hash, e.failure, "first");
  for (const auto &rt : e.retimes)
    if (!rt.run)
      check(rt.protocol_hash, rt.failure, "re-timing's");
}

std::string check_ledger(const board_audit &a) {
  const std::string grade_id = a.board.at("grade").at("grade_id").get<std::string>();
  const ledger l = a.s.get_ledger();
  const key_lookup keys = [&](const std::string &fp) { return a.trust.find(a.s, fp); };
  const std::size_t n = l.verify(keys);
  std::size_t count = 0;
  std::int64_t seq = 0;
  for (const auto &e : l.entries())
    if (e.value("event", "") == ledger_event::grade && e.value("grade_id", "") == grade_id) {
      ++count;
      seq = e.value("seq", std::int64_t{0});
      if (e.value("report_sha256", "") != sha256_hex(a.bytes))
        fail("the grade entry records another report_sha256");
      json ids = json::array();
      for (const auto &x : a.board.at("entries"))
        ids.push_back(x.at("submission").at("submission_id"));
      if (canonical_json(e.at("entries")) != canonical_json(ids))
        fail("the grade entry names other entries");
    }
  if (count != 1)
    fail(fmt::format("the ledger holds {} grade entries for {}", count, grade_id));
  const fs::path folder = fs::absolute(a.dir).lexically_normal();
  const fs::path named = folder.has_filename() ? folder : folder.parent_path();
  if (named.filename().string() != grade_id)
    fail(fmt::format("the leaderboard's folder is not named {}", grade_id));
  if (a.inputs)
    for (const auto &e : a.inputs->entries)
      check_failure(l, e);
  return fmt::format("ledger verifies ({} entries); grading {} recorded at seq {} with this "
                     "leaderboard's sha256",
                     n, grade_id, seq);
}

} // namespace

bool is_leaderboard(const fs::path &dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "leaderboard.json", ec);
}

std::span<const std::string_view> leaderboard_check_names() { return check_names; }

audit_result audit_leaderboard(const fs::path &dir, const store &s, const trust_root &trust,
                               const std::vector<fs::path> &checkpoints) {
  audit_result result;
  result.report_dir = dir;
  board_audit a{dir, s, trust, checkpoints, {}, {}, {}, {}, {}};
  run_check(result, "envelope", [&] { return check_envelope(a); });
  run_check(result, "task", [&] { return check_task(a); });
  run_check(result, "reveal", [&] { return check_reveal(a); });
  run_check(result, "protocols", [&] { return check_protocols(a); });
  run_check(result, "parts", [&] { return check_parts(a); });
  run_check(result, "submissions", [&] { return check_submissions(a); });
  run_check(result, "scores", [&] { return check_scores(a); });
  run_check(result, "pages", [&] { return check_pages(a); });
  run_check(result, "ledger", [&] { return check_ledger(a); });
  result.trust = trust.describe(s, a.signers);
  result.history = fmt::format(
      "leaderboard of {} entr{}", a.board.contains("entries") ? a.board["entries"].size() : 0,
      a.board.contains("entries") && a.board["entries"].size() == 1 ? "y" : "ies");
  return result;
}

} // namespace prereg::grade
