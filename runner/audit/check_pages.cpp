// The `pages` check: report.md and report.html are a pure function of report.json.
#include "audit/checks.hpp"

#include "base/fs.hpp"
#include "crypto/crypto.hpp"
#include "report/report_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace prereg::audit_detail {
namespace fs = std::filesystem;

/// run.arm_log: the file beside the report, when there, must have the SHA-256 the report names.
std::string arm_log_words(const fs::path &dir, const report_run &run) {
  if (!run.arm_log)
    return "";
  const fs::path path = dir / run.arm_log->file;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return fmt::format("; the arm log {} is not here (not checked)", run.arm_log->file);
  if (sha256_hex(read_file(path)) != run.arm_log->sha256)
    fail(fmt::format("{} does not have the SHA-256 run.arm_log names", run.arm_log->file));
  return fmt::format("; the arm log {} has the SHA-256 the report names", run.arm_log->file);
}

/// run.isolation, shown: the mode, and the outside arms that shared the measuring process.
std::string isolation_words(const report_document &doc) {
  if (!doc.run.isolation)
    return "";
  const report_isolation &i = *doc.run.isolation;
  std::string arms;
  for (const json &a : doc.protocol.body.value("arms", json::array()))
    if (a.contains("python") || a.contains("plugin"))
      arms += (arms.empty() ? "" : ", ") + a.value("id", std::string("?"));
  return fmt::format("; measuring process isolation: {}{}{}", isolation_mode(i),
                     i.reason.empty() ? "" : " (" + i.reason + ")",
                     arms.empty() ? "" : "; outside arms in it: " + arms);
}

/// The pages are a pure function of report.json: regenerated with the renderer the report
/// names (tool.renderer; absent is renderer 1), they must equal report.md and report.html
/// byte for byte.
std::string check_pages(const audit_context &ctx) {
  const report_document &doc = ctx.doc(report_part::all);
  const std::pair<const char *, std::string> pages[] = {{"report.md", render_markdown(doc)},
                                                        {"report.html", render_html(doc)}};
  for (const auto &[name, expected] : pages) {
    const fs::path path = ctx.dir() / name;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      fail(fmt::format("{} is missing", name));
    const std::string actual = read_file(path);
    if (actual == expected)
      continue;
    std::size_t i = 0;
    while (i < actual.size() && i < expected.size() && actual[i] == expected[i])
      ++i;
    const auto line =
        1 + std::count(expected.begin(), expected.begin() + static_cast<long>(i), '\n');
    fail(fmt::format("{} is not the page renderer {} makes from report.json: first difference at "
                     "byte {} (line {}); `prereg report DIR` regenerates it",
                     name, doc.tool.renderer, i, line));
  }
  return fmt::format("report.md and report.html are exactly what renderer {} makes from "
                     "report.json{}{}",
                     doc.tool.renderer, arm_log_words(ctx.dir(), doc.run), isolation_words(doc));
}

} // namespace prereg::audit_detail
