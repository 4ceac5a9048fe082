// The `ledger` check: the ledger verifies and records this run exactly once, completed with
// this report's bytes, at the report's place; it still holds what the report witnessed.
#include "audit/checks.hpp"

#include "base/fs.hpp"
#include "store/ledger.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <span>

namespace prereg::audit_detail {
namespace fs = std::filesystem;
namespace {

/// What the report says about its run.
struct run_claim {
  std::string hash;
  std::string run_id;
  std::int64_t attempt = 0;
  std::string report_sha;
};

/// This run's entries in the ledger, and its attempt number there.
struct run_entries {
  std::vector<const json *> starts;
  std::vector<const json *> completes;
  std::vector<const json *> aborts;
  std::int64_t position = 0; ///< run-starts of the protocol up to this run's (the last one)
};

std::int64_t seq_of(const json &e) { return e.value("seq", std::int64_t{0}); }

run_claim read_claim(const audit_context &ctx) {
  run_claim c;
  c.hash = ctx.hash();
  const json_node report = ctx.report_node();
  c.run_id = report["run"]["run_id"].str();
  c.attempt = any_integer(report["attempt"]);
  c.report_sha = sha256_hex(ctx.bytes());
  return c;
}

/// The ledger's entries naming this run of this protocol; `subset` (a prepared ledger's index
/// of the protocol's entries) or, when null, every entry is scanned.
run_entries find_run(const std::vector<json> &entries, const std::vector<std::size_t> *subset,
                     const run_claim &c) {
  run_entries r;
  std::int64_t starts = 0; // run-starts of the protocol so far (subset only)
  const std::size_t n = subset != nullptr ? subset->size() : entries.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = subset != nullptr ? (*subset)[k] : k;
    const json &e = entries[i];
    if (e.value("protocol_hash", "") != c.hash)
      continue;
    const std::string event = e.value("event", "");
    const bool mine = e.value("run_id", "") == c.run_id;
    if (event == ledger_event::run_start) {
      ++starts;
      if (mine) {
        r.starts.push_back(&e);
        r.position =
            subset != nullptr ? starts : attempts_of(std::span(entries).first(i + 1), c.hash);
      }
    } else if (mine && event == ledger_event::run_complete) {
      r.completes.push_back(&e);
    } else if (mine && event == ledger_event::run_aborted) {
      r.aborts.push_back(&e);
    }
  }
  return r;
}

/// The report is tied to its place: reports/<protocol id>/<run id>/.
void check_place(const audit_context &ctx, const std::string &run_id) {
  const fs::path folder = fs::absolute(ctx.dir()).lexically_normal();
  const std::string folder_name =
      (folder.has_filename() ? folder : folder.parent_path()).filename().string();
  const std::string parent_name =
      (folder.has_filename() ? folder : folder.parent_path()).parent_path().filename().string();
  if (folder_name != run_id)
    fail(fmt::format("the report folder is named {}, not its run.run_id {}", folder_name, run_id));
  const std::string protocol_id = ctx.proto().id;
  if (parent_name != protocol_id)
    fail(fmt::format("the report folder is in a folder named {}, not its protocol id {}",
                     parent_name, protocol_id));
}

/// FAILs unless the run started once, completed once and was not aborted.
void check_once(const run_entries &r, const run_claim &c) {
  if (r.starts.empty())
    fail(fmt::format("the ledger holds no run-start for run {} of protocol {}", c.run_id,
                     short_hash(c.hash)));
  if (r.starts.size() > 1)
    fail(fmt::format("the ledger holds {} run-starts for run {}", r.starts.size(), c.run_id));
  if (r.completes.empty())
    fail(fmt::format("the ledger holds no run-complete for run {}", c.run_id));
  if (r.completes.size() > 1)
    fail(fmt::format("the ledger holds {} run-completes for run {}", r.completes.size(), c.run_id));
  if (!r.aborts.empty())
    fail(fmt::format("the ledger records run {} as aborted ({})", c.run_id,
                     r.aborts.front()->value("reason", "no reason")));
}

/// FAILs unless the completion follows the start, records this report's sha256, and the
/// report and both entries carry the run's attempt number.
void check_completion(const json &start, const json &complete, const run_claim &c,
                      std::int64_t position) {
  if (seq_of(complete) <= seq_of(start))
    fail(fmt::format("run {} completes (seq {}) before it starts (seq {})", c.run_id,
                     seq_of(complete), seq_of(start)));
  const std::string recorded = complete.value("report_sha256", "");
  if (recorded != c.report_sha)
    fail(fmt::format("the run-complete entry (seq {}) records report_sha256 {}, but report.json "
                     "hashes to {}",
                     seq_of(complete), recorded.empty() ? "(none)" : recorded, c.report_sha));
  if (c.attempt != position)
    fail(fmt::format("the report says attempt {}, but the ledger makes run {} the run number {} "
                     "of this protocol",
                     c.attempt, c.run_id, position));
  for (const json *e : {&start, &complete})
    if (e->value("attempt", std::int64_t{-1}) != position)
      fail(fmt::format("ledger entry seq {} records attempt {}, not {}", seq_of(*e),
                       e->value("attempt", std::int64_t{-1}), position));
}

/// The ledger still holds the head the run extended (if the report records it); what it
/// witnessed, for the detail.
std::string check_head(const audit_context &ctx, const json &start) {
  const auto &head = ctx.doc(report_part::run).run.ledger_head;
  if (!head)
    return "";
  if (head->seq + 1 != seq_of(start))
    fail(fmt::format("the report records ledger head seq {}, but its run-start is seq {}",
                     head->seq, seq_of(start)));
  const auto now = head->seq == 0 ? std::optional<std::string>(ledger_genesis)
                                  : ctx.prepared().line_hash(head->seq);
  if (now != head->sha256)
    fail(fmt::format("the report records ledger head seq {} with sha256 {}, which the ledger "
                     "no longer holds",
                     head->seq, short_hash(head->sha256)));
  return fmt::format("; the ledger still holds the head it extended (seq {})", head->seq);
}

/// The ledger holds every --checkpoint; their seqs, for the detail.
std::string check_checkpoints(const audit_context &ctx, const ledger &l) {
  std::vector<std::string> held;
  for (const auto &path : ctx.checkpoints()) {
    try {
      const json cp = parse_json_strict(read_file(path, 1 << 16), path.string());
      held.push_back(fmt::format("seq {}", check_checkpoint(l, cp, ctx.lookup(), path.string())));
    } catch (const error &e) {
      fail(fmt::format("checkpoint {}: {}", path.string(), e.what()));
    }
  }
  if (held.empty())
    return "";
  return fmt::format("; it holds checkpoint(s) {}", fmt::join(held, ", "));
}

/// The ledger verifies with the trust root's keys (as read once: the outcome of
/// ledger::verify(), and the keys it looked up, which the result's trust line names); its
/// number of entries.
std::size_t prepared_verify(const audit_context &ctx, const prepared_ledger &p) {
  for (const std::string &fp : p.lookups)
    (void)ctx.key(fp);
  if (p.verify_failure)
    fail(*p.verify_failure);
  if (p.entries_failure)
    fail(*p.entries_failure);
  return p.verified;
}

} // namespace

std::string check_ledger(const audit_context &ctx) {
  const run_claim claim = read_claim(ctx);
  const ledger l = ctx.st().get_ledger();
  if (!fs::exists(l.path()))
    fail(fmt::format("there is no ledger {}", l.path().string()));
  const prepared_ledger &p = ctx.prepared();
  const std::size_t n = prepared_verify(ctx, p);
  const run_entries run = find_run(p.entries, p.indexed ? &p.of(claim.hash) : nullptr, claim);
  check_place(ctx, claim.run_id);
  check_once(run, claim);
  const json &start = *run.starts.front();
  const json &complete = *run.completes.front();
  check_completion(start, complete, claim, run.position);
  std::string witnessed = check_head(ctx, start);
  witnessed += check_checkpoints(ctx, l);
  return fmt::format("ledger verifies ({} entries); run {} started at seq {} and completed at "
                     "seq {} with this report's sha256; attempt {}{}",
                     n, claim.run_id, seq_of(start), seq_of(complete), claim.attempt, witnessed);
}

} // namespace prereg::audit_detail
