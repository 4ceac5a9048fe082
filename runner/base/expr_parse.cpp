// The `expect` parser: recursive descent over the tokens into the expectation's node vector.
#include "base/expr.hpp"

#include "base/expr_lexer.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {
namespace {

constexpr int max_nesting = 64;
constexpr std::size_t max_nodes = 1024;

using expr_detail::arms_text;
using expr_detail::function_metric;
using expr_detail::token;
using expr_detail::token_kind;
using expr_detail::tokeniser;

} // namespace

// Recursive descent over the tokens, appending to the expectation's node vector.
class expression_parser {
public:
  expression_parser(std::string_view text, const std::vector<std::string> &arm_ids,
                    const std::string &where, const arm_aliases &aliases)
      : m_text(text), m_arms(arm_ids), m_where(where), m_aliases(aliases),
        m_tokens(tokeniser(text, arm_ids, where, aliases).run()) {}

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
  const arm_aliases &m_aliases;
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
        fail(arg.offset,
             fmt::format("{}() takes an arm id, got {} {}", t.text, describe(arg),
                         arms_text(arg.kind == token_kind::word ? arg.text : std::string(), m_arms,
                                   m_aliases)));
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
                       "pct_ceiling, kernel_time, gap_share, kernels, share, kernel_share, "
                       "tflops, pct_compute, pct_roof, abs)",
                       message_excerpt(t.text)));
    fail(t.offset, fmt::format("unknown identifier '{}' {}", message_excerpt(t.text),
                               arms_text(message_excerpt(t.text), m_arms, m_aliases)));
  }
};

expectation expectation::parse(std::string_view text, const std::vector<std::string> &arm_ids,
                               const std::string &where, const arm_aliases &aliases) {
  return expression_parser(text, arm_ids, where, aliases).run();
}

} // namespace prereg
