// The tables of the measurements: results, speedups, the kernel profile, the flagged cells.
#include "report/render/result_tables.hpp"

#include "report/render/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

namespace prereg::render {
namespace {

// The header of a results table: the arm, then one numeric column per rows.
table results_header(const view &v, std::int64_t cols, std::string cls, bool mark_op) {
  table t{{plain("arm")}, {false}, {}, true, std::move(cls)};
  for (const auto r : v.rows) {
    span h = plain(row_text(v, r));
    if (mark_op && is_op_column(v, r, cols)) {
      h.strong = true;
      h.suffix = " ◀ operating point";
      h.cls = "op";
    }
    t.header.push_back(h);
    t.numeric.push_back(true);
  }
  return t;
}

span results_cell(const report_cell *cell, const cell_text &cell_fn) {
  if (cell == nullptr) {
    span s = plain("not run");
    s.cls = "missing";
    return s;
  }
  span s = cell_fn(*cell);
  const auto &flags = cell->flags;
  if (!flags.empty()) {
    s.suffix += " ⚠";
    s.cls += s.cls.empty() ? "flagged" : " flagged";
    s.title = join(flags, ", ");
    if (has_flag(*cell, "unstable"))
      s.cls += " unstable";
  }
  return s;
}

span time_cell(const report_cell &c) {
  const auto m = finite(c.median_ms);
  if (!m)
    return plain("no samples");
  return plain(median_iqr_text(*m, finite(c.iqr_ms)));
}

span speedup_cell(const view &v, const std::string &arm, const std::string &pass, std::int64_t rows,
                  std::int64_t cols) {
  const report_cell *b = find_cell(v, v.arms.front(), pass, rows, cols);
  const report_cell *c = find_cell(v, arm, pass, rows, cols);
  if (v.renderer >= 4 && c != nullptr)
    if (const std::string *why = excluded_reason(v, *c)) {
      span s = plain("excluded: " + *why);
      s.cls = "excluded";
      return s;
    }
  if (v.renderer >= 4 && b != nullptr && excluded_reason(v, *b) != nullptr)
    return plain("— (baseline excluded)");
  const auto bm = b ? finite(b->median_ms) : std::nullopt;
  const auto cm = c ? finite(c->median_ms) : std::nullopt;
  if (!bm || !cm || *cm <= 0.0)
    return plain("—");
  span s = plain(fmt::format("{:.2f}x", *bm / *cm));
  const std::optional<double> best = best_median(v, pass, rows, cols);
  if (best && *cm == *best) {
    s.strong = true;
    s.suffix = " fastest";
    s.cls = "winner";
  }
  if (v.renderer >= 4 && !c->flags.empty()) { // a flagged arm's speedup carries the mark
    s.suffix += " ⚠";
    s.cls += s.cls.empty() ? "flagged" : " flagged";
    s.title = join(c->flags, ", ");
  }
  return s;
}

// One cell's rows of the profile: its largest kernels, a count of the rest, and the gap.
void add_profile_rows(table &t, const report_cell &c, std::size_t per_cell) {
  std::vector<const report_kernel_name *> names;
  for (const auto &n : c.kernel_clock->names)
    names.push_back(&n);
  std::stable_sort(names.begin(), names.end(),
                   [](const auto *a, const auto *b) { return a->share_pct > b->share_pct; });
  const std::string where =
      fmt::format("{} {} {}", c.key.arm, to_string(c.key.pass), key_shape_text(c.key));
  double gap = 0;
  if (const auto g = finite(c.kernel_clock->gap_share_pct))
    gap = *g;
  std::size_t shown = 0;
  for (const auto *n : names) {
    if (shown++ == per_cell)
      break;
    t.rows.push_back({code(where), code(n->name),
                      plain(three_digits(static_cast<double>(n->calls) / static_cast<double>(c.n))),
                      plain(time_text(finite(n->median_ms))),
                      plain(finite(n->share_pct) ? pct_text(n->share_pct) : "—")});
  }
  if (names.size() > per_cell)
    t.rows.push_back({code(where), plain(fmt::format("({} more kernels)", names.size() - per_cell)),
                      plain(""), plain(""), plain("")});
  t.rows.push_back({code(where), plain("(gap: launch, events, host; median share)"), plain(""),
                    plain(time_text(finite(c.kernel_clock->median_gap_ms))), plain(pct_text(gap))});
}

} // namespace

table results_table(const view &v, const std::string &pass, std::int64_t cols,
                    const cell_text &cell_fn) {
  table t = results_header(v, cols, "results", true);
  for (const auto &arm : v.arms) {
    std::vector<span> row{code(arm)};
    for (const auto r : v.rows) {
      span s = results_cell(find_cell(v, arm, pass, r, cols), cell_fn);
      if (is_op_column(v, r, cols))
        s.cls += s.cls.empty() ? "op" : " op";
      row.push_back(s);
    }
    t.rows.push_back(row);
  }
  return t;
}

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

table speedup_table(const view &v, const std::string &pass, std::int64_t cols) {
  table t = results_header(v, cols, "speedup", false);
  for (const auto &arm : v.arms) {
    std::vector<span> row{code(arm)};
    for (const auto r : v.rows)
      row.push_back(speedup_cell(v, arm, pass, r, cols));
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

span kernel_cell(const report_cell &c) {
  if (!c.kernel_clock)
    return plain("—");
  const auto k = finite(c.kernel_clock->median_kernel_ms);
  const auto g = finite(c.kernel_clock->gap_share_pct);
  if (!k)
    return plain("no samples");
  return plain(time_text(k) + (g ? fmt::format(", gap {:.0f}%", *g) : std::string()));
}

cell_text peak_text(const view &v) {
  return [&v](const report_cell &c) {
    if (!finite(c.median_ms))
      return plain("—");
    if (shows_memory_unmeasured(v, c.key.arm))
      return plain("not measured");
    return plain(mb_text(static_cast<double>(c.peak_bytes)));
  };
}

table profile_table(const view &v, std::size_t per_cell) {
  table t{{plain("cell"), plain("kernel"), plain("calls/step"), plain("median/step"),
           plain("share of step")},
          {false, false, true, true, true},
          {},
          true,
          "profile"};
  for (const report_cell &c : v.report->cells)
    if (c.kernel_clock && c.n != 0)
      add_profile_rows(t, c, per_cell);
  return t;
}

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
      std::string note =
          is_named(v) ? fmt::format("{}: {}", shape_text(v, r, cols), join(cell->flags, ", "))
                      : fmt::format("{} rows: {}", r, join(cell->flags, ", "));
      note += fmt::format(" (n = {})", cell->n);
      if (cell->error && !cell->error->empty())
        note += " — " + *cell->error;
      out.emplace_back(arm, note);
    }
  return out;
}

std::vector<std::pair<std::string, std::string>> excluded_notes(const view &v, std::int64_t cols) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto &arm : v.arms)
    for (const auto &pass : v.passes)
      for (const auto r : v.rows)
        if (const report_cell *cell = find_cell(v, arm, pass, r, cols))
          if (const std::string *why = excluded_reason(v, *cell))
            out.emplace_back(arm, fmt::format("{} {}: {}", pass, shape_text(v, r, cols), *why));
  return out;
}

} // namespace prereg::render
