// Strict YAML: byte checks, the nesting pre-scan (yaml_nesting.cpp), and a tree built from
// yaml-cpp's events; the tree of a JSON value is yaml_from_json.cpp.
#include "base/yaml_strict.hpp"

#include "base/utf8.hpp"
#include "base/yaml_nesting.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <optional>
#include <sstream>

namespace prereg::strict_yaml {
namespace {

// Maps byte offsets of a text to 1-based line and column (columns count code points).
class position_map {
public:
  explicit position_map(std::string_view text) : m_text(text) {
    m_line_starts.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n')
        m_line_starts.push_back(i + 1);
  }

  // Parser events arrive in text order, so counting resumes from the last position on the same
  // line: linear in the text, not quadratic in a long line with many nodes.
  [[nodiscard]] std::pair<int, int> locate(std::size_t pos) const {
    pos = std::min(pos, m_text.size());
    auto it = std::upper_bound(m_line_starts.begin(), m_line_starts.end(), pos);
    const std::size_t start = *(it - 1);
    const int line = static_cast<int>(it - m_line_starts.begin());
    std::size_t from = start;
    int column = 1;
    if (line == m_last_line && pos >= m_last_pos) {
      from = m_last_pos;
      column = m_last_column;
    }
    for (std::size_t i = from; i < pos; ++i)
      if ((static_cast<unsigned char>(m_text[i]) & 0xC0) != 0x80)
        ++column;
    m_last_line = line;
    m_last_pos = pos;
    m_last_column = column;
    return {line, column};
  }

private:
  std::string_view m_text;
  std::vector<std::size_t> m_line_starts;
  mutable int m_last_line = 0; // the last locate(): its line, byte offset and column
  mutable std::size_t m_last_pos = 0;
  mutable int m_last_column = 1;
};

[[noreturn]] void fail_at(const std::string &file, const position_map &map, std::size_t pos,
                          const std::string &what) {
  const auto [line, column] = map.locate(pos);
  throw invalid_input(what, at(file, line, column));
}

// Rejects control characters other than tab, LF and CR, and a CR not followed by LF.
void check_characters(std::string_view text, const std::string &file) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\t' || c == '\n')
      continue;
    if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n')
        continue;
      fail_at(file, position_map(text), i, "carriage return not followed by a line feed");
    }
    if (c < 0x20 || c == 0x7F)
      fail_at(file, position_map(text), i, fmt::format("control character 0x{:02X}", c));
  }
}

// A leading BOM is dropped and CRLF becomes LF, so marks are byte offsets of this text.
std::string normalise_line_endings(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF"))
    text.remove_prefix(3);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i)
    if (!(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n'))
      out.push_back(text[i]);
  return out;
}

// yaml-cpp 0.7 writes the escapes \N (U+0085) and \_ (U+00A0) of a double-quoted scalar as the
// single bytes 0x85 and 0xA0, not as UTF-8. The file was checked to be UTF-8, so such a byte
// where a character starts can only come from those escapes: encode the code point instead.
std::string encode_yaml_cpp_escapes(const std::string &value) {
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    const auto b = static_cast<unsigned char>(value[i]);
    if (b == 0x85 || b == 0xA0) {
      out += '\xC2';
      out += value[i++];
      continue;
    }
    const std::size_t len = b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    out.append(value, i, len);
    i += len;
  }
  return out;
}

std::string pretty_tag(const std::string &tag) {
  constexpr std::string_view core = "tag:yaml.org,2002:";
  if (tag.starts_with(core))
    return "!!" + tag.substr(core.size());
  return tag;
}

// Builds the tree from parser events; throws at the first forbidden construct.
class tree_builder final : public YAML::EventHandler {
public:
  tree_builder(std::string_view text, const std::string &file)
      : m_text(text), m_file(file), m_map(text) {}

