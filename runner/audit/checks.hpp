// The audit's checks (docs/audit.md, "The checks"): each reads the report folder through an
// audit_context and returns what it verified, or throws check_failed saying why not.
#pragma once

#include "audit/context.hpp"

#include <string>
#include <vector>

namespace prereg::audit_detail {

// ---- the signature and its payload (check_signature.cpp) -------------------------------------

/// `envelope`: every DSSE signature is by an accepted key and verifies.
[[nodiscard]] std::string check_envelope(const audit_context &ctx);
/// `payload`: report.json is the signed payload, canonical, of a schema this build reads.
[[nodiscard]] std::string check_payload(const audit_context &ctx);

// ---- the frozen protocol (check_protocol.cpp) ------------------------------------------------

/// `protocol`: protocol.body hashes to protocol.hash, equals the store's copy, re-validates.
[[nodiscard]] std::string check_protocol(const audit_context &ctx);
/// `freeze`: the freeze record is the store's, signed by an accepted key, before the run.
[[nodiscard]] std::string check_freeze(const audit_context &ctx);

// ---- re-derivation from the raw data (check_derived.cpp) -------------------------------------

/// `statistics`: the cells are plan cells and every statistic recomputes.
[[nodiscard]] std::string check_statistics(const audit_context &ctx);
/// `verdicts`: the seeded bootstrap gives the report's predictions[].
[[nodiscard]] std::string check_verdicts(const audit_context &ctx);
/// Part of `statistics` (check_stop.cpp): under a stopping rule every cell's count and stop
/// record replay from its samples; no stop record without a rule. "; ..." to append, or "".
[[nodiscard]] std::string check_stop_rule(const audit_context &ctx);
/// Part of `statistics` (check_ceiling.cpp): a reused copy ceiling (instrument.ceiling_reused,
/// schema_version 8) is an entry signed by the report's signer, of this device and build, at
/// most an hour older than the run, whose values are the instrument's, in a run whose protocol
/// allows reuse. "; ceiling: measured in this run" or "; ceiling: reused ..." to append.
[[nodiscard]] std::string check_ceiling(const audit_context &ctx);
/// `defects`: every derivable defect recomputes, and none the raw data does not give.
[[nodiscard]] std::string check_defects(const audit_context &ctx);

// ---- the pages (check_pages.cpp) -------------------------------------------------------------

/// `pages`: report.md and report.html are what the report's renderer makes of report.json.
[[nodiscard]] std::string check_pages(const audit_context &ctx);

// ---- the sandbox's probes (check_isolation.cpp) --------------------------------------------

/// `isolation`: the level and layers of run.isolation follow from its probes (schema_version 8).
[[nodiscard]] std::string check_isolation(const audit_context &ctx);

// ---- the ledger and the run history (check_ledger.cpp, check_history.cpp) --------------------

/// `ledger`: the ledger verifies and records this run, in its folder, once, completed with
/// this report's bytes, holding the head it extended and every checkpoint.
[[nodiscard]] std::string check_ledger(const audit_context &ctx);

/// The history of a protocol's runs in the ledger (docs/audit.md, `history`): the line that
/// lists every run, and what is wrong with the sequence of runs.
struct run_history {
  std::string line;                  ///< "run K of N; run 1 completed <time>, ..."
  std::vector<std::string> problems; ///< empty: the check passes
};

/// `history`: the protocol's runs as the ledger records them (FAIL only if unreadable).
[[nodiscard]] run_history read_history(const audit_context &ctx);

} // namespace prereg::audit_detail
