// The `expect` language's vocabulary and evaluator: the keywords and metrics, the evaluation of
// a parsed expectation (expr_parse.cpp) per cell and per resample, and its constant-outcome test.
#include "base/expr.hpp"

#include "base/expr_lexer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

namespace prereg {

using expr_detail::keywords;

std::span<const std::string_view> expression_keywords() { return keywords; }

bool is_expression_keyword(std::string_view word) {
  return std::find(keywords.begin(), keywords.end(), word) != keywords.end();
}

std::string_view to_string(metric m) {
  switch (m) {
  case metric::time:
    return "time";
  case metric::peak_mb:
    return "peak_mb";
  case metric::gbps:
    return "gbps";
  case metric::pct_ceiling:
    return "pct_ceiling";
  case metric::kernel_time:
    return "kernel_time";
  case metric::gap_share:
    return "gap_share";
  case metric::kernels:
    return "kernels";
  case metric::share:
    return "share";
  case metric::kernel_share:
    return "kernel_share";
  case metric::tflops:
    return "tflops";
  case metric::pct_compute:
    return "pct_compute";
  case metric::pct_roof:
    return "pct_roof";
  }
  return "?";
}

bool is_roof_metric(metric m) {
  return m == metric::tflops || m == metric::pct_compute || m == metric::pct_roof;
}

bool is_kernel_metric(metric m) {
  return m == metric::kernel_time || m == metric::gap_share || m == metric::kernels ||
         m == metric::kernel_share;
}

bool expectation::holds(const std::function<double(const metric_ref &)> &value) const {
  std::vector<double> refs;
  refs.reserve(m_refs.size());
  for (const auto &r : m_refs)
    refs.push_back(value(r));
  for (const auto &c : m_comparisons) {
    const double l = eval(c.lhs, refs);
    const double r = eval(c.rhs, refs);
    bool ok = false;
    switch (c.o) {
    case comparison::op::lt:
      ok = l < r;
      break;
    case comparison::op::le:
      ok = l <= r;
      break;
    case comparison::op::gt:
      ok = l > r;
      break;
    case comparison::op::ge:
      ok = l >= r;
      break;
    }
    if (!ok)
      return false;
  }
  return true;
}

std::vector<std::string> expectation::arms() const {
  std::vector<std::string> out;
  for (const auto &r : m_refs)
    if (std::find(out.begin(), out.end(), r.arm) == out.end())
      out.push_back(r.arm);
  return out;
}

double expectation::eval(int index, const std::vector<double> &refs) const {
  const node &n = m_nodes[static_cast<std::size_t>(index)];
  switch (n.k) {
  case node::kind::number:
    return n.number;
  case node::kind::ref:
    return refs[static_cast<std::size_t>(n.ref)];
  case node::kind::neg:
    return -eval(n.lhs, refs);
  case node::kind::abs:
    return std::fabs(eval(n.lhs, refs));
  case node::kind::add:
    return eval(n.lhs, refs) + eval(n.rhs, refs);
  case node::kind::sub:
    return eval(n.lhs, refs) - eval(n.rhs, refs);
  case node::kind::mul:
    return eval(n.lhs, refs) * eval(n.rhs, refs);
  case node::kind::div:
    return eval(n.lhs, refs) / eval(n.rhs, refs);
  }
  return 0;
}

std::optional<bool> expectation::constant_outcome(std::size_t trials) const {
  std::uint64_t state = 0x9e3779b97f4a7c15ull; // fixed seed: the same answer every time
  const auto next_unit = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<double>(state >> 11) * 0x1.0p-53;
  };
  std::vector<double> values(m_refs.size());
  std::optional<bool> first;
  for (std::size_t t = 0; t < trials; ++t) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double u = next_unit();
      // A kernel count is a whole number (1 to 999 here), so `kernels(a) >= 1 and kernels(a)
      // <= 1` can hold; every other metric is a positive real, log-uniform over 1e-6..1e6.
      values[i] = m_refs[i].what == metric::kernels ? std::floor(std::pow(10.0, 3.0 * u))
                                                    : std::pow(10.0, -6.0 + 12.0 * u);
    }
    const bool now = holds([&](const metric_ref &r) {
      const auto it = std::find(m_refs.begin(), m_refs.end(), r);
      return values[static_cast<std::size_t>(it - m_refs.begin())];
    });
    if (!first)
      first = now;
    else if (*first != now)
      return std::nullopt;
  }
  return first;
}

} // namespace prereg