  [[nodiscard]] std::optional<node> take_root() { return std::move(m_root); }
  [[nodiscard]] std::string where(const YAML::Mark &mark) const {
    if (mark.pos >= 0 && static_cast<std::size_t>(mark.pos) <= m_text.size()) {
      const auto [line, column] = m_map.locate(static_cast<std::size_t>(mark.pos));
      return at(m_file, line, column);
    }
    return at(m_file, std::max(mark.line, 0) + 1, std::max(mark.column, 0) + 1);
  }

  void OnDocumentStart(const YAML::Mark &mark) override {
    if (m_documents++ > 0)
      fail(mark, "more than one YAML document");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark &mark, YAML::anchor_t anchor) override {
    check_anchor(mark, anchor);
    node n;
    n.k = node::kind::null;
    n.where = explicit_null(mark) ? where(mark) : empty_node_where(mark);
    add(std::move(n));
  }

  void OnAlias(const YAML::Mark &mark, YAML::anchor_t) override {
    fail(mark, "YAML aliases (*name) are not allowed");
  }

  void OnAnchor(const YAML::Mark &mark, const std::string &name) override {
    fail(mark, fmt::format("YAML anchors (&{}) are not allowed", message_excerpt(name)));
  }

  void OnScalar(const YAML::Mark &mark, const std::string &tag, YAML::anchor_t anchor,
                const std::string &value) override {
    check_anchor(mark, anchor);
    node n;
    n.k = node::kind::scalar;
    n.where = where(mark);
    n.value = encode_yaml_cpp_escapes(value);
    if (invalid_utf8_offset(n.value) != std::string::npos)
      fail(mark, "a string's escape sequences give invalid UTF-8");
    n.style = scalar_style_of(mark, tag);
    add(std::move(n));
  }

  void OnSequenceStart(const YAML::Mark &mark, const std::string &tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, tag, anchor, node::kind::sequence);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark &mark, const std::string &tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, tag, anchor, node::kind::mapping);
  }
  void OnMapEnd() override { close(); }

