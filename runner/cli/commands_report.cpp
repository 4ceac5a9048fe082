// The commands on reports: audit, report, compare.
#include "cli/command_functions.hpp"

#include "grade/board_audit.hpp"

#include "analysis/compare.hpp"
#include "audit/audit.hpp"
#include "base/fs.hpp"
#include "base/json.hpp"
#include "model/report_model.hpp"
#include "prereg/error.hpp"
#include "report/report_text.hpp"
#include "run/merge.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

namespace prereg::cli::detail {

int cmd_audit(args_t args) {
  CLI::App app{"re-check a report against its frozen protocol and its own raw data", "audit"};
  common_options o;
  std::string dir;
  std::vector<std::string> trust;
  std::vector<std::string> checkpoints;
  bool as_json = false;
  o.add_store(app);
  app.add_option("REPORT_DIR", dir, "a report folder")->required();
  app.add_option("--trust", trust,
                 "accept only this signer: a PEM FILE, a DIR of *.pub or a FINGERPRINT of a key "
                 "in the store (repeatable)");
  app.add_option("--checkpoint", checkpoints,
                 "fail unless the ledger still holds this checkpoint FILE (repeatable)");
  app.add_flag("--json", as_json, "print the checks as JSON");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const std::vector<std::filesystem::path> cps(checkpoints.begin(), checkpoints.end());
  const audit_result r =
      grade::is_leaderboard(dir) ? grade::audit_leaderboard(dir, s, resolve_trust(trust, s), cps)
      : is_merged_report(dir)    ? audit_merged_report(dir, s, resolve_trust(trust, s), cps)
                                 : audit_report(dir, s, resolve_trust(trust, s), cps);
  fmt::print("{}", as_json ? render_audit_json(r) : render_audit_text(r));
  return static_cast<int>(r.exit());
}

int cmd_report(args_t args) {
  CLI::App app{"regenerate report.md and report.html from report.json alone", "report"};
  std::string dir;
  std::string format = "both";
  app.add_option("REPORT_DIR", dir, "a report folder")->required();
  app.add_option("--format", format, "md | html (default: both, written into the folder)")
      ->check(CLI::IsMember({"md", "html", "both"}));
  if (!parse(app, args))
    return 0;
  const auto folder = std::filesystem::path(dir);
  const report_document report =
      report_from_json(read_report_json(dir), (folder / "report.json").string());
  if (format == "md" || format == "both")
    write_file_atomic(folder / "report.md", render_markdown(report));
  if (format == "html" || format == "both")
    write_file_atomic(folder / "report.html", render_html(report));
  fmt::print("{}\n", folder.string());
  return 0;
}

namespace {

/// --min-effect: a fraction (0.05) or a percentage (5%).
double parse_min_effect(const std::string &text) {
  const bool pct = text.ends_with('%');
  const std::string number = pct ? text.substr(0, text.size() - 1) : text;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != number.size())
    throw invalid_input(fmt::format("compare: --min-effect must be a fraction (0.05) or a "
                                    "percentage (5%), got '{}'",
                                    text));
  return pct ? v / 100.0 : v;
}

} // namespace

int cmd_compare(args_t args) {
  CLI::App app{"ratio of medians per common cell of two sides of reports, with a bootstrap "
               "interval (`compare A B`, or `compare A1 A2 ... --vs B1 B2 ...`)",
               "compare"};
  std::vector<std::string> a_dirs;
  std::vector<std::string> b_dirs;
  std::string min_effect = "5%";
  bool as_json = false;
  app.add_option("DIRS", a_dirs,
                 "A_DIR B_DIR; with --vs, the baseline side's report folders (one run or more)")
      ->required();
  app.add_option("--vs", b_dirs, "the report folders compared with them (one run or more)");
  app.add_option("--min-effect", min_effect,
                 "ratios within this of 1 are 'same' (fraction or percentage; default 5%)");
  app.add_flag("--json", as_json, "print the comparison as canonical JSON");
  if (!parse(app, args))
    return 0;
  if (b_dirs.empty()) {
    if (a_dirs.size() != 2)
      throw invalid_input(fmt::format("compare: give A_DIR B_DIR, or A_DIR... --vs B_DIR... "
                                      "(got {} folder(s) and no --vs)",
                                      a_dirs.size()));
    b_dirs = {a_dirs[1]};
    a_dirs.resize(1);
  }
  const auto load = [](const std::vector<std::string> &dirs) {
    std::vector<report_document> out;
    for (const auto &d : dirs)
      out.push_back(report_from_json(read_report_json(d), d + "/report.json"));
    return out;
  };
  const json cmp = compare_reports(load(a_dirs), load(b_dirs), parse_min_effect(min_effect));
  if (as_json)
    fmt::print("{}\n", canonical_json(cmp));
  else
    fmt::print("{}", render_comparison(cmp));
  return 0;
}

} // namespace prereg::cli::detail
