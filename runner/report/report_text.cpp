// report.md and report.html from report.json alone (the pages themselves are in render/).
#include "report/report_text.hpp"

#include "report/render/html.hpp"
#include "report/render/markdown.hpp"

namespace prereg {

std::string render_markdown(const report_document &report) { return render::markdown_page(report); }

std::string render_html(const report_document &report) { return render::html_page(report); }

std::string render_markdown(const json &report) {
  return render_markdown(report_from_json(report, "report.json"));
}

std::string render_html(const json &report) {
  return render_html(report_from_json(report, "report.json"));
}

} // namespace prereg
