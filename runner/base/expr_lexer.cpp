// The tokeniser of the `expect` language (expr_lexer.hpp).
#include "base/expr_lexer.hpp"

#include "base/suggest.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace prereg::expr_detail {
namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// A region label in share(arm, "label"): 1 to 64 of A-Z a-z 0-9 _ . - (docs/python-arms.md).
bool label_char(char c) { return word_char(c) || c == '.' || c == '-'; }
constexpr std::size_t max_label = 64;

} // namespace

std::string arms_text(std::string_view word, const std::vector<std::string> &arms,
                      const arm_aliases &aliases) {
  std::string out = "(arms: ";
  for (std::size_t i = 0; i < arms.size(); ++i)
    out += (i == 0 ? "" : ", ") + arms[i];
  if (!word.empty()) {
    const auto alias = std::find_if(aliases.begin(), aliases.end(),
                                    [&](const auto &a) { return a.first == word; });
    if (alias != aliases.end())
      out += fmt::format("; did you mean '{}', the arm that runs {}?", alias->second, alias->first);
    else
      out += did_you_mean(word, arms);
  }
  return out + ")";
}

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
  if (name == "tflops")
    return metric::tflops;
  if (name == "pct_compute")
    return metric::pct_compute;
  if (name == "pct_roof")
    return metric::pct_roof;
  return std::nullopt;
}

std::vector<token> tokeniser::run() {
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

void tokeniser::fail(std::size_t offset, const std::string &what) const {
  throw invalid_input(fmt::format("{} at offset {}", what, offset), m_where);
}

std::size_t tokeniser::word_end(std::size_t i) const {
  while (i < m_text.size() && word_char(m_text[i]))
    ++i;
  return i;
}

// The longest arm id starting at i: words joined by '-', ending at a word boundary.
std::size_t tokeniser::arm_match(std::size_t i) const {
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
std::size_t tokeniser::number_match(std::size_t i) const {
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

token tokeniser::next(std::size_t &i) {
  const char c = m_text[i];
  if (auto t = punctuation(i))
    return std::move(*t);
  if (c == '"')
    return label(i);
  if (!word_char(c)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F)
      fail(i, fmt::format("unexpected character '{}'", c));
    fail(i, fmt::format("unexpected character 0x{:02X}", u));
  }
  return word(i);
}

token tokeniser::single(std::size_t &i, token_kind k, std::size_t len) const {
  const std::size_t start = i;
  i += len;
  return token{k, start, std::string(m_text.substr(start, len)), 0};
}

// An operator, a parenthesis or a comma; nullopt for anything else.
std::optional<token> tokeniser::punctuation(std::size_t &i) const {
  const bool followed_by_eq = i + 1 < m_text.size() && m_text[i + 1] == '=';
  switch (m_text[i]) {
  case '(':
    return single(i, token_kind::lparen, 1);
  case ')':
    return single(i, token_kind::rparen, 1);
  case '+':
    return single(i, token_kind::plus, 1);
  case '-':
    return single(i, token_kind::minus, 1);
  case '*':
    return single(i, token_kind::star, 1);
  case '/':
    return single(i, token_kind::slash, 1);
  case '<':
    return followed_by_eq ? single(i, token_kind::le, 2) : single(i, token_kind::lt, 1);
  case '>':
    return followed_by_eq ? single(i, token_kind::ge, 2) : single(i, token_kind::gt, 1);
  case ',':
    return single(i, token_kind::comma, 1);
  default:
    return std::nullopt;
  }
}

// A quoted region label: "..." of 1 to max_label label characters.
token tokeniser::label(std::size_t &i) const {
  const std::size_t start = i;
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

// A dotted name where an arm id belongs (a kernel's name, `layernorm.fused`): refused, saying
// that expect takes arm ids. A word that starts with a digit is a number, not a name.
void tokeniser::refuse_dotted_name(std::size_t i) const {
  if (m_text[i] >= '0' && m_text[i] <= '9')
    return;
  std::size_t end = word_end(i);
  if (end + 1 >= m_text.size() || m_text[end] != '.' || !word_char(m_text[end + 1]))
    return;
  while (end + 1 < m_text.size() && m_text[end] == '.' && word_char(m_text[end + 1]))
    end = word_end(end + 1);
  const std::string name = message_excerpt(m_text.substr(i, end - i));
  fail(i, fmt::format("'{}' is not an arm id: expect takes arm ids {}", name,
                      arms_text(name, m_arms, m_aliases)));
}

// An arm id, a keyword, a number, or an unknown word (the parser says what is wrong with it).
token tokeniser::word(std::size_t &i) const {
  const std::size_t start = i;
  const char c = m_text[i];
  refuse_dotted_name(i);
  const std::size_t word_len = word_end(i) - i;
  const std::size_t arm = arm_match(i);
  const auto word_text = m_text.substr(i, word_len);
  if (arm > word_len ||
      (arm > 0 && std::find(keywords.begin(), keywords.end(), word_text) == keywords.end())) {
    i += arm;
    return {token_kind::arm, start, std::string(m_text.substr(start, arm)), 0};
  }
  if (std::find(keywords.begin(), keywords.end(), word_text) != keywords.end()) {
    i += word_len;
    return {token_kind::word, start, std::string(word_text), 0};
  }
  if (const std::size_t len = number_match(i); len > 0) {
    double value = 0;
    const auto *first = m_text.data() + i;
    const auto [ptr, ec] = std::from_chars(first, first + len, value);
    if (ec != std::errc() || ptr != first + len || !std::isfinite(value))
      fail(start, fmt::format("number {} is out of range", message_excerpt(m_text.substr(i, len))));
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

} // namespace prereg::expr_detail
