// Renders report.md and report.html from report.json alone: tables, inline SVG charts, verdicts.
#include "report/report_text.hpp"

#include "base/stats.hpp"
#include "model/report_model.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace prereg {
namespace {

// ---------------------------------------------------------------------------------------------
// The protocol body is another format (the normalised protocol): read tolerantly, a missing
// member renders as "?". The report itself is read through the report model.

const json &null_json() {
  static const json j;
  return j;
}

const json &child(const json &obj, std::string_view key) {
  if (!obj.is_object())
    return null_json();
  const auto it = obj.find(key);
  return it == obj.end() ? null_json() : *it;
}

// The protocol body's extents: prereg: 1 `shapes`, prereg: 2 `axes` (both {rows, cols}).
const json &extents(const json &body) {
  return child(body, child(body, "axes").is_object() ? "axes" : "shapes");
}

std::optional<double> number(const json &obj, std::string_view key) {
  const json &v = child(obj, key);
  if (!v.is_number())
    return std::nullopt;
  const double d = v.get<double>();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

std::optional<std::int64_t> integer(const json &obj, std::string_view key) {
  const json &v = child(obj, key);
  if (v.is_number_integer())
    return v.get<std::int64_t>();
  return std::nullopt;
}

std::string value_text(const json &v);

std::string text(const json &obj, std::string_view key, std::string fallback = "") {
  const json &v = child(obj, key);
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_null())
    return fallback;
  return value_text(v);
}

// Any JSON value as one line of plain text; objects as `key=value` pairs in key order.
std::string value_text(const json &v) {
  switch (v.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return v.get<bool>() ? "true" : "false";
  case json::value_t::number_integer:
    return fmt::format("{}", v.get<std::int64_t>());
  case json::value_t::number_unsigned:
    return fmt::format("{}", v.get<std::uint64_t>());
  case json::value_t::number_float:
    return fmt::format("{:.6g}", v.get<double>());
  case json::value_t::string:
    return v.get<std::string>();
  case json::value_t::array: {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + value_text(v[i]);
    return out + "]";
  }
  case json::value_t::object: {
    std::string out;
    for (const auto &[k, x] : v.items())
      out += (out.empty() ? "" : ", ") + k + "=" + value_text(x);
    return "{" + out + "}";
  }
  default:
    return "?";
  }
}

// ---------------------------------------------------------------------------------------------
// Numbers, with fixed rules so that the same json always gives the same bytes.

// Three significant digits in a fixed-point form: 1.23, 12.3, 123.
std::string three_digits(double v) {
  const double a = std::fabs(v);
  return fmt::format("{:.{}f}", v, a < 10.0 ? 2 : a < 100.0 ? 1 : 0);
}

struct time_unit {
  double per_ms;
  const char *name;
};

time_unit unit_for(double ms) {
  const double a = std::fabs(ms);
  if (a < 1e-3)
    return {1e6, "ns"};
  if (a < 1.0)
    return {1e3, "µs"};
  if (a < 1e3)
    return {1.0, "ms"};
  return {1e-3, "s"};
}

std::string time_text(std::optional<double> ms) {
  if (!ms)
    return "—";
  const time_unit u = unit_for(*ms);
  return three_digits(*ms * u.per_ms) + " " + u.name;
}

// "median (IQR) unit", both in the median's unit and precision.
std::string median_iqr_text(double median_ms, std::optional<double> iqr_ms) {
  const time_unit u = unit_for(median_ms);
  const double m = median_ms * u.per_ms;
  const int digits = std::fabs(m) < 10.0 ? 2 : std::fabs(m) < 100.0 ? 1 : 0;
  if (!iqr_ms)
    return fmt::format("{:.{}f} {}", m, digits, u.name);
  return fmt::format("{:.{}f} ({:.{}f}) {}", m, digits, *iqr_ms * u.per_ms, digits, u.name);
}

// Renderer 2: the IQR keeps at least one significant digit (0.4 µs is not "(0)").
int iqr_digits(double iqr, int digits) {
  if (!(iqr > 0.0))
    return digits;
  return std::clamp(static_cast<int>(std::ceil(-std::log10(iqr))), digits, 6);
}

// Renderer 2: "median (IQR) unit" in a given unit (one per table row, so µs and ms never mix
// in a row), the IQR with at least one significant digit.
std::string median_iqr_in(const time_unit &u, double median_ms, std::optional<double> iqr_ms) {
  const double m = median_ms * u.per_ms;
  const int digits = std::fabs(m) < 10.0 ? 2 : std::fabs(m) < 100.0 ? 1 : 0;
  if (!iqr_ms)
    return fmt::format("{:.{}f} {}", m, digits, u.name);
  const double q = *iqr_ms * u.per_ms;
  return fmt::format("{:.{}f} ({:.{}f}) {}", m, digits, q, iqr_digits(q, digits), u.name);
}

std::string pct_text(double pct) { return fmt::format("{:.1f}%", pct); }

std::string gbps_text(double gbps) { return three_digits(gbps) + " GB/s"; }

// Decimal megabytes (10^6 bytes), as the contract's "peak MB".
std::string mb_text(double bytes) {
  if (bytes == 0.0)
    return "0";
  const double mb = bytes / 1e6;
  return fmt::format("{:.{}f}", mb, mb < 1.0 ? 3 : mb < 100.0 ? 2 : 1);
}

// Binary sizes for hardware facts: 50.0 MiB.
std::string bytes_text(double bytes) {
  static constexpr std::array<const char *, 5> units{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && i + 1 < units.size()) {
    v /= 1024.0;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, units[i]);
}

std::string error_text(std::optional<double> e) {
  return e ? fmt::format("{:.2e}", *e) : std::string("—");
}

std::string p_text(std::optional<double> p) {
  return p ? fmt::format("{:.4f}", *p) : std::string("— (not evaluated)");
}

// A finite number, or nullopt (the model's NaN for null).
std::optional<double> finite(double v) {
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string join(const std::vector<std::string> &items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i ? std::string(sep) : "") + items[i];
  return out;
}

// ---------------------------------------------------------------------------------------------
// The report as the renderers see it: dimensions in protocol order, cells by key.

using cell_id = std::tuple<std::string, std::string, std::int64_t, std::int64_t>;

struct view {
  const report_document *report = nullptr;
  const json *body = nullptr;
  std::vector<std::string> arms;
  std::vector<std::string> passes;
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> cols;
  std::optional<std::pair<std::int64_t, std::int64_t>> op;
  std::map<cell_id, const report_cell *> cells;
  std::optional<double> unstable_ratio;
  int renderer = 1;         ///< the report's tool.renderer: which layout to reproduce
  bool exploratory = false; ///< `prereg try`: never confirmatory
};

template <class T> void add_unique(std::vector<T> &v, const T &x) {
  if (std::find(v.begin(), v.end(), x) == v.end())
    v.push_back(x);
}

view make_view(const report_document &report) {
  view v;
  v.report = &report;
  v.body = &report.protocol.body;
  v.renderer = report.tool.renderer;
  v.exploratory = report.exploratory;
  const json &body = *v.body;
  for (const json &a : child(body, "arms"))
    if (a.is_object() && a.contains("id"))
      add_unique(v.arms, text(a, "id"));
  for (const json &p : child(body, "passes"))
    if (p.is_string())
      add_unique(v.passes, p.get<std::string>());
  for (const json &r : child(extents(body), "rows"))
    if (r.is_number_integer())
      add_unique(v.rows, r.get<std::int64_t>());
  for (const json &c : child(extents(body), "cols"))
    if (c.is_number_integer())
      add_unique(v.cols, c.get<std::int64_t>());
  const json &op = child(body, "operating_point");
  if (integer(op, "rows") && integer(op, "cols"))
    v.op = {*integer(op, "rows"), *integer(op, "cols")};
  v.unstable_ratio = number(child(body, "analysis"), "unstable_iqr_ratio");
  for (const report_cell &c : report.cells) {
    cell_id k{c.key.arm, std::string(to_string(c.key.pass)), c.key.rows, c.key.cols};
    add_unique(v.arms, std::get<0>(k));
    add_unique(v.passes, std::get<1>(k));
    add_unique(v.rows, c.key.rows);
    add_unique(v.cols, c.key.cols);
    v.cells.emplace(std::move(k), &c);
  }
  std::sort(v.rows.begin(), v.rows.end());
  std::sort(v.cols.begin(), v.cols.end());
  return v;
}

const report_cell *find_cell(const view &v, const std::string &arm, const std::string &pass,
                             std::int64_t rows, std::int64_t cols) {
  const auto it = v.cells.find({arm, pass, rows, cols});
  return it == v.cells.end() ? nullptr : it->second;
}

bool has_flag(const report_cell &cell, std::string_view flag) {
  return std::find(cell.flags.begin(), cell.flags.end(), flag) != cell.flags.end();
}

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return fmt::format("{}×{}", rows, cols);
}

bool is_op_column(const view &v, std::int64_t rows, std::int64_t cols) {
  return v.op && v.op->first == rows && v.op->second == cols;
}

// ---------------------------------------------------------------------------------------------
// A small table model, rendered to Markdown or HTML.

struct span {
  std::string text;
  bool code = false;
  bool strong = false;
  std::string suffix; ///< plain text after the main text (e.g. " ◀ operating point")
  std::string cls;    ///< HTML class
  std::string title;  ///< HTML tooltip
};

span plain(std::string t) {
  span s;
  s.text = std::move(t);
  return s;
}
span code(std::string t) {
  span s = plain(std::move(t));
  s.code = true;
  return s;
}

