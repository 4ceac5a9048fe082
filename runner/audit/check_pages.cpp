// The `pages` check: report.md and report.html are a pure function of report.json.
#include "audit/checks.hpp"

#include "base/fs.hpp"
#include "report/report_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace prereg::audit_detail {
namespace fs = std::filesystem;

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
                     "report.json",
                     doc.tool.renderer);
}

} // namespace prereg::audit_detail
