// The `expect` language: a tokeniser, a recursive-descent parser into a node vector, and
// the evaluator.
#include "base/expr.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cstdint>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>

namespace prereg {
namespace {

constexpr int max_nesting = 64;
constexpr std::size_t max_nodes = 1024;

enum class token_kind {
  number,
  arm,
  word,
  lparen,
  rparen,
  plus,
  minus,
  star,
  slash,
  lt,
  le,
  gt,
  ge,
  comma,
  string,
  end
};

struct token {
  token_kind kind;
  std::size_t offset; // 0-based byte offset in the text
  std::string text;
  double number = 0;
};

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

constexpr std::array<std::string_view, 11> keywords{
    "and",         "abs",       "time",    "peak_mb", "gbps",        "pct_ceiling",
    "kernel_time", "gap_share", "kernels", "share",   "kernel_share"};

/// A region label in share(arm, "label"): 1 to 64 of A-Z a-z 0-9 _ . - (docs/python-arms.md).
bool label_char(char c) { return word_char(c) || c == '.' || c == '-'; }
constexpr std::size_t max_label = 64;

std::optional<metric> function_metric(std::string_view name) {
  if (name == "time")
    return metric::time;
  if (name == "peak_mb")
    return metric::peak_mb;
  if (name == "gbps")
    return metric::gbps;
  if (name == "pct_ceiling")
    return metric::pct_ceiling;
  if (name == "kernel_time")
    return metric::kernel_time;
  if (name == "gap_share")
    return metric::gap_share;
  if (name == "kernels")
    return metric::kernels;
  if (name == "share")
    return metric::share;
  if (name == "kernel_share")
    return metric::kernel_share;
  return std::nullopt;
}

class tokeniser {
public:
  tokeniser(std::string_view text, const std::vector<std::string> &arm_ids,
            const std::string &where)
      : m_text(text), m_arms(arm_ids), m_where(where) {}

  std::vector<token> run() {
    std::vector<token> out;
    std::size_t i = 0;
    while (true) {
      while (i < m_text.size() && (m_text[i] == ' ' || m_text[i] == '\t' || m_text[i] == '\n'))
        ++i;
      if (i >= m_text.size())
        break;
      out.push_back(next(i));
    }
    out.push_back({token_kind::end, m_text.size(), "", 0});
    return out;
  }

private:
  std::string_view m_text;
  const std::vector<std::string> &m_arms;
  const std::string &m_where;

  [[noreturn]] void fail(std::size_t offset, const std::string &what) const {
    throw invalid_input(fmt::format("{} at offset {}", what, offset), m_where);
  }

  [[nodiscard]] std::size_t word_end(std::size_t i) const {
    while (i < m_text.size() && word_char(m_text[i]))
      ++i;
    return i;
  }

  // The longest arm id starting at i: words joined by '-', ending at a word boundary.
  [[nodiscard]] std::size_t arm_match(std::size_t i) const {
    std::size_t best = 0, end = word_end(i);
    while (true) {
      const auto candidate = m_text.substr(i, end - i);
      if (std::find(m_arms.begin(), m_arms.end(), candidate) != m_arms.end())
        best = end - i;
      if (end < m_text.size() && m_text[end] == '-' && end + 1 < m_text.size() &&
          word_char(m_text[end + 1])) {
        end = word_end(end + 1);
      } else {
        return best;
      }
    }
  }

  // digits ['.' digits] [(e|E) [+-] digits], followed by a boundary; 0 if none.
  [[nodiscard]] std::size_t number_match(std::size_t i) const {
    const std::size_t start = i;
    auto digits = [&] {
      const std::size_t s = i;
      while (i < m_text.size() && m_text[i] >= '0' && m_text[i] <= '9')
        ++i;
      return i > s;
    };
    if (!digits())
      return 0;
    if (i < m_text.size() && m_text[i] == '.') {
      ++i;
      if (!digits())
        return 0;
    }
    if (i < m_text.size() && (m_text[i] == 'e' || m_text[i] == 'E')) {
      ++i;
      if (i < m_text.size() && (m_text[i] == '+' || m_text[i] == '-'))
        ++i;
      if (!digits())
        return 0;
    }
    if (i < m_text.size() && (word_char(m_text[i]) || m_text[i] == '.'))
      return 0;
    return i - start;
  }

