// A small table model of the pages, rendered to Markdown or to HTML.
#pragma once

#include <string>
#include <vector>

namespace prereg::render {

/// One piece of text in a table: its markup and its HTML class and tooltip.
struct span {
  std::string text;
  bool code = false;
  bool strong = false;
  std::string suffix; ///< plain text after the main text (e.g. " ◀ operating point")
  std::string prefix; ///< plain text before the main text (e.g. "python: " before a file)
  std::string cls;    ///< HTML class
  std::string title;  ///< HTML tooltip
};

/// Plain text.
[[nodiscard]] span plain(std::string t);
/// Text in a code span.
[[nodiscard]] span code(std::string t);

/// A table: a header row, then rows of spans.
struct table {
  std::vector<span> header;
  std::vector<bool> numeric; ///< right-aligned columns
  std::vector<std::vector<span>> rows;
  bool row_headers = false; ///< first column names the row
  std::string cls;          ///< HTML class of the table
};

/// The table as a Markdown (GFM) table, every cell escaped.
[[nodiscard]] std::string to_markdown(const table &t);

/// The table as an HTML <table>, every cell escaped; a "kv" table whose second header is empty
/// gets one header spanning both columns.
[[nodiscard]] std::string to_html(const table &t);

} // namespace prereg::render
