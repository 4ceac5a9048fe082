// The tokeniser of the `expect` language (base/expr.hpp): numbers, arm ids (the longest
// matching id, dashes included), words, region labels and operators, with byte offsets.
#pragma once

#include "base/expr.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg::expr_detail {

/// The words of the language (expression_keywords()).
inline constexpr std::array<std::string_view, 14> keywords{
    "and",       "abs",     "time",  "peak_mb",      "gbps",   "pct_ceiling", "kernel_time",
    "gap_share", "kernels", "share", "kernel_share", "tflops", "pct_compute", "pct_roof"};

/// "(arms: a, b; did you mean 'a'?)": the arm ids, and for a word written where an arm id
/// belongs (`word`, empty for none) the arm an alias of that name names, else the nearest id.
[[nodiscard]] std::string arms_text(std::string_view word, const std::vector<std::string> &arms,
                                    const arm_aliases &aliases);

/// The metric a function word reads, or nullopt for another word.
[[nodiscard]] std::optional<metric> function_metric(std::string_view name);

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
  std::size_t offset; ///< 0-based byte offset in the text
  std::string text;
  double number = 0;
};

/// Splits an expression into tokens; a malformed token throws invalid_input at `where` with
/// its offset in the message.
class tokeniser {
public:
  tokeniser(std::string_view text, const std::vector<std::string> &arm_ids,
            const std::string &where, const arm_aliases &aliases)
      : m_text(text), m_arms(arm_ids), m_where(where), m_aliases(aliases) {}

  /// Every token, ending with token_kind::end at the text's length.
  [[nodiscard]] std::vector<token> run();

private:
  std::string_view m_text;
  const std::vector<std::string> &m_arms;
  const std::string &m_where;
  const arm_aliases &m_aliases;

  [[noreturn]] void fail(std::size_t offset, const std::string &what) const;
  [[nodiscard]] std::size_t word_end(std::size_t i) const;
  [[nodiscard]] std::size_t arm_match(std::size_t i) const;
  [[nodiscard]] std::size_t number_match(std::size_t i) const;
  void refuse_dotted_name(std::size_t i) const;
  token next(std::size_t &i);
  token single(std::size_t &i, token_kind k, std::size_t len) const;
  std::optional<token> punctuation(std::size_t &i) const;
  token label(std::size_t &i) const;
  token word(std::size_t &i) const;
};

} // namespace prereg::expr_detail