  token next(std::size_t &i) {
    const std::size_t start = i;
    const char c = m_text[i];
    auto single = [&](token_kind k, std::size_t len) {
      i += len;
      return token{k, start, std::string(m_text.substr(start, len)), 0};
    };
    auto followed_by_eq = i + 1 < m_text.size() && m_text[i + 1] == '=';
    switch (c) {
    case '(':
      return single(token_kind::lparen, 1);
    case ')':
      return single(token_kind::rparen, 1);
    case '+':
      return single(token_kind::plus, 1);
    case '-':
      return single(token_kind::minus, 1);
    case '*':
      return single(token_kind::star, 1);
    case '/':
      return single(token_kind::slash, 1);
    case '<':
      return followed_by_eq ? single(token_kind::le, 2) : single(token_kind::lt, 1);
    case '>':
      return followed_by_eq ? single(token_kind::ge, 2) : single(token_kind::gt, 1);
    case ',':
      return single(token_kind::comma, 1);
    case '"': {
      std::size_t end = i + 1;
      while (end < m_text.size() && m_text[end] != '"') {
        if (!label_char(m_text[end]))
          fail(end, "a region label holds only A-Z a-z 0-9 _ . -");
        ++end;
      }
      if (end >= m_text.size())
        fail(start, "unterminated region label");
      const std::size_t len = end - i - 1;
      if (len == 0 || len > max_label)
        fail(start, fmt::format("a region label is 1 to {} characters", max_label));
      i = end + 1;
      return {token_kind::string, start, std::string(m_text.substr(start + 1, len)), 0};
    }
    default:
      break;
    }
    if (!word_char(c)) {
      const auto u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7F)
        fail(start, fmt::format("unexpected character '{}'", c));
      fail(start, fmt::format("unexpected character 0x{:02X}", u));
    }
    const std::size_t word = word_end(i) - i;
    const std::size_t arm = arm_match(i);
    const auto word_text = m_text.substr(i, word);
    if (arm > word ||
        (arm > 0 && std::find(keywords.begin(), keywords.end(), word_text) == keywords.end())) {
      i += arm;
      return {token_kind::arm, start, std::string(m_text.substr(start, arm)), 0};
    }
    if (std::find(keywords.begin(), keywords.end(), word_text) != keywords.end()) {
      i += word;
      return {token_kind::word, start, std::string(word_text), 0};
    }
    if (const std::size_t len = number_match(i); len > 0) {
      double value = 0;
      const auto *first = m_text.data() + i;
      const auto [ptr, ec] = std::from_chars(first, first + len, value);
      if (ec != std::errc() || ptr != first + len || !std::isfinite(value))
        fail(start,
             fmt::format("number {} is out of range", message_excerpt(m_text.substr(i, len))));
      i += len;
      return {token_kind::number, start, std::string(m_text.substr(start, len)), value};
    }
    if (c >= '0' && c <= '9') {
      std::size_t end = i;
      while (end < m_text.size() && (word_char(m_text[end]) || m_text[end] == '.'))
        ++end;
      fail(start, fmt::format("malformed number '{}'", message_excerpt(m_text.substr(i, end - i))));
    }
    // An unknown word; include dashed continuations so the message shows what was meant.
    std::size_t end = word_end(i);
    while (end + 1 < m_text.size() && m_text[end] == '-' && word_char(m_text[end + 1]))
      end = word_end(end + 1);
    i = word_end(i);
    return {token_kind::word, start, std::string(m_text.substr(start, end - start)), 0};
  }
};

} // namespace

// Recursive descent over the tokens, appending to the expectation's node vector.
class expression_parser {
public:
  expression_parser(std::string_view text, const std::vector<std::string> &arm_ids,
                    const std::string &where)
      : m_text(text), m_arms(arm_ids), m_where(where),
        m_tokens(tokeniser(text, arm_ids, where).run()) {}

