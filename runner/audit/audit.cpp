// `prereg audit`: runs every check (checks.hpp) over a report folder, each catching its own
// errors, and renders the result.
#include "audit/audit.hpp"

#include "audit/checks.hpp"
#include "base/fs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>

namespace prereg {
namespace fs = std::filesystem;
using namespace audit_detail;
namespace {

constexpr std::array<std::string_view, 11> check_names{
    "envelope", "payload", "protocol",  "freeze", "statistics", "verdicts",
    "defects",  "pages",   "isolation", "ledger", "history"};

/// One line: control characters (a newline in a message) are escaped.
std::string one_line(const std::string &s) { return escape_control(s); }

/// The refusal, if `dir` holds an exploratory report (`prereg try`), else nothing.
std::optional<std::string> exploratory_marker(const fs::path &dir) {
  try {
    const json j = parse_json_strict(read_file(dir / "report.json"), "report.json");
    if (j.is_object() && j.contains("exploratory"))
      return std::string("report.json is an EXPLORATORY report (prereg try): not pre-registered, "
                         "not signed and not in the ledger, so it is not audited as a "
                         "confirmatory report; freeze the protocol and `prereg run` it for one");
  } catch (const std::exception &) {
    // unreadable: the checks below say why
  }
  return std::nullopt;
}

/// Runs one check: PASS with what it verified, or FAIL with why (never throws).
audit_check run_check(std::string_view name,
                      const std::function<std::string(const audit_context &)> &check,
                      const audit_context &ctx) {
  audit_check c{std::string(name), false, {}};
  try {
    c.detail = check(ctx);
    c.passed = true;
  } catch (const check_failed &e) {
    c.detail = e.what();
  } catch (const error &e) {
    c.detail = e.line();
  } catch (const std::exception &e) {
    c.detail = e.what();
  }
  c.detail = one_line(std::move(c.detail));
  return c;
}

/// The `history` check, which also gives the result's history line.
audit_check run_history_check(const audit_context &ctx, std::string &history_line) {
  audit_check history{std::string(check_names.back()), false, {}};
  try {
    const run_history h = read_history(ctx);
    history_line = h.line;
    history.passed = h.problems.empty();
    history.detail =
        history.passed ? h.line : fmt::format("{}; history: {}", join_some(h.problems), h.line);
  } catch (const check_failed &e) {
    history_line = fmt::format("history unavailable: {}", e.what());
    history.detail = e.what();
  } catch (const error &e) {
    history_line = fmt::format("history unavailable: {}", e.line());
    history.detail = e.line();
  } catch (const std::exception &e) {
    history_line = fmt::format("history unavailable: {}", e.what());
    history.detail = e.what();
  }
  history_line = one_line(std::move(history_line));
  history.detail = one_line(std::move(history.detail));
  return history;
}

audit_result audit_with(const fs::path &dir, const store &s, const trust_root &trust,
                        const std::vector<fs::path> &checkpoints, const prepared_ledger *prepared);

} // namespace

bool audit_result::passed() const {
  return !checks.empty() &&
         std::all_of(checks.begin(), checks.end(), [](const audit_check &c) { return c.passed; });
}

exit_code audit_result::exit() const { return passed() ? exit_code::ok : exit_code::audit_failed; }

std::vector<std::string> audit_result::failed() const {
  std::vector<std::string> out;
  for (const auto &c : checks)
    if (!c.passed)
      out.push_back(c.name);
  return out;
}

std::span<const std::string_view> audit_check_names() { return check_names; }

audit_result audit_report(const fs::path &dir, const store &s,
                          const std::vector<public_key> &trusted) {
  if (trusted.empty())
    return audit_report(dir, s, resolve_trust({}, s));
  trust_root t;
  t.keys = trusted;
  t.source = "--trust";
  return audit_report(dir, s, t);
}

audit_result audit_report(const fs::path &dir, const store &s, const trust_root &trust,
                          const std::vector<fs::path> &checkpoints) {
  return audit_with(dir, s, trust, checkpoints, nullptr);
}

audit_result audit_report(const fs::path &dir, const store &s, const trust_root &trust,
                          const std::vector<fs::path> &checkpoints,
                          const prepared_ledger &prepared) {
  return audit_with(dir, s, trust, checkpoints, &prepared);
}

namespace {

audit_result audit_with(const fs::path &dir, const store &s, const trust_root &trust,
                        const std::vector<fs::path> &checkpoints, const prepared_ledger *prepared) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw invalid_input("no such report folder", dir.string());
  if (!fs::exists(dir / "report.json") && !fs::exists(dir / "report.dsse.json"))
    throw invalid_input("not a report folder: it holds neither report.json nor report.dsse.json",
                        dir.string());
  const audit_context ctx(dir, s, trust, checkpoints, prepared);
  audit_result result;
  result.report_dir = dir;
  if (const auto j = exploratory_marker(dir)) {
    // `prereg try` made it: nothing was pre-registered, so there is nothing to confirm.
    result.checks.push_back({"exploratory", false, *j});
    return result;
  }
  const std::array<std::function<std::string(const audit_context &)>, 10> checks{
      check_envelope, check_payload, check_protocol, check_freeze,    check_statistics,
      check_verdicts, check_defects, check_pages,    check_isolation, check_ledger};
  for (std::size_t i = 0; i < checks.size(); ++i)
    result.checks.push_back(run_check(check_names[i], checks[i], ctx));
  result.checks.push_back(run_history_check(ctx, result.history));
  result.trust = one_line(trust.describe(s, ctx.signers()));
  return result;
}

} // namespace

std::string render_audit_text(const audit_result &r) {
  std::string out;
  for (const auto &c : r.checks)
    out += fmt::format("{} {}: {}\n", c.passed ? "PASS" : "FAIL", c.name, c.detail);
  const auto bad = r.failed();
  if (!r.trust.empty())
    out += fmt::format("trust: {}\n", r.trust);
  if (bad.empty())
    out += fmt::format("audit PASSED: all {} checks pass ({})\n", r.checks.size(),
                       r.report_dir.string());
  else
    out += fmt::format("audit FAILED: {} of {} checks failed: {} ({})\n", bad.size(),
                       r.checks.size(), fmt::join(bad, ", "), r.report_dir.string());
  return out;
}

std::string render_audit_json(const audit_result &r) {
  json checks = json::array();
  for (const auto &c : r.checks)
    checks.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  const json out = {{"report", r.report_dir.string()},
                    {"passed", r.passed()},
                    {"exit_code", static_cast<int>(r.exit())},
                    {"history", r.history},
                    {"trust", r.trust},
                    {"checks", checks}};
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace prereg