struct table {
  std::vector<span> header;
  std::vector<bool> numeric; ///< right-aligned columns
  std::vector<std::vector<span>> rows;
  bool row_headers = false; ///< first column names the row
  std::string cls;          ///< HTML class of the table
};

// Markdown text: escapes what would start markup, an HTML tag or break a table row.
std::string md(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (std::string_view("\\`*[]<>|").find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

std::string md_code(std::string_view s) {
  std::string body;
  for (const char c : s) {
    if (c == '|')
      body += "\\|";
    else if (c == '\n' || c == '\r')
      body += ' ';
    else
      body += c;
  }
  if (body.find('`') != std::string::npos)
    return "`` " + body + " ``";
  return "`" + body + "`";
}

std::string md_span(const span &s) {
  std::string t = s.code ? md_code(s.text) : md(s.text);
  if (s.strong && !t.empty())
    t = "**" + t + "**";
  return t + md(s.suffix);
}

std::string to_markdown(const table &t) {
  // Appended piece by piece: " " + string trips GCC 12's -Wrestrict (a false positive).
  std::string out = "|";
  for (const auto &h : t.header)
    out.append(" ").append(md_span(h)).append(" |");
  out += "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i)
    out += (i < t.numeric.size() && t.numeric[i]) ? " ---: |" : " --- |";
  out += "\n";
  for (const auto &row : t.rows) {
    out += "|";
    for (const auto &c : row)
      out.append(" ").append(md_span(c)).append(" |");
    out += "\n";
  }
  return out;
}

std::string html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string html_span(const span &s) {
  std::string t = html(s.text);
  if (s.code)
    t = "<code>" + t + "</code>";
  if (s.strong)
    t = "<strong>" + t + "</strong>";
  if (!s.suffix.empty())
    t += "<span class=\"suffix\">" + html(s.suffix) + "</span>";
  return t;
}

std::string html_attrs(const span &s, bool numeric) {
  std::string cls = s.cls;
  if (numeric)
    cls += cls.empty() ? "num" : " num";
  std::string out;
  if (!cls.empty())
    out += " class=\"" + html(cls) + "\"";
  if (!s.title.empty())
    out += " title=\"" + html(s.title) + "\"";
  return out;
}

std::string to_html(const table &t) {
  const auto numeric = [&](std::size_t i) { return i < t.numeric.size() && t.numeric[i]; };
  std::string out = t.cls.empty() ? "<table>" : "<table class=\"" + html(t.cls) + "\">";
  out += "<thead><tr>";
  if (t.cls == "kv" && t.header.size() == 2 && t.header[1].text.empty()) {
    out += "<th scope=\"colgroup\" colspan=\"2\">" + html_span(t.header[0]) + "</th>";
  } else {
    for (std::size_t i = 0; i < t.header.size(); ++i)
      out += "<th scope=\"col\"" + html_attrs(t.header[i], numeric(i)) + ">" +
             html_span(t.header[i]) + "</th>";
  }
  out += "</tr></thead>\n<tbody>\n";
  for (const auto &row : t.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool th = t.row_headers && i == 0;
      out += std::string(th ? "<th scope=\"row\"" : "<td") + html_attrs(row[i], numeric(i)) + ">" +
             html_span(row[i]) + (th ? "</th>" : "</td>");
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

// ---------------------------------------------------------------------------------------------
// The tables of a report, shared by both renderers.

table run_table(const view &v) {
  const report_document &r = *v.report;
  const json &freeze = r.protocol.freeze;
  const report_run &run = r.run;
  const report_tool &tool = r.tool;
  table t{{plain("run"), plain("")}, {}, {}, true, "kv"};
  t.rows.push_back({plain("protocol"), code(text(*v.body, "id", "?"))});
  t.rows.push_back({plain("protocol hash"), code(r.protocol.hash)});
  t.rows.push_back({plain("frozen"), plain(fmt::format("{} by {}", text(freeze, "frozen_at", "?"),
                                                       text(freeze, "signer", "?")))});
  t.rows.push_back({plain("run id"), code(run.run_id)});
  t.rows.push_back(
      {plain("run time"), plain(fmt::format("{} → {}", run.started_at, run.finished_at))});
  t.rows.push_back(
      {plain("attempt"),
       plain(fmt::format("{} (this run's number among all runs of this protocol in the ledger)",
                         r.attempt))});
  t.rows.push_back(
      {plain("tool"), plain(fmt::format("{} {}, commit {}, {}", tool.name, tool.version,
                                        tool.git_commit, tool.build_flags))});
  return t;
}

std::string environment_value(const std::string &key, const json &value) {
  if (value.is_number() && key.size() > 6 && key.ends_with("_bytes")) {
    return fmt::format("{} ({} bytes)", bytes_text(value.get<double>()), value_text(value));
  }
  if (key == "other_processes") {
    if (value.is_array() && value.empty())
      return "none seen";
    if (value.is_string())
      return value.get<std::string>() + " (not observable here)";
  }
  return value_text(value);
}

table environment_table(const view &v) {
  static const std::vector<std::pair<std::string, std::string>> known{
      {"device_name", "device"},
      {"driver_version", "driver"},
      {"runtime_version", "runtime"},
      {"compute_capability", "compute capability"},
      {"sm_count", "SMs"},
      {"l2_bytes", "L2 cache"},
      {"memory_bytes", "device memory"},
      {"sm_clock_mhz", "SM clock (MHz)"},
      {"memory_clock_mhz", "memory clock (MHz)"},
      {"cores", "cores"},
      {"llc_bytes", "last-level cache"},
      {"other_processes", "other processes"}};
  const json &env = v.report->environment;
  table t{{plain("environment"), plain("")}, {}, {}, true, "kv"};
  std::set<std::string> shown;
  for (const auto &[key, name] : known) {
    if (!env.is_object() || !env.contains(key))
      continue;
    t.rows.push_back({plain(name), plain(environment_value(key, env.at(key)))});
    shown.insert(key);
  }
  if (env.is_object())
    for (const auto &[key, value] : env.items())
      if (!shown.contains(key))
        t.rows.push_back({code(key), plain(environment_value(key, value))});
  t.rows.push_back(
      {plain("device ordinal"), plain(fmt::format("{}", v.report->run.device_ordinal))});
  return t;
}

table instrument_table(const view &v) {
  const report_instrument &in = v.report->instrument;
  table t{{plain("instrument"), plain("")}, {}, {}, true, "kv"};
  std::string ceiling = "not measured";
  if (const auto c = finite(in.ceiling_gbps)) {
    ceiling = gbps_text(*c) + " (measured copy bandwidth, bytes read + written";
    const auto &samples = in.ceiling_samples_gbps;
    if (!samples.empty()) {
      double lo = INFINITY, hi = -INFINITY;
      for (const double s : samples)
        lo = std::min(lo, s), hi = std::max(hi, s);
      ceiling += fmt::format("; median of {} copies, range {} to {}", samples.size(),
                             three_digits(lo), three_digits(hi));
    }
    ceiling += " of " + bytes_text(static_cast<double>(in.ceiling_bytes));
    ceiling += ")";
  }
  t.rows.push_back({plain("copy ceiling"), plain(ceiling)});
  t.rows.push_back({plain("launch floor"), plain(time_text(finite(in.launch_floor_ms)) +
                                                 " (median time of an empty step)")});
  t.rows.push_back({plain("timer resolution"), plain(time_text(finite(in.timer_resolution_ms)))});
  std::string flush_text =
      in.flush_bytes == 0
          ? std::string("none")
          : fmt::format("reads {} ({})", bytes_text(static_cast<double>(in.flush_bytes)),
                        in.flush_method);
  if (in.llc_bytes > 0)
    flush_text +=
        fmt::format("; last-level cache {}", bytes_text(static_cast<double>(in.llc_bytes)));
  t.rows.push_back({plain("cache flush"), plain(flush_text)});
  const auto clock = finite(in.clock_start_mhz);
  t.rows.push_back({plain("SM clock at start"),
                    plain(clock ? fmt::format("{:.0f} MHz", *clock) : std::string("not read"))});
  // The kernel clock (schema 4): shown where the report records one or why there is none.
  const json &env = v.report->environment;
  if (!in.kernel_clock.empty()) {
    std::string k = in.kernel_clock;
    if (const auto f = finite(in.kernel_clock_floor_ms))
      k += "; empty step with it on " + time_text(f) + " (launch floor without it " +
           time_text(finite(in.launch_floor_ms)) + ")";
    if (in.kernel_records_dropped > 0)
      k += fmt::format("; {} records dropped", in.kernel_records_dropped);
    t.rows.push_back({plain("kernel clock"), plain(k)});
  } else if (env.is_object() && env.contains("kernel_clock") && env["kernel_clock"].is_string()) {
    t.rows.push_back({plain("kernel clock"), plain(env["kernel_clock"].get<std::string>())});
  }
  return t;
}

std::string list_text(const json &list) {
  if (!list.is_array())
    return value_text(list);
  std::vector<std::string> items;
  for (const json &x : list)
    items.push_back(x.is_string() ? x.get<std::string>() : value_text(x));
  return join(items, ", ");
}

table design_table(const view &v) {
  const json &b = *v.body;
  const json &m = child(b, "measurement");
  const json &a = child(b, "analysis");
  const json &c = child(b, "correctness");
  table t{{plain("design"), plain("")}, {}, {}, true, "kv"};
  t.rows.push_back({plain("device"), plain(text(b, "device", "?"))});
  t.rows.push_back({plain("operation"), plain(fmt::format("{}, {}", text(b, "operation", "?"),
                                                          text(b, "dtype", "?")))});
  t.rows.push_back(
      {plain("shapes"), plain(fmt::format("rows {} × cols {}", list_text(child(extents(b), "rows")),
                                          list_text(child(extents(b), "cols"))))});
  t.rows.push_back({plain("passes"), plain(list_text(child(b, "passes")))});
  t.rows.push_back({plain("operating point"),
                    plain(v.op ? shape_text(v.op->first, v.op->second) : std::string("none"))});
  t.rows.push_back(
      {plain("measurement"),
       plain(fmt::format("{} repetitions after {} warm-up steps, cache flush {}, {} order",
                         text(m, "repetitions", "?"), text(m, "warmup", "?"),
                         text(m, "l2_flush", "?") == "true" ? "on" : "off",
                         text(m, "order", "?")))});
  t.rows.push_back({plain("analysis"),
                    plain(fmt::format(
                        "statistic {}, confidence {}, {} bootstrap resamples, unstable if "
                        "IQR/median > {}",
                        text(a, "statistic", "?"), text(a, "confidence", "?"),
                        text(a, "bootstrap_resamples", "?"), text(a, "unstable_iqr_ratio", "?")))});
  t.rows.push_back({plain("tolerance"), plain(fmt::format("rtol {}, atol {}", text(c, "rtol", "?"),
                                                          text(c, "atol", "?")))});
  return t;
}

table arms_table(const view &v) {
  // An options column only where some arm sets options (prereg: 2), so earlier pages are
  // regenerated byte for byte.
  bool any_options = false;
  for (const json &a : child(*v.body, "arms"))
    if (const auto o = a.find("options"); o != a.end() && o->is_object() && !o->empty())
      any_options = true;
  table t{{plain("arm"), plain("kernel"), plain("launch"), plain("repeat")},
          {false, false, false, true},
          {},
          true,
          "arms"};
  if (any_options) {
    t.header.push_back(plain("options"));
    t.numeric.push_back(false);
  }
  for (const json &a : child(*v.body, "arms")) {
    std::vector<span> row{code(text(a, "id", "?")), code(text(a, "kernel", "?")),
                          plain(text(a, "launch", "?")), plain(text(a, "repeat", "?"))};
    if (any_options) {
      std::string opts;
      if (const auto o = a.find("options"); o != a.end() && o->is_object())
        for (const auto &[k, val] : o->items())
          opts += (opts.empty() ? "" : ", ") + k + " " + value_text(val);
      row.push_back(plain(opts.empty() ? "-" : opts));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

// One results table (arms x rows at one pass and cols); `cell_fn` gives a cell's text.
template <class F>
table results_table(const view &v, const std::string &pass, std::int64_t cols, F cell_fn) {
  table t{{plain("arm")}, {false}, {}, true, "results"};
  for (const auto r : v.rows) {
    span h = plain(fmt::format("{}", r));
    if (is_op_column(v, r, cols)) {
      h.strong = true;
      h.suffix = " ◀ operating point";
      h.cls = "op";
    }
    t.header.push_back(h);
    t.numeric.push_back(true);
  }
  for (const auto &arm : v.arms) {
    std::vector<span> row{code(arm)};
    for (const auto r : v.rows) {
      const report_cell *cell = find_cell(v, arm, pass, r, cols);
      span s;
      if (cell == nullptr) {
        s = plain("not run");
        s.cls = "missing";
      } else {
        s = cell_fn(*cell);
        const auto &flags = cell->flags;
        if (!flags.empty()) {
          s.suffix += " ⚠";
          s.cls += s.cls.empty() ? "flagged" : " flagged";
          s.title = join(flags, ", ");
          if (has_flag(*cell, "unstable"))
            s.cls += " unstable";
        }
      }
      if (is_op_column(v, r, cols))
        s.cls += s.cls.empty() ? "op" : " op";
      row.push_back(s);
    }
    t.rows.push_back(row);
  }
  return t;
}

span time_cell(const report_cell &c) {
  const auto m = finite(c.median_ms);
  if (!m)
    return plain("no samples");
  return plain(median_iqr_text(*m, finite(c.iqr_ms)));
}

// The time table: renderer 1 picks a unit per cell, renderer 2 one per row (the unit of the
// row's smallest median).
table time_table(const view &v, const std::string &pass, std::int64_t cols) {
  if (v.renderer < 2)
    return results_table(v, pass, cols, time_cell);
  std::map<std::string, time_unit> unit_of;
  for (const auto &arm : v.arms) {
    std::optional<double> lo;
    for (const auto r : v.rows)
      if (const report_cell *c = find_cell(v, arm, pass, r, cols))
        if (const auto m = finite(c->median_ms))
          lo = std::min(lo.value_or(*m), *m);
    unit_of.emplace(arm, unit_for(lo.value_or(1.0)));
  }
  return results_table(v, pass, cols, [&](const report_cell &c) {
    const auto m = finite(c.median_ms);
    if (!m)
      return plain("no samples");
    return plain(median_iqr_in(unit_of.at(c.key.arm), *m, finite(c.iqr_ms)));
  });
}

// Renderer 2's summary: per shape at one pass and cols, each arm's speedup over the first arm
// (baseline median / arm median), the fastest arm in bold.
table speedup_table(const view &v, const std::string &pass, std::int64_t cols) {
  table t{{plain("arm")}, {false}, {}, true, "speedup"};
  for (const auto r : v.rows) {
    t.header.push_back(plain(fmt::format("{}", r)));
    t.numeric.push_back(true);
  }
  const std::string &base = v.arms.front();
  for (const auto &arm : v.arms) {
    std::vector<span> row{code(arm)};
    for (const auto r : v.rows) {
      const report_cell *b = find_cell(v, base, pass, r, cols);
      const report_cell *c = find_cell(v, arm, pass, r, cols);
      const auto bm = b ? finite(b->median_ms) : std::nullopt;
      const auto cm = c ? finite(c->median_ms) : std::nullopt;
      if (!bm || !cm || *cm <= 0.0) {
        row.push_back(plain("—"));
        continue;
      }
      span s = plain(fmt::format("{:.2f}x", *bm / *cm));
      std::optional<double> best;
      for (const auto &other : v.arms)
        if (const report_cell *o = find_cell(v, other, pass, r, cols))
          if (const auto om = finite(o->median_ms))
            best = std::min(best.value_or(*om), *om);
      if (best && *cm == *best) {
        s.strong = true;
        s.suffix = " fastest";
        s.cls = "winner";
      }
      row.push_back(s);
    }
    t.rows.push_back(row);
  }
  return t;
}

span pct_cell(const report_cell &c) {
  const auto p = finite(c.pct_ceiling);
  if (!p)
    return plain("—");
  const std::string bound(to_string(c.bound));
  return plain(pct_text(*p) + (c.bound != bound_kind::neither ? " (" + bound + ")" : ""));
}

// The kernel clock's cell: kernel time per step (median) and the gap's share of the step.
span kernel_cell(const report_cell &c) {
  if (!c.kernel_clock)
    return plain("—");
  const auto k = finite(c.kernel_clock->median_kernel_ms);
  const auto g = finite(c.kernel_clock->gap_share_pct);
  if (!k)
    return plain("no samples");
  return plain(time_text(k) + (g ? fmt::format(", gap {:.0f}%", *g) : std::string()));
}

bool has_kernel_clock(const view &v) {
  return std::any_of(v.report->cells.begin(), v.report->cells.end(),
                     [](const report_cell &c) { return c.kernel_clock.has_value(); });
}

// The profile: per cell with a kernel clock, its kernels by share of the step time (at most
// `per_cell`, the largest first), the table a kernel engineer starts from.
table profile_table(const view &v, std::size_t per_cell = 8) {
  table t{{plain("cell"), plain("kernel"), plain("calls/step"), plain("median/step"),
           plain("share of step")},
          {false, false, true, true, true},
          {},
          true,
          "profile"};
  for (const report_cell &c : v.report->cells) {
    if (!c.kernel_clock || c.n == 0)
      continue;
    std::vector<const report_kernel_name *> names;
    for (const auto &n : c.kernel_clock->names)
      names.push_back(&n);
    std::stable_sort(names.begin(), names.end(),
                     [](const auto *a, const auto *b) { return a->share_pct > b->share_pct; });
    const std::string where = fmt::format("{} {} {}", c.key.arm, to_string(c.key.pass),
                                          shape_text(c.key.rows, c.key.cols));
    double gap = 0;
    if (const auto g = finite(c.kernel_clock->gap_share_pct))
      gap = *g;
    std::size_t shown = 0;
    for (const auto *n : names) {
      if (shown++ == per_cell)
        break;
      t.rows.push_back(
          {code(where), code(n->name),
           plain(three_digits(static_cast<double>(n->calls) / static_cast<double>(c.n))),
           plain(time_text(finite(n->median_ms))),
           plain(finite(n->share_pct) ? pct_text(n->share_pct) : "—")});
    }
    if (names.size() > per_cell)
      t.rows.push_back({code(where),
                        plain(fmt::format("({} more kernels)", names.size() - per_cell)), plain(""),
                        plain(""), plain("")});
    t.rows.push_back({code(where), plain("(gap: launch, events, host; median share)"), plain(""),
                      plain(time_text(finite(c.kernel_clock->median_gap_ms))),
                      plain(pct_text(gap))});
  }
  return t;
}

span peak_cell(const report_cell &c) {
  if (!finite(c.median_ms))
    return plain("—");
  return plain(mb_text(static_cast<double>(c.peak_bytes)));
}

// The flagged cells of one results block, one line each.
std::vector<std::pair<std::string, std::string>> flag_notes(const view &v, const std::string &pass,
                                                            std::int64_t cols) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto &arm : v.arms)
    for (const auto r : v.rows) {
      const report_cell *cell = find_cell(v, arm, pass, r, cols);
      if (cell == nullptr)
        continue;
      if (cell->flags.empty())
        continue;
      std::string note = fmt::format("{} rows: {}", r, join(cell->flags, ", "));
      note += fmt::format(" (n = {})", cell->n);
      if (cell->error && !cell->error->empty())
        note += " — " + *cell->error;
      out.emplace_back(arm, note);
    }
  return out;
}

std::string at_text(const json &at) {
  std::vector<std::string> parts;
  for (const char *k : {"rows", "cols", "pass"})
    if (at.is_object() && at.contains(k))
      parts.push_back(fmt::format("{} {}", k, list_text(at[k])));
  return parts.empty() ? std::string("every cell") : join(parts, "; ");
}

const json &spec_json(const view &v, const std::string &id) {
  for (const json &p : child(*v.body, "predictions"))
    if (text(p, "id") == id)
      return p;
  return null_json();
}

table prediction_summary(const view &v) {
  table t{{plain("prediction"), plain("verdict"), plain("criterion"), plain("at")},
          {},
          {},
          true,
          "predictions"};
  for (const prediction_result &p : v.report->predictions) {
    const std::string verdict_name(to_string(p.verdict));
    span verdict = plain(verdict_name);
    verdict.strong = true;
    verdict.cls = "verdict " + verdict_name;
    t.rows.push_back(
        {code(p.id), verdict, code(p.expect), plain(at_text(child(spec_json(v, p.id), "at")))});
  }
  return t;
}

table prediction_cells(const prediction_result &p) {
  table t{{plain("cell"), plain("p")}, {false, true}, {}, false, "pcells"};
  for (const cell_p &c : p.cells)
    t.rows.push_back({plain(fmt::format("{} {}", to_string(c.pass), shape_text(c.rows, c.cols))),
                      plain(p_text(c.p))});
  return t;
}

std::string cell_ref_text(const std::optional<cell_key> &cell) {
  if (!cell)
    return "whole run";
  return fmt::format("{} {} {}", cell->arm, to_string(cell->pass),
                     shape_text(cell->rows, cell->cols));
}

std::string evidence_text(const json &evidence) {
  if (!evidence.is_object())
    return evidence.is_null() ? "" : value_text(evidence);
  std::vector<std::string> items;
  for (const auto &[k, x] : evidence.items())
    items.push_back(k + " = " + value_text(x));
  return join(items, "; ");
}

table defects_table(const view &v) {
  table t{
      {plain("code"), plain("cell"), plain("message"), plain("evidence")}, {}, {}, true, "defects"};
  for (const report_defect &d : v.report->defects)
    t.rows.push_back({code(d.code), plain(cell_ref_text(d.cell)), plain(d.message),
                      plain(evidence_text(d.evidence))});
  return t;
}

table deviations_table(const view &v) {
  table t{{plain("kind"), plain("cell"), plain("message"), plain("details")},
          {},
          {},
          true,
          "deviations"};
  for (const report_deviation &d : v.report->deviations)
    t.rows.push_back({code(d.kind), plain(cell_ref_text(d.cell)), plain(d.message),
                      plain(evidence_text(d.extra))});
  return t;
}

struct correctness_summary {
  std::size_t checks = 0;
  std::size_t failed = 0;
  table per_arm;
  std::vector<std::string> failures;
};

correctness_summary summarise_correctness(const view &v) {
  struct agg {
    std::size_t checks = 0, failed = 0, unwritten = 0;
    std::optional<double> abs, rel;
  };
  std::map<std::pair<std::string, std::string>, agg> by;
  std::vector<std::pair<std::string, std::string>> order;
  correctness_summary s;
  for (const report_correctness &c : v.report->correctness) {
    const std::pair key{c.key.arm, std::string(to_string(c.key.pass))};
    if (!by.contains(key))
      order.push_back(key);
    agg &a = by[key];
    ++a.checks;
    ++s.checks;
    if (c.unwritten)
      ++a.unwritten;
    if (const auto e = finite(c.max_abs_error))
      a.abs = std::max(a.abs.value_or(*e), *e);
    if (const auto e = finite(c.max_rel_error))
      a.rel = std::max(a.rel.value_or(*e), *e);
    if (!c.passed) {
      ++a.failed;
      ++s.failed;
      std::string f =
          fmt::format("{} {} {}: max abs error {}, max rel error {}", key.first, key.second,
                      shape_text(c.key.rows, c.key.cols), error_text(finite(c.max_abs_error)),
                      error_text(finite(c.max_rel_error)));
      if (c.unwritten)
        f += ", some output unwritten";
      if (!c.detail.empty())
        f += " — " + c.detail;
      s.failures.push_back(f);
    }
  }
  s.per_arm = {{plain("arm"), plain("pass"), plain("shapes checked"), plain("failed"),
                plain("max abs error"), plain("max rel error")},
               {false, false, true, true, true, true},
               {},
               true,
               "correctness"};
  for (const auto &key : order) {
    const agg &a = by.at(key);
    span failed = plain(fmt::format("{}", a.failed));
    if (a.failed > 0) {
      failed.strong = true;
      failed.cls = "fail";
    }
    s.per_arm.rows.push_back({code(key.first), plain(key.second),
                              plain(fmt::format("{}", a.checks)), failed, plain(error_text(a.abs)),
                              plain(error_text(a.rel))});
  }
  return s;
}

std::string md_list(const std::vector<std::string> &items) {
  std::string out;
  for (const auto &i : items)
    out += "- " + md(i) + "\n";
  return out;
}

std::string cols_heading(const view &v, const std::string &pass, std::int64_t cols) {
  return fmt::format("{}, cols = {}", pass, cols) +
         (v.op && v.op->second == cols ? fmt::format(" (operating point: {} rows)", v.op->first)
                                       : std::string());
}

// Renderer 2's summary block: the operating point's cols, else the first.
std::int64_t summary_cols(const view &v) { return v.op ? v.op->second : v.cols.front(); }

const char *exploratory_text =
    "EXPLORATORY: `prereg try` ran this protocol as a file, unfrozen. It was not "
    "pre-registered, is not signed and is not in any ledger; its verdicts are not "
    "confirmatory and `prereg audit` refuses it.";

const char *tolerance_text =
    "Each output passes if every element has |out − ref| ≤ atol + rtol · max|ref| (the "
    "tolerance is relative to that output's largest reference magnitude, not to each "
    "element). \"max rel error\" is the largest element-wise |out − ref| / |ref|: it can exceed "
    "1 where a reference value is near 0 while the check passes.";

} // namespace

// =============================================================================================
// report.md

std::string render_markdown(const json &report) {
  return render_markdown(report_from_json(report, "report.json"));
}

std::string render_markdown(const report_document &report) {
  const view v = make_view(report);
  const json &b = *v.body;
  const bool r2 = v.renderer >= 2;
  std::string out = "# " + std::string(v.exploratory ? "EXPLORATORY: " : "") +
                    md(text(b, "title", "prereg report")) + "\n\n";
  if (v.exploratory)
    out +=
        fmt::format("> **{}**\n\nReport of protocol {} (not frozen), run {}.\n\n",
                    md(exploratory_text), md_code(text(b, "id", "?")), md_code(report.run.run_id));
  else
    out += fmt::format("Report of protocol {}, attempt **{}**, run {}.\n\n",
                       md_code(text(b, "id", "?")), report.attempt, md_code(report.run.run_id));
  if (const std::string h = text(b, "hypothesis"); !h.empty())
    out += "> **Hypothesis.** " + md(h) + "\n\n";

  // Verdicts first: what the reader came for.
  out += "## Verdicts\n\n";
  if (report.predictions.empty())
    out += "No predictions.\n\n";
  else
    out += to_markdown(prediction_summary(v)) + "\n";
  out += fmt::format("{} defect(s), {} deviation(s), {} of {} correctness check(s) failed.\n\n",
                     report.defects.size(), report.deviations.size(),
                     summarise_correctness(v).failed, summarise_correctness(v).checks);

  const auto environment_and_design = [&] {
    std::string e = "## Environment and instrument\n\n";
    e += to_markdown(environment_table(v)) + "\n";
    e += to_markdown(instrument_table(v)) + "\n";
    e += to_markdown(run_table(v)) + "\n";
    e += "## Design\n\n" + to_markdown(design_table(v)) + "\n" + to_markdown(arms_table(v)) + "\n";
    return e;
  };
  if (!r2) {
    out += environment_and_design();
  } else if (!v.arms.empty() && !v.cols.empty()) {
    // Renderer 2: the summary first, the environment at the end.
    const std::int64_t cols = summary_cols(v);
    out += "## Summary\n\n";
    for (const auto &pass : v.passes) {
      out += fmt::format("Speedup over {} (its median / the arm's), {}, cols {}; the fastest arm "
                         "per shape in bold:\n\n",
                         md_code(v.arms.front()), md(pass), cols);
      out += to_markdown(speedup_table(v, pass, cols)) + "\n";
    }
  }

  for (const auto &pass : v.passes) {
    out += "## Results: " + md(pass) + "\n\n";
    for (const auto cols : v.cols) {
      if (v.cols.size() > 1 || v.op)
        out += "### " + md(cols_heading(v, pass, cols)) + "\n\n";
      out += "Time per step, median (IQR):\n\n" + to_markdown(time_table(v, pass, cols));
      out += "\n% of the copy ceiling (bound where launch or bandwidth):\n\n" +
             to_markdown(results_table(v, pass, cols, pct_cell));
      out += "\nPeak memory (MB = 10^6 bytes):\n\n" +
             to_markdown(results_table(v, pass, cols, peak_cell));
      if (has_kernel_clock(v))
        out += "\nKernel time per step (kernel clock), median, and the gap's median share of the "
               "step:\n\n" +
               to_markdown(results_table(v, pass, cols, kernel_cell));
      const auto notes = flag_notes(v, pass, cols);
      if (!notes.empty()) {
        out += "\n⚠ Flagged cells:\n\n";
        for (const auto &[arm, note] : notes)
          out += "- " + md_code(arm) + " at " + md(note) + "\n";
      }
      out += "\n";
    }
  }

  // Only reports with regions get this section: every other report renders as before.
  if (std::any_of(report.cells.begin(), report.cells.end(),
                  [](const report_cell &c) { return !c.region_shares.empty(); })) {
    out += "## Region shares\n\n";
    out += "Each named region's time as a share of the step: 100 x its summed time / the "
           "step's summed time over the samples, with the percentile-bootstrap interval at the "
           "protocol's confidence. Regions may nest, so shares need not sum to 100.\n\n";
    out += "| arm | pass | shape | region | share | interval | median region time |\n"
           "| --- | --- | --- | --- | ---: | ---: | ---: |\n";
    const auto pct = [](double x) { return std::isfinite(x) ? pct_text(x) : std::string("n/a"); };
    for (const report_cell &c : report.cells)
      for (const region_share &r : c.region_shares) {
        const auto ms = c.regions_ms.find(r.label);
        const double med = ms == c.regions_ms.end() || ms->second.empty()
                               ? std::numeric_limits<double>::quiet_NaN()
                               : median(ms->second);
        out += fmt::format("| {} | {} | {} | {} | {} | {} .. {} | {} |\n", md_code(c.key.arm),
                           md(std::string(to_string(c.key.pass))),
                           md(shape_text(c.key.rows, c.key.cols)), md_code(r.label),
                           pct(r.share_pct), pct(r.lo_pct), pct(r.hi_pct),
                           std::isfinite(med) ? md(time_text(med)) : std::string("n/a"));
      }
    out += "\n";
    // With the kernel clock's region marks: the same regions by the kernels that ran in them.
    if (std::any_of(report.cells.begin(), report.cells.end(), [](const report_cell &c) {
          return std::any_of(c.region_shares.begin(), c.region_shares.end(),
                             [](const region_share &r) { return r.kernel; });
        })) {
      out += "By the kernel clock: the kernels that ran between each region's marks, as a share "
             "of the step's kernel time (100 x their summed time / the step's summed kernel "
             "time), with the interval from the same resampled samples, beside the events' "
             "share of the step. A region whose events share is far above its kernel share "
             "spends its time launching, not computing.\n\n";
      out += "| arm | pass | shape | region | events share | kernel share | interval | median "
             "region kernel time |\n"
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n";
      for (const report_cell &c : report.cells)
        for (const region_share &r : c.region_shares) {
          if (!r.kernel)
            continue;
          const auto ms = c.region_kernels_ms.find(r.label);
          const double med = ms == c.region_kernels_ms.end() || ms->second.empty()
                                 ? std::numeric_limits<double>::quiet_NaN()
                                 : median(ms->second);
          out += fmt::format(
              "| {} | {} | {} | {} | {} | {} | {} .. {} | {} |\n", md_code(c.key.arm),
              md(std::string(to_string(c.key.pass))), md(shape_text(c.key.rows, c.key.cols)),
              md_code(r.label), pct(r.share_pct), pct(r.kernel_share_pct), pct(r.kernel_lo_pct),
              pct(r.kernel_hi_pct), std::isfinite(med) ? md(time_text(med)) : std::string("n/a"));
        }
      out += "\n";
    }
  }

  out += "## Predictions\n\n";
  for (const prediction_result &p : report.predictions) {
    const std::string &id = p.id;
    const std::string verdict(to_string(p.verdict));
    out += fmt::format("### {} — {}\n\n", md(id), md(verdict));
    out += "- **Claim:** " + md(p.claim) + "\n";
    out += "- **Criterion:** " + md_code(p.expect) + " at " +
           md(at_text(child(spec_json(v, id), "at"))) + "\n";
    out += "- **Verdict:** **" + md(verdict) + "** — " + md(p.reason) + "\n\n";
    out += to_markdown(prediction_cells(p)) + "\n";
  }

  if (has_kernel_clock(v))
    out += "## Profile (kernel clock)\n\nPer cell, its kernels by share of the step time "
           "(summed device time / summed step time), and the gap the kernels leave:\n\n" +
           to_markdown(profile_table(v)) + "\n";

  out += fmt::format("## Defects ({})\n\n", report.defects.size());
  out += report.defects.empty() ? "The instrument reported no defects.\n\n"
                                : to_markdown(defects_table(v)) + "\n";
  out += fmt::format("## Deviations ({})\n\n", report.deviations.size());
  out += report.deviations.empty() ? "The run followed the protocol.\n\n"
                                   : to_markdown(deviations_table(v)) + "\n";

  const correctness_summary cs = summarise_correctness(v);
  out += "## Correctness\n\n";
  out += fmt::format("{} check(s) against the float64 reference, {} failed (tolerance rtol {}, "
                     "atol {}).\n\n",
                     cs.checks, cs.failed, text(child(b, "correctness"), "rtol", "?"),
                     text(child(b, "correctness"), "atol", "?"));
  if (r2)
    out += md(tolerance_text) + "\n\n";
  if (cs.checks > 0)
    out += to_markdown(cs.per_arm) + "\n";
  if (!cs.failures.empty())
    out += "Failures (excluded from verdicts):\n\n" + md_list(cs.failures) + "\n";
  if (r2)
    out += environment_and_design();

  out += v.exploratory ? "---\n\nRendered from report.json alone; this EXPLORATORY report is not "
                         "signed.\n"
                       : "---\n\nRendered from report.json alone; the signed record is "
                         "report.json with report.dsse.json.\n";
  return out;
}

// =============================================================================================
// report.html: charts

namespace {

constexpr std::array<const char *, 8> palette{"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                              "#E69F00", "#56B4E9", "#000000", "#8C6D31"};

std::string num(double v) { return fmt::format("{:.1f}", v); }

struct point {
  std::int64_t x = 0;
  double y = 0;                 ///< the plotted value (<= 0 on a log axis: pinned to the floor)
  std::optional<double> lo, hi; ///< whisker ends
  bool hollow = false;
  std::string title;
  bool winner = false; ///< renderer 2's speedup chart: the fastest arm at this x (ringed)
};

struct series {
  std::string arm;
  std::vector<std::optional<point>> points; ///< one per chart x value; nullopt is a gap
  std::string note; ///< legend text after the arm (renderer 2: zeros a log axis cannot show)
};

struct chart {
  std::string kind; ///< time | pct | peak
  std::string title;
  std::string y_label;
  bool log_y = true;
  std::string pass;
  std::int64_t cols = 0;
  std::vector<std::int64_t> xs;
  std::optional<std::int64_t> op_x;
  std::optional<double> reference_y; ///< a dashed line (100% of the ceiling)
  std::string reference_label;
  std::string (*tick_text)(double) = nullptr;
  std::vector<series> lines;
};

std::string time_tick(double ms) {
  const time_unit u = unit_for(ms);
  return fmt::format("{:.3g} {}", ms * u.per_ms, u.name);
}
std::string pct_tick(double pct) { return fmt::format("{:g}%", pct); }
std::string ratio_tick(double r) { return fmt::format("{:g}x", r); }
std::string mb_tick(double mb) {
  return mb < 1.0 ? fmt::format("{:g}", mb) : fmt::format("{:.0f}", mb);
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> out;
  for (const std::array<int, 3> mults :
       {std::array<int, 3>{1, 2, 5}, std::array<int, 3>{1, 0, 0}}) {
    out.clear();
    for (int k = static_cast<int>(std::floor(lo)) - 1; k <= static_cast<int>(std::ceil(hi)); ++k)
      for (const int m : mults) {
        if (m == 0)
          continue;
        const double t = m * std::pow(10.0, k);
        if (std::log10(t) >= lo - 1e-9 && std::log10(t) <= hi + 1e-9)
          out.push_back(t);
      }
    if (out.size() <= 8)
      break;
  }
  if (out.size() < 2) {
    out.clear();
    for (int k = static_cast<int>(std::floor(lo)) - 1; k <= static_cast<int>(std::ceil(hi)); ++k)
      for (int m = 1; m <= 9; ++m) {
        const double t = m * std::pow(10.0, k);
        if (std::log10(t) >= lo - 1e-9 && std::log10(t) <= hi + 1e-9)
          out.push_back(t);
      }
  }
  return out;
}

// Draws a marker of shape `index % 4` centred on (x, y).
std::string marker(std::size_t index, double x, double y, const std::string &colour, bool hollow) {
  const std::string style = fmt::format("fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"",
                                        hollow ? "#ffffff" : colour, colour, hollow ? "2" : "1");
  switch (index % 4) {
  case 0:
    return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4.5\" {}/>", num(x), num(y), style);
  case 1:
    return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" {}/>", num(x - 4),
                       num(y - 4), style);
  case 2:
    return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\" {}/>", num(x), num(y - 5.5), num(x + 5),
                       num(y + 4), num(x - 5), num(y + 4), style);
  default:
    return fmt::format("<path d=\"M{} {}L{} {}L{} {}L{} {}Z\" {}/>", num(x), num(y - 5.5),
                       num(x + 5.5), num(y), num(x), num(y + 5.5), num(x - 5.5), num(y), style);
  }
}

std::string render_chart(const chart &c, const std::string &id) {
  constexpr double width = 480, left = 66, right = 14, top = 34, plot_h = 220;
  const double plot_w = width - left - right;
  const double bottom = top + plot_h;

  // The legend's lines, laid out before the height is known.
  std::vector<std::vector<std::pair<std::size_t, double>>> legend_lines(1);
  double lx = left;
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    const double w =
        34.0 + 7.0 * static_cast<double>(c.lines[i].arm.size() + c.lines[i].note.size()) + 14.0;
    if (lx + w > width - right && !legend_lines.back().empty()) {
      legend_lines.emplace_back();
      lx = left;
    }
    legend_lines.back().emplace_back(i, lx);
    lx += w;
  }
  const double legend_top = bottom + 50;
  const double height = legend_top + 18.0 * static_cast<double>(legend_lines.size()) + 4;

  // Scales.
  const auto [xmin_it, xmax_it] = std::minmax_element(c.xs.begin(), c.xs.end());
  const double xl = std::log10(static_cast<double>(std::max<std::int64_t>(*xmin_it, 1)));
  const double xh = std::log10(static_cast<double>(std::max<std::int64_t>(*xmax_it, 1)));
  const double xpad = std::max(0.08 * (xh - xl), 0.15);
  const double x0 = xl - xpad, x1 = xh + xpad;
  const auto px = [&](double x) { return left + (std::log10(x) - x0) / (x1 - x0) * plot_w; };

  std::vector<double> values;
  for (const auto &s : c.lines)
    for (const auto &p : s.points)
      if (p) {
        for (const double v : {p->y, p->lo.value_or(p->y), p->hi.value_or(p->y)})
          if (!c.log_y || v > 0.0)
            values.push_back(v);
      }
  if (c.log_y && c.reference_y) // renderer 2's speedup chart: the baseline's 1x stays in view
    values.push_back(*c.reference_y);
  double y0 = 0, y1 = 1;
  std::vector<double> ticks;
  if (c.log_y) {
    double lo = 0, hi = 1;
    if (!values.empty()) {
      lo = std::log10(*std::min_element(values.begin(), values.end()));
      hi = std::log10(*std::max_element(values.begin(), values.end()));
    }
    const double span = std::max(hi - lo, 0.3);
    const double mid = (hi + lo) / 2.0;
    y0 = mid - span / 2.0 - 0.06 * span;
    y1 = mid + span / 2.0 + 0.06 * span;
    ticks = log_ticks(y0, y1);
  } else {
    double hi = values.empty() ? 1.0 : *std::max_element(values.begin(), values.end());
    if (c.reference_y)
      hi = std::max(hi, *c.reference_y);
    hi = hi > 0.0 ? hi * 1.08 : 1.0; // an all-zero chart still gets a readable axis
    const double raw = hi / 5.0;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (const double m : {1.0, 2.0, 5.0, 10.0})
      if (m * mag >= raw) {
        step = m * mag;
        break;
      }
    y1 = std::ceil(hi / step) * step;
    for (int i = 0; i * step <= y1 + step * 1e-9; ++i)
      ticks.push_back(i * step);
  }
  const auto py = [&](double y) {
    if (c.log_y) {
      const double l = y > 0.0 ? std::clamp(std::log10(y), y0, y1) : y0;
      return bottom - (l - y0) / (y1 - y0) * plot_h;
    }
    return bottom - (y - y0) / (y1 - y0) * plot_h;
  };

  std::string out = fmt::format(
      "<svg class=\"chart\" id=\"{}\" data-kind=\"{}\" "
      "data-pass=\"{}\" data-cols=\"{}\" data-arms=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-labelledby=\"{}-t\">\n",
      html(id), html(c.kind), html(c.pass), c.cols, c.lines.size(), num(width), num(height),
      num(width), num(height), html(id));
  out += fmt::format("<title id=\"{}-t\">{}</title>\n", html(id), html(c.title));
  out +=
      fmt::format("<text class=\"ctitle\" x=\"{}\" y=\"18\">{}</text>\n", num(left), html(c.title));
  // Operating point band, under everything else.
  if (c.op_x) {
    const double x = px(static_cast<double>(*c.op_x));
    out += fmt::format("<g class=\"op\"><rect x=\"{}\" y=\"{}\" width=\"20\" height=\"{}\" "
                       "fill=\"#fde68a\" fill-opacity=\"0.7\"/><text x=\"{}\" y=\"{}\" "
                       "text-anchor=\"middle\" class=\"oplabel\">operating point</text></g>\n",
                       num(x - 10), num(top), num(plot_h),
                       num(std::clamp(x, left + 40, width - 50)), num(top - 5));
  }
  // Grid and axes.
  out += "<g class=\"grid\">";
  for (const double t : ticks) {
    const double y = py(t);
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", num(left),
                       num(left + plot_w), num(y), num(y));
  }
  for (const auto x : c.xs) {
    const double X = px(static_cast<double>(x));
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", num(X), num(X), num(top),
                       num(bottom));
  }
  out += "</g>\n<g class=\"axis\">";
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>",
                     num(left), num(top), num(plot_w), num(plot_h));
  for (const double t : ticks)
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", num(left - 5),
                       num(py(t) + 4), html(c.tick_text(t)));
  double last_right = -1e9;
  for (const auto x : c.xs) {
    const std::string label = fmt::format("{}", x);
    const double X = px(static_cast<double>(x));
    const double half = 3.4 * static_cast<double>(label.size());
    if (X - half < last_right + 4)
      continue;
    last_right = X + half;
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", num(X),
                       num(bottom + 15), html(label));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"alabel\">rows "
                     "(log scale; cols = {})</text>",
                     num(left + plot_w / 2), num(bottom + 33), c.cols);
  out += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\" "
                     "class=\"alabel\">{}</text>",
                     num(top + plot_h / 2), html(c.y_label));
  out += "</g>\n";
  if (c.reference_y) {
    const double y = py(*c.reference_y);
    out += fmt::format("<g class=\"ref\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><text "
                       "x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text></g>\n",
                       num(left), num(left + plot_w), num(y), num(y), num(left + plot_w - 4),
                       num(y - 4), html(c.reference_label));
  }
  // Series: line, whiskers, markers with tooltips.
  const double n = static_cast<double>(c.lines.size());
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    const series &s = c.lines[i];
    const std::string colour = palette[i % palette.size()];
    const double dx = (static_cast<double>(i) - (n - 1.0) / 2.0) * 4.0;
    out += fmt::format("<g class=\"series\" data-arm=\"{}\" stroke=\"{}\">", html(s.arm), colour);
    std::string path;
    bool pen_down = false;
    for (std::size_t j = 0; j < s.points.size(); ++j) {
      if (!s.points[j] || (c.log_y && s.points[j]->y <= 0.0)) {
        pen_down = false;
        continue;
      }
      path +=
          fmt::format("{}{} {}", pen_down ? "L" : "M",
                      num(px(static_cast<double>(s.points[j]->x)) + dx), num(py(s.points[j]->y)));
      pen_down = true;
    }
    if (!path.empty())
      out += fmt::format("<path d=\"{}\" fill=\"none\" stroke-width=\"1.8\"/>", path);
    for (const auto &p : s.points) {
      if (!p)
        continue;
      const double X = px(static_cast<double>(p->x)) + dx;
      const double Y = py(p->y);
      out += "<g class=\"pt" + std::string(p->hollow ? " unstable" : "") + "\"><title>" +
             html(p->title) + "</title>";
      if (p->lo && p->hi) {
        const double a = py(*p->lo), b = py(*p->hi);
        out += fmt::format("<path d=\"M{} {}V{}M{} {}H{}M{} {}H{}\" stroke-width=\"1.3\"/>", num(X),
                           num(a), num(b), num(X - 3), num(a), num(X + 3), num(X - 3), num(b),
                           num(X + 3));
      }
      if (p->winner)
        out += fmt::format("<circle class=\"winner\" cx=\"{}\" cy=\"{}\" r=\"9\" fill=\"none\" "
                           "stroke-width=\"2\"/>",
                           num(X), num(Y));
      out += marker(i, X, Y, colour, p->hollow) + "</g>";
    }
    out += "</g>\n";
  }
  // Legend.
  out += "<g class=\"legend\">";
  for (std::size_t line = 0; line < legend_lines.size(); ++line) {
    const double y = legend_top + 18.0 * static_cast<double>(line);
    for (const auto &[i, x] : legend_lines[line]) {
      const std::string colour = palette[i % palette.size()];
      const bool empty = std::none_of(c.lines[i].points.begin(), c.lines[i].points.end(),
                                      [](const auto &p) { return p.has_value(); });
      out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" "
                         "stroke-width=\"1.8\"/>",
                         num(x), num(x + 24), num(y), num(y), colour);
      out += marker(i, x + 12, y, colour, false);
      out += fmt::format("<text x=\"{}\" y=\"{}\">{}{}{}</text>", num(x + 30), num(y + 4),
                         html(c.lines[i].arm), empty && c.lines[i].note.empty() ? " (no data)" : "",
                         html(c.lines[i].note));
    }
  }
  out += "</g>\n</svg>";
  return out;
}