  expectation run() {
    if (peek().kind == token_kind::end)
      fail(0, "empty expression");
    do {
      comparison();
    } while (accept_word("and"));
    if (peek().kind != token_kind::end) {
      const auto &t = peek();
      if (is_comparison(t.kind))
        fail(t.offset, fmt::format("unexpected '{}' (trailing tokens; join comparisons with "
                                   "'and')",
                                   t.text));
      fail(t.offset, fmt::format("unexpected '{}' (trailing tokens)", message_excerpt(t.text)));
    }
    return std::move(m_result);
  }

private:
  std::string_view m_text;
  const std::vector<std::string> &m_arms;
  const std::string &m_where;
  std::vector<token> m_tokens;
  std::size_t m_pos = 0;
  int m_depth = 0;
  expectation m_result;

  [[noreturn]] void fail(std::size_t offset, const std::string &what) const {
    throw invalid_input(fmt::format("{} at offset {}", what, offset), m_where);
  }

  [[nodiscard]] const token &peek() const { return m_tokens[m_pos]; }
  const token &take() { return m_tokens[m_pos++]; }
  bool accept(token_kind k) {
    if (peek().kind != k)
      return false;
    ++m_pos;
    return true;
  }
  bool accept_word(std::string_view w) {
    if (peek().kind != token_kind::word || peek().text != w)
      return false;
    ++m_pos;
    return true;
  }
  static bool is_comparison(token_kind k) {
    return k == token_kind::lt || k == token_kind::le || k == token_kind::gt || k == token_kind::ge;
  }
  static std::string describe(const token &t) {
    return t.kind == token_kind::end ? std::string("end of expression")
                                     : fmt::format("'{}'", message_excerpt(t.text));
  }

  int add(expectation::node n, std::size_t offset) {
    if (m_result.m_nodes.size() >= max_nodes)
      fail(offset, fmt::format("expression has more than {} terms", max_nodes));
    m_result.m_nodes.push_back(n);
    return static_cast<int>(m_result.m_nodes.size() - 1);
  }

  int add_ref(metric what, const std::string &arm, std::size_t offset,
              const std::string &label = {}) {
    const metric_ref ref{what, arm, label};
    auto &refs = m_result.m_refs;
    auto it = std::find(refs.begin(), refs.end(), ref);
    if (it == refs.end())
      it = refs.insert(refs.end(), ref);
    expectation::node n{expectation::node::kind::ref};
    n.ref = static_cast<int>(it - refs.begin());
    return add(n, offset);
  }

  void enter(std::size_t offset) {
    if (++m_depth > max_nesting)
      fail(offset, fmt::format("expression nested deeper than {} levels", max_nesting));
  }

  void expect(token_kind k, std::string_view what) {
    if (!accept(k))
      fail(peek().offset, fmt::format("expected {}, got {}", what, describe(peek())));
  }

  void comparison() {
    const int lhs = sum();
    const token &op = peek();
    if (!is_comparison(op.kind))
      fail(op.offset, fmt::format("expected a comparison (<, <=, >, >=), got {}", describe(op)));
    ++m_pos;
    const int rhs = sum();
    using o = expectation::comparison::op;
    const o which = op.kind == token_kind::lt   ? o::lt
                    : op.kind == token_kind::le ? o::le
                    : op.kind == token_kind::gt ? o::gt
                                                : o::ge;
    m_result.m_comparisons.push_back({which, lhs, rhs});
  }

  int sum() {
    int lhs = product();
    while (peek().kind == token_kind::plus || peek().kind == token_kind::minus) {
      const token &op = take();
      const int rhs = product();
      expectation::node n{op.kind == token_kind::plus ? expectation::node::kind::add
                                                      : expectation::node::kind::sub};
      n.lhs = lhs;
      n.rhs = rhs;
      lhs = add(n, op.offset);
    }
    return lhs;
  }

  int product() {
    int lhs = unary();
    while (peek().kind == token_kind::star || peek().kind == token_kind::slash) {
      const token &op = take();
      const std::size_t rhs_offset = peek().offset;
      const int rhs = unary();
      if (op.kind == token_kind::slash && constant_zero(rhs))
        fail(rhs_offset, "division by a constant zero");
      expectation::node n{op.kind == token_kind::star ? expectation::node::kind::mul
                                                      : expectation::node::kind::div};
      n.lhs = lhs;
      n.rhs = rhs;
      lhs = add(n, op.offset);
    }
    return lhs;
  }

