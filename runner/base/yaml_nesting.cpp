// The nesting pre-scan of the strict YAML reader (yaml_nesting.hpp): one pass over the lines,
// keeping the block indentation stack and the count of open flow brackets.
#include "base/yaml_nesting.hpp"

#include "base/yaml_strict.hpp"

#include <vector>

namespace prereg::strict_yaml::detail {
namespace {

constexpr std::size_t npos = std::string_view::npos;

class nesting_scan {
public:
  explicit nesting_scan(std::string_view text) : m_t(text), m_n(text.size()) {}

  // The offset where the estimate first exceeds max_depth, or npos.
  std::size_t run() {
    while (m_i < m_n) {
      const std::size_t line_start = m_i;
      while (m_i < m_n && m_t[m_i] == ' ')
        ++m_i;
      const std::size_t indent = m_i - line_start;
      if (m_i >= m_n)
        break;
      if (m_t[m_i] == '\n' || m_t[m_i] == '#') {
        skip_to_line_end();
        ++m_i;
        continue;
      }
      if (m_flow == 0)
        if (const std::size_t deep = open_block_levels(line_start, indent); deep != npos)
          return deep;
      if (const std::size_t deep = scan_tokens(indent); deep != npos)
        return deep;
      ++m_i; // the line feed
    }
    return npos;
  }

private:
  std::string_view m_t;
  std::size_t m_n;
  std::size_t m_i = 0;
  std::vector<std::size_t> m_indents; // block indentation stack (columns)
  std::size_t m_flow = 0;             // open flow brackets

  [[nodiscard]] bool too_deep() const { return m_indents.size() + m_flow > max_depth; }
  [[nodiscard]] bool is_blank(std::size_t k) const {
    return k >= m_n || m_t[k] == ' ' || m_t[k] == '\n';
  }
  void skip_to_line_end() {
    while (m_i < m_n && m_t[m_i] != '\n')
      ++m_i;
  }

  // m_i at the opening quote; leaves m_i after the closing one.
  void skip_quoted(char q) {
    for (++m_i; m_i < m_n; ++m_i) {
      if (q == '"' && m_t[m_i] == '\\') {
        ++m_i;
      } else if (m_t[m_i] == q) {
        if (q == '\'' && m_i + 1 < m_n && m_t[m_i + 1] == '\'') {
          ++m_i;
        } else {
          ++m_i;
          return;
        }
      }
    }
  }

  // A line in block context: its indentation closes deeper levels and opens one, and compact
  // nested indicators on one line ("- - x", "? x", "- key: ...") open one each.
  std::size_t open_block_levels(std::size_t line_start, std::size_t indent) {
    while (!m_indents.empty() && m_indents.back() >= indent)
      m_indents.pop_back();
    m_indents.push_back(indent);
    while (m_i < m_n && (m_t[m_i] == '-' || m_t[m_i] == '?' || m_t[m_i] == ':') &&
           is_blank(m_i + 1)) {
      ++m_i;
      while (m_i < m_n && m_t[m_i] == ' ')
        ++m_i;
      m_indents.push_back(m_i - line_start);
      if (too_deep())
        return m_i;
    }
    if (too_deep())
      return m_i;
    return npos;
  }

  // A block scalar: skips the lines indented deeper than its parent (and blank lines); leaves
  // m_i at the line feed of its last line.
  void skip_block_scalar(std::size_t indent) {
    const std::size_t parent = m_indents.empty() ? indent : m_indents.back();
    skip_to_line_end();
    while (m_i < m_n) {
      std::size_t k = m_i + 1, spaces = 0;
      while (k < m_n && m_t[k] == ' ')
        ++k, ++spaces;
      if (k < m_n && m_t[k] != '\n' && spaces <= parent)
        break;
      m_i = k;
      skip_to_line_end();
      if (m_i >= m_n)
        break;
    }
  }

  // The rest of a line: flow brackets, quoted scalars, comments and block scalars. Returns the
  // offset of a bracket that opens one level too many, or npos.
  std::size_t scan_tokens(std::size_t indent) {
    bool token_start = true; // the next character may begin a token
    bool plain = false;      // inside a block-context plain scalar
    while (m_i < m_n && m_t[m_i] != '\n') {
      const char c = m_t[m_i];
      if (c == '#' && (token_start || m_t[m_i - 1] == ' ' || m_t[m_i - 1] == '\t')) {
        skip_to_line_end();
        break;
      }
      if (c == ' ' || c == '\t') {
        if (!plain)
          token_start = true;
        ++m_i;
        continue;
      }
      if (plain) {
        if (c == ':' && is_blank(m_i + 1)) {
          plain = false;
          token_start = true;
        }
        ++m_i;
        continue;
      }
      if ((c == '"' || c == '\'') && token_start) {
        skip_quoted(c);
        token_start = false;
        continue;
      }
      if ((c == '|' || c == '>') && token_start && m_flow == 0) {
        skip_block_scalar(indent);
        break;
      }
      if ((c == '[' || c == '{') && (token_start || m_flow > 0)) {
        ++m_flow;
        if (too_deep())
          return m_i;
        token_start = true;
      } else if ((c == ']' || c == '}') && m_flow > 0) {
        --m_flow;
        token_start = false;
      } else if (c == ',' && m_flow > 0) {
        token_start = true;
      } else if ((c == ':' || c == '-' || c == '?') && is_blank(m_i + 1)) {
        token_start = true;
      } else if (m_flow == 0) {
        plain = true;
      } else {
        token_start = false;
      }
      ++m_i;
    }
    return npos;
  }
};

} // namespace

std::size_t deep_nesting_offset(std::string_view text) { return nesting_scan(text).run(); }

} // namespace prereg::strict_yaml::detail