std::string point_title(const report_cell &cell, const std::string &what) {
  std::string t = fmt::format("{} · {} {} · {}", cell.key.arm, to_string(cell.key.pass),
                              shape_text(cell.key.rows, cell.key.cols), what);
  t += fmt::format(" · n = {}", cell.n);
  if (!cell.flags.empty())
    t += " · flags: " + join(cell.flags, ", ");
  return t;
}

chart make_chart(const view &v, const std::string &pass, std::int64_t cols,
                 const std::string &kind) {
  chart c;
  c.kind = kind;
  c.pass = pass;
  c.cols = cols;
  c.xs = v.rows;
  if (v.op && v.op->second == cols)
    c.op_x = v.op->first;
  if (kind == "time") {
    c.title = fmt::format("Time per step · {} · cols {}", pass, cols);
    c.y_label = "median time per step (log)";
    c.tick_text = time_tick;
  } else if (kind == "pct") {
    c.title = fmt::format("% of copy ceiling · {} · cols {}", pass, cols);
    c.y_label = "% of measured ceiling";
    c.log_y = false;
    c.reference_y = 100.0;
    c.reference_label = "ceiling";
    c.tick_text = pct_tick;
  } else if (kind == "speedup") {
    c.title = fmt::format("Speedup over {} · {} · cols {}", v.arms.front(), pass, cols);
    c.y_label = "baseline median / arm median (log)";
    c.reference_y = 1.0;
    c.reference_label = "baseline";
    c.tick_text = ratio_tick;
  } else {
    c.title = fmt::format("Peak memory · {} · cols {}", pass, cols);
    c.y_label = "peak MB (log)";
    c.tick_text = mb_tick;
  }
  bool any_positive = false;
  for (const auto &arm : v.arms) {
    series s{arm, {}, {}};
    for (const auto r : v.rows) {
      const report_cell *cell = find_cell(v, arm, pass, r, cols);
      std::optional<point> p;
      if (cell != nullptr) {
        const bool unstable = has_flag(*cell, "unstable");
        if (kind == "time") {
          if (const auto m = finite(cell->median_ms)) {
            p = point{r,
                      *m,
                      finite(cell->q1_ms),
                      finite(cell->q3_ms),
                      unstable,
                      point_title(*cell, fmt::format("median {}, IQR {} to {}", time_text(*m),
                                                     time_text(finite(cell->q1_ms)),
                                                     time_text(finite(cell->q3_ms))))};
          }
        } else if (kind == "pct") {
          if (const auto pc = finite(cell->pct_ceiling)) {
            const auto g = finite(cell->gbps);
            p = point{r,
                      *pc,
                      {},
                      {},
                      unstable,
                      point_title(*cell, fmt::format("{} of ceiling, {}", pct_text(*pc),
                                                     g ? gbps_text(*g) : std::string("—")))};
          }
        } else if (kind == "speedup") {
          const report_cell *base = find_cell(v, v.arms.front(), pass, r, cols);
          const auto bm = base ? finite(base->median_ms) : std::nullopt;
          const auto m = finite(cell->median_ms);
          if (bm && m && *m > 0.0) {
            std::optional<double> best;
            for (const auto &other : v.arms)
              if (const report_cell *o = find_cell(v, other, pass, r, cols))
                if (const auto om = finite(o->median_ms))
                  best = std::min(best.value_or(*om), *om);
            const bool fastest = best && *m == *best;
            p = point{r,
                      *bm / *m,
                      {},
                      {},
                      unstable,
                      point_title(*cell, fmt::format("{:.2f}x the baseline's speed{}", *bm / *m,
                                                     fastest ? " · fastest here" : "")),
                      fastest};
          }
        } else if (finite(cell->median_ms)) {
          const double b = static_cast<double>(cell->peak_bytes);
          p = point{r,  b / 1e6,  {},
                    {}, unstable, point_title(*cell, fmt::format("peak {} MB", mb_text(b)))};
          any_positive = any_positive || b > 0.0;
        }
      }
      s.points.push_back(p);
    }
    c.lines.push_back(std::move(s));
  }
  if (kind == "peak" && !any_positive) {
    c.log_y = false; // all zero: a linear axis shows them honestly at 0
    c.y_label = "peak MB";
  } else if (kind == "peak" && v.renderer >= 2) {
    // A log axis has no 0: zeros are left out and said in the legend, not drawn at the floor.
    for (auto &line : c.lines) {
      std::size_t zeros = 0;
      for (auto &pt : line.points)
        if (pt && pt->y <= 0.0) {
          pt.reset();
          ++zeros;
        }
      if (zeros > 0)
        line.note =
            fmt::format(" (0 MB at {} shape{}, not on the log axis)", zeros, zeros == 1 ? "" : "s");
    }
  }
  return c;
}