  // True if the subtree reads no metric and evaluates to zero (0, -0, (0), 1-1, ...).
  [[nodiscard]] bool constant_zero(int index) const {
    if (!is_constant(index))
      return false;
    const double v = m_result.eval(index, {});
    return v == 0;
  }
  [[nodiscard]] bool is_constant(int index) const {
    const auto &n = m_result.m_nodes[static_cast<std::size_t>(index)];
    switch (n.k) {
    case expectation::node::kind::number:
      return true;
    case expectation::node::kind::ref:
      return false;
    case expectation::node::kind::neg:
    case expectation::node::kind::abs:
      return is_constant(n.lhs);
    default:
      return is_constant(n.lhs) && is_constant(n.rhs);
    }
  }

  int unary() {
    if (peek().kind == token_kind::minus) {
      const token &op = take();
      enter(op.offset);
      expectation::node n{expectation::node::kind::neg};
      n.lhs = unary();
      --m_depth;
      return add(n, op.offset);
    }
    return atom();
  }

  int atom() {
    const token &t = take();
    switch (t.kind) {
    case token_kind::number: {
      expectation::node n{expectation::node::kind::number};
      n.number = t.number;
      return add(n, t.offset);
    }
    case token_kind::arm:
      if (peek().kind == token_kind::lparen)
        fail(t.offset, fmt::format("'{}' is an arm, not a function", message_excerpt(t.text)));
      return add_ref(metric::time, t.text, t.offset);
    case token_kind::lparen: {
      enter(t.offset);
      const int inner = sum();
      expect(token_kind::rparen, "')'");
      --m_depth;
      return inner;
    }
    case token_kind::word:
      break;
    case token_kind::end:
      fail(t.offset, "unexpected end of expression");
    default:
      fail(t.offset, fmt::format("unexpected '{}'", message_excerpt(t.text)));
    }
    if (t.text == "abs") {
      expect(token_kind::lparen, "'(' after abs");
      enter(t.offset);
      expectation::node n{expectation::node::kind::abs};
      n.lhs = sum();
      expect(token_kind::rparen, "')'");
      --m_depth;
      return add(n, t.offset);
    }
    if (const auto what = function_metric(t.text)) {
      expect(token_kind::lparen, fmt::format("'(' after {}", t.text));
      const token &arg = take();
      if (arg.kind != token_kind::arm)
        fail(arg.offset, fmt::format("{}() takes an arm id, got {}", t.text, describe(arg)));
      std::string label;
      if (*what == metric::share || *what == metric::kernel_share) {
        expect(token_kind::comma, fmt::format("',' and a region label after {}'s arm", t.text));
        const token &l = take();
        if (l.kind != token_kind::string)
          fail(l.offset,
               fmt::format("{}() takes a quoted region label, got {}", t.text, describe(l)));
        label = l.text;
      }
      expect(token_kind::rparen, "')'");
      return add_ref(*what, arg.text, t.offset, label);
    }
    if (t.text == "and")
      fail(t.offset, "unexpected 'and'");
    if (peek().kind == token_kind::lparen)
      fail(t.offset,
           fmt::format("unknown function '{}' (functions: time, peak_mb, gbps, "
                       "pct_ceiling, kernel_time, gap_share, kernels, share, kernel_share, abs)",
                       message_excerpt(t.text)));
    std::string arms;
    for (const auto &a : m_arms)
      arms += (arms.empty() ? "" : ", ") + a;
    fail(t.offset,
         fmt::format("unknown identifier '{}' (arms: {})", message_excerpt(t.text), arms));
  }
};

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
  }
  return "?";
}

bool is_kernel_metric(metric m) {
  return m == metric::kernel_time || m == metric::gap_share || m == metric::kernels ||
         m == metric::kernel_share;
}

expectation expectation::parse(std::string_view text, const std::vector<std::string> &arm_ids,
                               const std::string &where) {
  return expression_parser(text, arm_ids, where).run();
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