private:
  struct frame {
    node n;
    std::optional<node> key; // a mapping's key waiting for its value
  };

  std::string_view m_text;
  const std::string &m_file;
  position_map m_map;
  std::vector<frame> m_stack;
  std::optional<node> m_root;
  int m_documents = 0;
  std::size_t m_nodes = 0;

  [[noreturn]] void fail(const YAML::Mark &mark, const std::string &what) const {
    throw invalid_input(what, where(mark));
  }

  void check_anchor(const YAML::Mark &mark, YAML::anchor_t anchor) const {
    if (anchor != 0)
      fail(mark, "YAML anchors are not allowed");
  }

  // `~`/`null` written out, as opposed to an empty value whose mark is the next token's.
  [[nodiscard]] bool explicit_null(const YAML::Mark &mark) const {
    if (mark.pos < 0 || static_cast<std::size_t>(mark.pos) >= m_text.size())
      return false;
    const auto rest = m_text.substr(static_cast<std::size_t>(mark.pos));
    return rest.starts_with("~") || rest.starts_with("null") || rest.starts_with("Null") ||
           rest.starts_with("NULL");
  }

  // An empty value is reported at its key (or at its list).
  [[nodiscard]] std::string empty_node_where(const YAML::Mark &mark) const {
    if (m_stack.empty())
      return where(mark);
    const frame &top = m_stack.back();
    if (top.key)
      return top.key->where;
    return top.n.where;
  }

  [[nodiscard]] scalar_style scalar_style_of(const YAML::Mark &mark, const std::string &tag) const {
    if (tag == "?")
      return scalar_style::plain;
    if (tag == "!" && mark.pos >= 0 && static_cast<std::size_t>(mark.pos) < m_text.size()) {
      const char c = m_text[static_cast<std::size_t>(mark.pos)];
      if (c == '"' || c == '\'')
        return scalar_style::quoted;
      if (c == '|' || c == '>')
        return scalar_style::block;
    }
    fail(mark, fmt::format("explicit YAML tags ({}) are not allowed", pretty_tag(tag)));
  }

  void open(const YAML::Mark &mark, const std::string &tag, YAML::anchor_t anchor,
            node::kind kind) {
    check_anchor(mark, anchor);
    if (tag != "?")
      fail(mark, fmt::format("explicit YAML tags ({}) are not allowed", pretty_tag(tag)));
    if (!m_stack.empty() && m_stack.back().n.k == node::kind::mapping && !m_stack.back().key)
      fail(mark, "mapping keys must be scalars");
    if (m_stack.size() >= max_depth)
      fail(mark, fmt::format("nesting deeper than {} levels", max_depth));
    frame f;
    f.n.k = kind;
    f.n.where = where(mark);
    m_stack.push_back(std::move(f));
  }

  void close() {
    node n = std::move(m_stack.back().n);
    m_stack.pop_back();
    add(std::move(n));
  }

  void add(node n) {
    if (++m_nodes > max_nodes)
      throw invalid_input(fmt::format("more than {} YAML nodes", max_nodes), n.where);
    if (m_stack.empty()) {
      m_root = std::move(n);
      return;
    }
    frame &top = m_stack.back();
    if (top.n.k == node::kind::sequence) {
      if (top.n.items.size() >= max_list_items)
        throw invalid_input(fmt::format("a list may hold at most {} items", max_list_items),
                            n.where);
      top.n.items.push_back(std::move(n));
      return;
    }
    if (top.key) {
      top.n.entries.emplace_back(std::move(*top.key), std::move(n));
      top.key.reset();
      return;
    }
    if (n.k != node::kind::scalar)
      throw invalid_input("mapping keys must be scalars", n.where);
    if (n.style == scalar_style::plain && n.value == "<<")
      throw invalid_input("YAML merge keys (<<) are not allowed", n.where);
    for (const auto &[key, value] : top.n.entries)
      if (key.value == n.value)
        throw invalid_input(
            fmt::format("duplicate key '{}' (first at {})", message_excerpt(n.value), key.where),
            n.where);
    if (top.n.entries.size() >= max_map_entries)
      throw invalid_input(fmt::format("a mapping may hold at most {} keys", max_map_entries),
                          n.where);
    top.key = std::move(n);
  }
};

} // namespace

node::~node() = default;

const node *node::find(std::string_view key) const {
  for (const auto &[k, v] : entries)
    if (k.value == key)
      return &v;
  return nullptr;
}

std::string describe(const node &n) {
  switch (n.k) {
  case node::kind::null:
    return "null";
  case node::kind::sequence:
    return "a list";
  case node::kind::mapping:
    return "a mapping";
  case node::kind::scalar:
    break;
  }
  if (n.style != scalar_style::plain)
    return fmt::format("the string \"{}\"", message_excerpt(n.value));
  return fmt::format("'{}'", message_excerpt(n.value));
}

node parse(std::string_view text, const std::string &file) {
  if (text.size() > max_file_bytes)
    throw invalid_input(fmt::format("file is {} bytes, more than the limit of 1 MiB ({} bytes)",
                                    text.size(), max_file_bytes),
                        file);
  if (const auto bad = invalid_utf8_offset(text); bad != std::string_view::npos)
    fail_at(file, position_map(text), bad, "the file is not valid UTF-8");
  check_characters(text, file);

  const std::string normalised = normalise_line_endings(text);
  if (const auto deep = detail::deep_nesting_offset(normalised); deep != std::string_view::npos)
    fail_at(file, position_map(normalised), deep,
            fmt::format("nesting deeper than {} levels", max_depth));

  std::istringstream in(normalised);
  tree_builder builder(normalised, file);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::Exception &e) {
    throw invalid_input("invalid YAML: " + e.msg, builder.where(e.mark));
  }
  auto root = builder.take_root();
  if (!root)
    throw invalid_input("empty document: expected a mapping", at(file, 1, 1));
  return std::move(*root);
}

} // namespace prereg::strict_yaml