const char *html_css = R"(
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg-soft: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 8px; }
code { font: 12.5px/1.3 ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace;
  background: var(--bg-soft); padding: 1px 4px; border-radius: 4px; }
.sub { color: var(--muted); margin: 0 0 10px; }
blockquote { margin: 10px 0; padding: 6px 14px; border-left: 4px solid var(--line); color: #333; }
.badges { display: flex; flex-wrap: wrap; gap: 8px; margin: 12px 0; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 12px; font-weight: 600;
  font-size: 13px; border: 1px solid transparent; white-space: nowrap; }
.badge.confirmed, td.verdict.confirmed strong { background: #dafbe1; color: #116329; border-color: #4ac26b; }
.badge.refuted, td.verdict.refuted strong { background: #ffebe9; color: #a40e26; border-color: #ff8182; }
.badge.inconclusive, td.verdict.inconclusive strong { background: #fff8c5; color: #7d4e00; border-color: #d4a72c; }
.badge.info { background: var(--bg-soft); color: var(--muted); border-color: var(--line); }
.badge.warn { background: #fff1e5; color: #953800; border-color: #fb8f44; }
td.verdict strong { padding: 1px 8px; border-radius: 10px; border: 1px solid; }
table { border-collapse: collapse; margin: 6px 0 14px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: 4px 9px; text-align: left; vertical-align: top; }
thead th { background: var(--bg-soft); }
th.num, td.num { text-align: right; white-space: nowrap; }
table.kv { width: 100%; }
table.kv tbody th { width: 170px; background: var(--bg-soft); font-weight: 600; }
table.kv thead th { background: #eaeef2; font-size: 13px; text-transform: uppercase; letter-spacing: .04em; }
td code, th code { white-space: nowrap; }
.op { background: #fff4c2; }
thead th.op { background: #fde68a; }
.suffix { font-weight: 400; }
td.flagged { color: #953800; }
td.unstable { font-style: italic; }
td.missing { color: var(--muted); }
td.fail { color: #a40e26; }
.kvgrid { display: grid; grid-template-columns: 1fr 1fr; gap: 0 24px; }
.charts { display: grid; grid-template-columns: repeat(3, 1fr); gap: 12px; margin: 8px 0 4px; }
figure { margin: 0; break-inside: avoid; }
figcaption { color: var(--muted); font-size: 12px; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font: 12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #333; stroke: none; }
svg.chart .ctitle { font-size: 14px; font-weight: 600; }
svg.chart .alabel { fill: var(--muted); }
svg.chart .oplabel { font-size: 11px; fill: #8a6100; }
svg.chart .grid line { stroke: #eaeef2; stroke-width: 1; }
svg.chart .axis rect { stroke: #8c959f; }
svg.chart .ref line { stroke: #a40e26; stroke-dasharray: 5 4; stroke-width: 1.2; }
svg.chart .ref text { fill: #a40e26; }
.tables { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
.tables > div { max-width: 100%; overflow-x: auto; }
.caption { color: var(--muted); font-size: 12.5px; margin: 2px 0; }
.prediction { border: 1px solid var(--line); border-radius: 8px; padding: 8px 16px; margin: 10px 0;
  break-inside: avoid; }
.prediction h3 { margin: 6px 0; }
.prediction p { margin: 4px 0; }
ul.flags { margin: 4px 0 12px; padding-left: 20px; color: #953800; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
@media (max-width: 1000px) { .charts { grid-template-columns: 1fr 1fr; } .kvgrid { grid-template-columns: 1fr; } }
@media print {
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  .charts { grid-template-columns: 1fr 1fr; }
  h2 { break-after: avoid; }
  section.block, table, figure { break-inside: avoid; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
)";

// Renderer 2's additions, after the renderer 1 sheet (which stays byte for byte).
const char *html_css_r2 = R"(
p.exploratory { padding: 10px 14px; border: 2px solid #953800; background: #fff1e5; color: #953800; font-weight: 700; }
#summary .charts { margin-top: 8px; grid-template-columns: 1fr 1fr; max-width: 1000px; }
svg.chart circle.winner { fill: none; }
td.winner strong { color: #116329; }
table.predictions td code { white-space: normal; overflow-wrap: anywhere; }
)";

std::string badge(const std::string &cls, const std::string &label) {
  return "<span class=\"badge " + html(cls) + "\">" + html(label) + "</span>";
}

std::string html_list(const std::vector<std::string> &items, const std::string &cls) {
  std::string out = "<ul class=\"" + cls + "\">";
  for (const auto &i : items)
    out += "<li>" + html(i) + "</li>";
  return out + "</ul>\n";
}

} // namespace

std::string render_html(const json &report) {
  return render_html(report_from_json(report, "report.json"));
}

std::string render_html(const report_document &report) {
  const view v = make_view(report);
  const json &b = *v.body;
  const bool r2 = v.renderer >= 2;
  const std::string title =
      (v.exploratory ? "EXPLORATORY: " : "") + text(b, "title", "prereg report");
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'\">\n<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n<title>" +
      html(title) + " · prereg report</title>\n<style>" + html_css + (r2 ? html_css_r2 : "") +
      "</style>\n</head>\n<body>\n" +
      (r2 ? fmt::format("<main data-renderer=\"{}\"{}>\n", v.renderer,
                        v.exploratory ? " data-exploratory=\"true\"" : "")
          : std::string("<main>\n"));

  // Header: what was tested, and the verdicts at a glance.
  out += "<header>\n<h1>" + html(title) + "</h1>\n";
  if (v.exploratory)
    out += "<p class=\"exploratory\">" + html(exploratory_text) + "</p>\n";
  out +=
      "<p class=\"sub\">protocol <code>" + html(text(b, "id", "?")) + "</code> · hash <code>" +
      html(report.protocol.hash.substr(0, 16)) + "…</code> · " +
      (v.exploratory ? std::string("<strong>not frozen</strong>")
                     : "attempt <strong>" + html(fmt::format("{}", report.attempt)) + "</strong>") +
      " · run <code>" + html(report.run.run_id) + "</code></p>\n";
  if (const std::string h = text(b, "hypothesis"); !h.empty())
    out += "<blockquote><strong>Hypothesis.</strong> " + html(h) + "</blockquote>\n";
  out += "<div class=\"badges\">";
  for (const prediction_result &p : report.predictions)
    out +=
        badge(std::string(to_string(p.verdict)), p.id + ": " + std::string(to_string(p.verdict)));
  const correctness_summary cs = summarise_correctness(v);
  const std::size_t n_defects = report.defects.size();
  const std::size_t n_deviations = report.deviations.size();
  out += badge(n_defects ? "warn" : "info", fmt::format("{} defect(s)", n_defects));
  out += badge(n_deviations ? "warn" : "info", fmt::format("{} deviation(s)", n_deviations));
  out += badge(cs.failed ? "warn" : "info",
               fmt::format("{} of {} correctness check(s) failed", cs.failed, cs.checks));
  out += "</div>\n</header>\n";

  const std::string environment =
      "<section id=\"environment\">\n<h2>Environment and instrument</h2>\n<div class=\"kvgrid\">"
      "<div>" +
      to_html(environment_table(v)) + to_html(run_table(v)) + "</div><div>" +
      to_html(instrument_table(v)) + to_html(design_table(v)) + to_html(arms_table(v)) +
      "</div></div>\n</section>\n";
  if (!r2) {
    out += environment;
  } else {
    // Renderer 2: above the fold, the verdicts (badges), time per arm vs rows, and the speedup
    // over the first arm with the fastest arm per shape ringed; the environment goes last.
    // (The verdicts are the badges just above; their table stays under Predictions.)
    out += "<section id=\"summary\">\n<h2>Summary</h2>\n";
    if (!v.arms.empty() && !v.cols.empty()) {
      const std::int64_t cols = summary_cols(v);
      out += "<div class=\"charts\">\n";
      for (const auto &pass : v.passes)
        for (const char *kind : {"time", "speedup"}) {
          const std::string id =
              fmt::format("summary-{}-{}-{}", kind, pass == "fwd" ? "fwd" : "fwdbwd", cols);
          out += "<figure>" + render_chart(make_chart(v, pass, cols, kind), id) + "</figure>\n";
        }
      out += "</div>\n<p class=\"caption\">Time per step (median, whiskers q1 to q3) and the "
             "speedup over " +
             html(v.arms.front()) +
             " (its median / the arm's) per rows; a ring marks the fastest arm at each shape. "
             "Every pass and cols is under Results.</p>\n";
    }
    out += "</section>\n";
  }

  out += "<section id=\"predictions\">\n<h2>Predictions</h2>\n";
  if (report.predictions.empty())
    out += "<p>No predictions.</p>\n";
  for (const prediction_result &p : report.predictions) {
    const std::string &id = p.id;
    const std::string verdict(to_string(p.verdict));
    out += "<div class=\"prediction\"><h3>" + badge(verdict, verdict) + " " + html(id) + "</h3>\n";
    out += "<p><strong>Claim:</strong> " + html(p.claim) + "</p>\n";
    out += "<p><strong>Criterion:</strong> <code>" + html(p.expect) + "</code> at " +
           html(at_text(child(spec_json(v, id), "at"))) + "</p>\n";
    out += "<p><strong>Reason:</strong> " + html(p.reason) + "</p>\n";
    out += to_html(prediction_cells(p)) + "</div>\n";
  }
  out += "</section>\n";

  out += "<section id=\"results\">\n<h2>Results</h2>\n";
  const std::string unstable_rule =
      v.unstable_ratio ? fmt::format(" (IQR/median > {:g})", *v.unstable_ratio) : std::string();
  for (const auto &pass : v.passes)
    for (const auto cols : v.cols) {
      out +=
          fmt::format("<section class=\"block\" data-pass=\"{}\" data-cols=\"{}\">\n<h3>{}</h3>\n",
                      html(pass), cols, html(cols_heading(v, pass, cols)));
      out += "<div class=\"charts\">\n";
      for (const char *kind : {"time", "pct", "peak"}) {
        const std::string id =
            fmt::format("chart-{}-{}-{}", kind, pass == "fwd" ? "fwd" : "fwdbwd", cols);
        out += "<figure>" + render_chart(make_chart(v, pass, cols, kind), id) + "</figure>\n";
      }
      out += "</div>\n<p class=\"caption\">Log-scaled rows; whiskers span the IQR (q1 to q3); "
             "hollow markers are unstable cells" +
             html(unstable_rule) +
             (v.op && v.op->second == cols ? "; the shaded band is the operating point" : "") +
             ". Hover a marker for its numbers.</p>\n";
      out += "<div class=\"tables\"><div><p class=\"caption\">Time per step, median (IQR)</p>" +
             to_html(time_table(v, pass, cols)) + "</div>";
      out +=
          "<div><p class=\"caption\">% of the copy ceiling (bound where launch or bandwidth)</p>" +
          to_html(results_table(v, pass, cols, pct_cell)) + "</div>";
      out += "<div><p class=\"caption\">Peak memory [MB = 10<sup>6</sup> bytes]</p>" +
             to_html(results_table(v, pass, cols, peak_cell)) + "</div>";
      if (has_kernel_clock(v))
        out += "<div><p class=\"caption\">Kernel time per step (kernel clock), median, and the "
               "gap's median share</p>" +
               to_html(results_table(v, pass, cols, kernel_cell)) + "</div>";
      out += "</div>\n";
      const auto notes = flag_notes(v, pass, cols);
      if (!notes.empty()) {
        std::vector<std::string> items;
        for (const auto &[arm, note] : notes)
          items.push_back("⚠ " + arm + " at " + note);
        out += html_list(items, "flags");
      }
      out += "</section>\n";
    }
  out += "</section>\n";

  if (has_kernel_clock(v))
    out += "<section id=\"profile\">\n<h2>Profile (kernel clock)</h2>\n<p>Per cell, its kernels "
           "by share of the step time (summed device time / summed step time), and the gap the "
           "kernels leave.</p>\n" +
           to_html(profile_table(v)) + "</section>\n";
  out += fmt::format("<section id=\"defects\">\n<h2>Defects ({})</h2>\n", n_defects);
  out +=
      n_defects == 0 ? "<p>The instrument reported no defects.</p>\n" : to_html(defects_table(v));
  out += "</section>\n";
  out += fmt::format("<section id=\"deviations\">\n<h2>Deviations ({})</h2>\n", n_deviations);
  out +=
      n_deviations == 0 ? "<p>The run followed the protocol.</p>\n" : to_html(deviations_table(v));
  out += "</section>\n";

  out += "<section id=\"correctness\">\n<h2>Correctness</h2>\n";
  out += fmt::format("<p>{} check(s) against the float64 reference, {} failed (tolerance rtol {}, "
                     "atol {}).</p>\n",
                     cs.checks, cs.failed, html(text(child(b, "correctness"), "rtol", "?")),
                     html(text(child(b, "correctness"), "atol", "?")));
  if (r2)
    out += "<p class=\"caption\">" + html(tolerance_text) + "</p>\n";
  if (cs.checks > 0)
    out += to_html(cs.per_arm);
  if (!cs.failures.empty())
    out += "<p>Failures (excluded from verdicts):</p>\n" + html_list(cs.failures, "failures");
  out += "</section>\n";
  if (r2)
    out += environment;

  out +=
      v.exploratory
          ? "<footer>Rendered by prereg from report.json alone; this EXPLORATORY report is not "
            "signed. This page fetches nothing.</footer>\n</main>\n</body>\n</html>\n"
          : "<footer>Rendered by prereg from report.json alone; the signed record is report.json "
            "with report.dsse.json. This page fetches nothing.</footer>\n</main>\n</body>\n"
            "</html>\n";
  return out;
}

} // namespace prereg
