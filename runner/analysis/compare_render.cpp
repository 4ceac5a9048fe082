// The text of a comparison (render_comparison): a header, an aligned table of the compared
// cells and the cells found in only one report.
#include "analysis/compare.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace prereg {
namespace {

// Display width of UTF-8 text: code points, not bytes.
std::size_t width(const std::string &s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string pad(const std::string &s, std::size_t w, bool right) {
  const std::string fill(w > width(s) ? w - width(s) : 0, ' ');
  return right ? fill + s : s + fill;
}

std::string time_text(const json &ms) {
  if (!ms.is_number())
    return "-";
  const double ms_v = ms.get<double>();
  const bool micro = ms_v < 1.0;
  const double v = micro ? ms_v * 1e3 : ms_v;
  return fmt::format("{:.{}f} {}", v, v < 10.0 ? 2 : v < 100.0 ? 1 : 0, micro ? "µs" : "ms");
}

std::string ratio_text(const json &r) {
  if (!r.is_number())
    return "-";
  return fmt::format("{:.3f}", r.get<double>());
}

/// The sides, the method and what the interval covers.
std::string header_text(const json &cmp) {
  const auto side_line = [](const char *name, const json &s) {
    return fmt::format("{} = run {} (protocol {} {})\n", name, s.value("run_id", "?"),
                       s.value("protocol_id", "?"), s.value("protocol_hash", "?").substr(0, 12));
  };
  std::string out = side_line("A", cmp.at("a")) + side_line("B", cmp.at("b"));
  if (cmp.contains("code_changed"))
    for (const json &c : cmp.at("code_changed")) {
      const auto code = [](const json &side) {
        const std::string what = side.value("code", "");
        return escape_control(fmt::format("{}{}", side.value("sha256", "?").substr(0, 12),
                                          what.empty() ? "" : " (" + what + ")"));
      };
      out += fmt::format("arm {}'s code differs: A runs {}, B runs {}; its ratios compare two "
                         "versions of its code\n",
                         escape_control(c.value("arm", "?")), code(c.at("a")), code(c.at("b")));
    }
  const double min_effect = cmp.value("min_effect", 0.0);
  const std::size_t runs_a = cmp.value("runs_a", std::size_t{1});
  const std::size_t runs_b = cmp.value("runs_b", std::size_t{1});
  if (runs_a > 1 || runs_b > 1)
    out += fmt::format("{} run(s) on side A, {} on side B: the bootstrap resamples runs, then "
                       "samples within each drawn run\n",
                       runs_a, runs_b);
  out += fmt::format("ratio = median B / median A; {:g}% percentile-bootstrap interval from {} "
                     "resamples; same = the interval contains 1 or the ratio is within {:g}% of "
                     "1 (--min-effect)\n",
                     100.0 * cmp.at("confidence").get<double>(),
                     cmp.at("bootstrap_resamples").get<std::size_t>(), 100.0 * min_effect);
  if (runs_a == 1 && runs_b == 1)
    out += "one run a side: the interval covers the noise within each run, not the variation "
           "from run to run (compare several runs a side for that)\n";
  return out;
}

/// "arm pass rowsxcols" of a compared cell.
std::string cell_text(const json &c) {
  if (c.contains("shape")) {
    cell_key k;
    if (read_shape_json(c, true, k).empty())
      return fmt::format("{} {} {}", c.at("arm").get<std::string>(),
                         c.at("pass").get<std::string>(), shape_label(k));
  }
  return fmt::format("{} {} {}x{}", c.at("arm").get<std::string>(), c.at("pass").get<std::string>(),
                     c.at("rows").get<std::int64_t>(), c.at("cols").get<std::int64_t>());
}

/// The aligned table of the compared cells, one line per cell after the heading.
std::string table_text(const json &cmp) {
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"cell", "median A", "median B", "ratio", "[lo, hi]", "mark"});
  for (const json &c : cmp.at("cells")) {
    const std::string interval =
        c.at("ci_lo").is_number() && c.at("ci_hi").is_number()
            ? fmt::format("[{:.3f}, {:.3f}]", c["ci_lo"].get<double>(), c["ci_hi"].get<double>())
            : "-";
    rows.push_back({cell_text(c), time_text(c.at("median_a_ms")), time_text(c.at("median_b_ms")),
                    ratio_text(c.at("ratio")), interval, c.at("mark").get<std::string>()});
  }
  std::array<std::size_t, 6> w{};
  for (const auto &r : rows)
    for (std::size_t i = 0; i < r.size(); ++i)
      w[i] = std::max(w[i], width(r[i]));
  std::string out;
  for (const auto &r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const bool right = i >= 1 && i <= 3;
      line += (i == 0 ? "" : "  ") + (i + 1 == r.size() ? r[i] : pad(r[i], w[i], right));
    }
    out += line + "\n";
  }
  return out;
}

/// The summary line, then the cells found in only one report.
std::string summary_text(const json &cmp) {
  const json &s = cmp.at("summary");
  std::string out =
      fmt::format("\n{} faster, {} slower, {} same", s.at("faster").get<std::size_t>(),
                  s.at("slower").get<std::size_t>(), s.at("same").get<std::size_t>());
  if (s.at("geomean_ratio").is_number())
    out += fmt::format("; geometric mean ratio {:.3f}", s["geomean_ratio"].get<double>());
  out += "\n";
  for (const auto &[key, name] :
       {std::pair{"only_in_a", "only in A"}, {"only_in_b", "only in B"}}) {
    const json &list = cmp.at(key);
    if (list.empty())
      continue;
    std::string cells;
    for (const json &c : list)
      cells += (cells.empty() ? "" : ", ") + cell_text(c);
    out += fmt::format("{} ({}): {}\n", name, list.size(), cells);
  }
  return out;
}

} // namespace

std::string render_comparison(const json &cmp) {
  std::string out = header_text(cmp);
  out += "\n";
  out += table_text(cmp);
  out += summary_text(cmp);
  return out;
}

} // namespace prereg
