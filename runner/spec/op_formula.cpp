// The formula language of operation files (op_formula.hpp): a recursive-descent evaluator over
// 64-bit integers with overflow checks.
#include "spec/op_formula.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cctype>
#include <limits>

namespace prereg {
namespace {

constexpr std::size_t max_formula_bytes = 1024;
constexpr int max_depth = 64;

class formula_parser {
public:
  formula_parser(std::string_view text, const formula_env &env, std::string_view what)
      : m_text(text), m_env(env), m_what(what) {}

  std::int64_t run() {
    if (m_text.size() > max_formula_bytes)
      fail(fmt::format("is {} bytes long; the limit is {}", m_text.size(), max_formula_bytes));
    const std::int64_t v = sum(0);
    skip();
    if (m_pos != m_text.size())
      fail(fmt::format("unexpected '{}' at offset {}", m_text[m_pos], m_pos));
    if (v < 0 && !m_env.signed_bound)
      fail(fmt::format("is negative ({})", v));
    return v;
  }

private:
  [[noreturn]] void fail(const std::string &why) const {
    throw invalid_input(fmt::format("{} '{}' {}", m_what, m_text, why));
  }
  void skip() {
    while (m_pos < m_text.size() && (m_text[m_pos] == ' ' || m_text[m_pos] == '\t'))
      ++m_pos;
  }
  bool eat(char c) {
    skip();
    if (m_pos < m_text.size() && m_text[m_pos] == c) {
      ++m_pos;
      return true;
    }
    return false;
  }
  std::int64_t checked(__int128 v) const {
    if (v > std::numeric_limits<std::int64_t>::max() ||
        v < std::numeric_limits<std::int64_t>::min())
      fail("overflows 64 bits");
    return static_cast<std::int64_t>(v);
  }
  std::int64_t sum(int depth) {
    std::int64_t v = product(depth);
    for (;;) {
      if (eat('+'))
        v = checked(static_cast<__int128>(v) + product(depth));
      else if (eat('-'))
        v = checked(static_cast<__int128>(v) - product(depth));
      else
        return v;
    }
  }
  std::int64_t product(int depth) {
    std::int64_t v = atom(depth);
    for (;;) {
      if (eat('*')) {
        v = checked(static_cast<__int128>(v) * atom(depth));
      } else if (eat('/')) {
        const std::int64_t d = atom(depth);
        if (d == 0)
          fail("divides by zero");
        if (m_env.extents != nullptr && v % d != 0)
          fail(fmt::format("divides {} by {}, which is not exact", v, d));
        v /= d;
      } else {
        return v;
      }
    }
  }
  std::int64_t atom(int depth) {
    if (depth > max_depth)
      fail(fmt::format("nests deeper than {}", max_depth));
    skip();
    if (eat('(')) {
      const std::int64_t v = sum(depth + 1);
      if (!eat(')'))
        fail(fmt::format("lacks a ')' at offset {}", m_pos));
      return v;
    }
    if (m_env.signed_bound && eat('-'))
      return checked(-static_cast<__int128>(atom(depth + 1)));
    if (m_pos >= m_text.size())
      fail("ends where a number, an axis or s belongs");
    const char c = m_text[m_pos];
    if (std::isdigit(static_cast<unsigned char>(c)) != 0)
      return number();
    if (std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_')
      return name();
    fail(fmt::format("unexpected '{}' at offset {}", c, m_pos));
  }
  std::int64_t number() {
    __int128 v = 0;
    while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos])) != 0)
      v = checked(v * 10 + (m_text[m_pos++] - '0'));
    return static_cast<std::int64_t>(v);
  }
  std::int64_t name() {
    const std::size_t start = m_pos;
    while (m_pos < m_text.size() &&
           (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) != 0 || m_text[m_pos] == '_'))
      ++m_pos;
    const std::string_view id = m_text.substr(start, m_pos - start);
    if (id == "s")
      return m_env.extents == nullptr ? 1 : m_env.s;
    const auto &axes = *m_env.axes;
    for (std::size_t i = 0; i < axes.size(); ++i)
      if (axes[i] == id)
        return m_env.extents == nullptr ? 1 : m_env.extents->at(i);
    if (m_env.tensor_sizes != nullptr && id.starts_with("s_"))
      for (const auto &[tensor, bytes] : *m_env.tensor_sizes)
        if (id.substr(2) == tensor)
          return m_env.extents == nullptr ? 1 : bytes;
    std::string known;
    for (const auto &a : axes)
      known += a + ", ";
    std::string tensors;
    if (m_env.tensor_sizes != nullptr && id.starts_with("s_"))
      for (const auto &[tensor, bytes] : *m_env.tensor_sizes)
        tensors += (tensors.empty() ? "" : ", ") + tensor;
    if (!tensors.empty())
      fail(fmt::format("names '{}', which is neither an axis ({}) nor s nor s_NAME of a tensor "
                       "(tensors: {})",
                       id, known.substr(0, known.size() - 2), tensors));
    fail(fmt::format("names '{}', which is neither an axis ({}) nor s", id,
                     known.substr(0, known.size() - 2)));
  }

  std::string_view m_text;
  const formula_env &m_env;
  std::string_view m_what;
  std::size_t m_pos = 0;
};

} // namespace

std::uint64_t eval_formula(std::string_view text, const formula_env &env, std::string_view what) {
  return static_cast<std::uint64_t>(formula_parser(text, env, what).run());
}

std::int64_t eval_bound(std::string_view text, const formula_env &env, std::string_view what) {
  formula_env e = env;
  e.signed_bound = true;
  return formula_parser(text, e, what).run();
}

std::string traffic_split_fault(const std::string &bytes, const std::string &read_bytes,
                                const std::string &write_bytes, const formula_env &env,
                                const std::string &where) {
  if (read_bytes.empty() && write_bytes.empty())
    return {};
  if (bytes.empty())
    return fmt::format("{} declares {} without bytes (they split the pass's bytes)", where,
                       read_bytes.empty() ? "write_bytes" : "read_bytes");
  const std::uint64_t b = eval_formula(bytes, env, "bytes");
  const std::uint64_t r = read_bytes.empty() ? 0 : eval_formula(read_bytes, env, "r");
  const std::uint64_t w = write_bytes.empty() ? 0 : eval_formula(write_bytes, env, "w");
  const bool both = !read_bytes.empty() && !write_bytes.empty();
  if (r > b || w > b || (both && r + w != b))
    return fmt::format("{}: read_bytes and write_bytes do not split bytes (with every name 1: "
                       "bytes {}, read_bytes {}, write_bytes {})",
                       where, b, read_bytes.empty() ? "-" : std::to_string(r),
                       write_bytes.empty() ? "-" : std::to_string(w));
  return {};
}

} // namespace prereg
