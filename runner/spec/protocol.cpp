// The protocol: schema validation of a strict YAML (or normalised JSON) tree, and the
// normalised JSON with every default explicit.
#include "spec/protocol.hpp"
#include "base/stats.hpp"

#include "base/expr.hpp"
#include "base/yaml_strict.hpp"
#include "prereg/error.hpp"
#include "spec/operation.hpp"
#include "spec/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace prereg {
namespace {

using strict_yaml::node;
using strict_yaml::scalar_style;

constexpr std::size_t max_arms = 64;
constexpr std::size_t max_predictions = 256;
constexpr std::int64_t max_revision = 1000000;
constexpr std::size_t max_title_bytes = 256; // free-text fields, in UTF-8 bytes
constexpr std::size_t max_hypothesis_bytes = 4096;
constexpr std::size_t max_claim_bytes = 1024;
constexpr std::size_t max_expect_bytes = 1024;
constexpr std::int64_t max_invocations = 100000000; // cells x (repetitions + warmup) x repeat
constexpr std::int64_t max_extent = std::int64_t{1} << 31; // rows and cols

// A lower bound on the time a protocol takes to measure, to refuse one that could never finish
// and to say how long one refused by count would take. Assumptions (docs/hardening.md): every
// timed or warm-up invocation takes at least 1 us and moves at least 2 (fwd) or 5 (fwd+bwd)
// [rows, cols] tensors at 10 TB/s on cuda or 1 TB/s on cpu, faster than any device today;
// cache flushes, correctness checks and the analysis are not counted.
constexpr double assumed_floor_s = 1e-6;
constexpr double max_estimated_s = 30 * 86400.0; // 30 days
// The analysis: each bootstrap resample draws every sample of every involved arm at every
// selected cell; drawing one takes at least 1 ns.
constexpr double assumed_resample_s = 1e-9;

double assumed_bytes_per_s(const std::string &device) { return device == "cuda" ? 10e12 : 1e12; }

std::string human_duration(double s) {
  if (s < 120)
    return fmt::format("{:.0f} seconds", s);
  if (s < 2 * 3600.0)
    return fmt::format("{:.0f} minutes", s / 60);
  if (s < 2 * 86400.0)
    return fmt::format("{:.0f} hours", s / 3600);
  if (s < 2 * 365.25 * 86400)
    return fmt::format("{:.0f} days", s / 86400);
  return fmt::format("{:.3g} years", s / (365.25 * 86400));
}

// The lower bound in seconds (see the assumptions above).
double estimated_seconds(const protocol &p) {
  const double bandwidth = assumed_bytes_per_s(p.device);
  const double element = static_cast<double>(element_bytes(p.type));
  double total = 0;
  for (const auto &arm : p.arms)
    for (const auto pass : p.passes)
      for (const auto rows : p.rows)
        for (const auto cols : p.cols) {
          const double tensors = pass == pass_kind::fwd ? 2 : 5;
          const double bytes =
              tensors * static_cast<double>(rows) * static_cast<double>(cols) * element;
          const double per_invocation = std::max(assumed_floor_s, bytes / bandwidth);
          total += per_invocation * static_cast<double>(arm.repeat) *
                   static_cast<double>(p.measurement.repetitions + p.measurement.warmup);
        }
  return total;
}

std::string estimate_text(const protocol &p) {
  return fmt::format("at the very least {} (assuming 1 us per invocation and {:g} TB/s, flushes "
                     "not counted)",
                     human_duration(estimated_seconds(p)), assumed_bytes_per_s(p.device) / 1e12);
}

[[noreturn]] void fail(const node &n, const std::string &what) {
  throw invalid_input(what, n.where);
}

// Plain scalars that some YAML reader (1.1 or 1.2) resolves to null, a boolean or a number.
bool is_ambiguous_plain(const std::string &v) {
  static const std::set<std::string> words{
      "~",     "null",  "Null",  "NULL",  "true",  "True", "TRUE", "false", "False", "FALSE",
      "yes",   "Yes",   "YES",   "no",    "No",    "NO",   "on",   "On",    "ON",    "off",
      "Off",   "OFF",   "y",     "Y",     "n",     "N",    ".inf", ".Inf",  ".INF",  "-.inf",
      "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF", ".nan", ".NaN", ".NAN"};
  if (words.count(v) != 0)
    return true;
  // Anything starting like a number: [+-]? (digit | .digit); covers 0x, 0o, 1_000, 1:30, 1e3.
  std::size_t i = (v.starts_with('+') || v.starts_with('-')) ? 1 : 0;
  if (i < v.size() && v[i] == '.')
    ++i;
  return i < v.size() && v[i] >= '0' && v[i] <= '9';
}

std::string as_string(const node &n, std::string_view what) {
  if (n.k != node::kind::scalar)
    fail(n, fmt::format("{} must be a string, got {}", what, strict_yaml::describe(n)));
  if (n.style == scalar_style::plain && is_ambiguous_plain(n.value))
    fail(n, fmt::format("{} must be a string, got the plain scalar '{}' which YAML may read as "
                        "a number, boolean or null: quote it",
                        what, message_excerpt(n.value)));
  return n.value;
}

std::string as_nonempty_string(const node &n, std::string_view what) {
  auto s = as_string(n, what);
  if (s.find_first_not_of(" \t\n") == std::string::npos)
    fail(n, fmt::format("{} must not be empty", what));
  return s;
}

// A non-empty free-text field of at most `max_bytes` UTF-8 bytes (docs/protocol.md, limits).
std::string as_text(const node &n, std::string_view what, std::size_t max_bytes) {
  auto s = as_nonempty_string(n, what);
  if (s.size() > max_bytes)
    fail(n, fmt::format("{} is {} bytes long; the limit is {} bytes", what, s.size(), max_bytes));
  return s;
}

// A plain decimal integer in [lo, hi]: no sign other than '-', no leading zeros, no 0x/1e3/60.0.
std::int64_t as_int(const node &n, std::string_view what, std::int64_t lo, std::int64_t hi) {
  const auto range = [&] { return fmt::format("an integer from {} to {}", lo, hi); };
  if (n.k != node::kind::scalar)
    fail(n, fmt::format("{} must be {}, got {}", what, range(), strict_yaml::describe(n)));
  if (n.style != scalar_style::plain)
    fail(n, fmt::format("{} must be {}, got the quoted string \"{}\"", what, range(),
                        message_excerpt(n.value)));
  const std::string &v = n.value;
  const std::size_t digits = v.starts_with('-') ? 1 : 0;
  const bool decimal =
      v.size() > digits &&
      std::all_of(v.begin() + digits, v.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      !(v[digits] == '0' && v.size() > digits + 1);
  if (!decimal)
    fail(n, fmt::format("{} must be {} written in plain decimal, got '{}'", what, range(),
                        message_excerpt(v)));
  std::int64_t out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || out < lo || out > hi)
    fail(n, fmt::format("{} must be {}, got {}", what, range(), message_excerpt(v)));
  return out;
}

// A plain decimal number with optional fraction and exponent (1, 0.95, 1.0e-5, 1e-5).
double as_float(const node &n, std::string_view what) {
  if (n.k != node::kind::scalar)
    fail(n, fmt::format("{} must be a number, got {}", what, strict_yaml::describe(n)));
  if (n.style != scalar_style::plain)
    fail(n, fmt::format("{} must be a number, got the quoted string \"{}\"", what,
                        message_excerpt(n.value)));
  const std::string &v = n.value;
  std::size_t i = v.starts_with('-') ? 1 : 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9')
      ++i;
    return i - start;
  };
  bool ok = digits() > 0;
  if (ok && i < v.size() && v[i] == '.') {
    ++i;
    ok = digits() > 0;
  }
  if (ok && i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '+' || v[i] == '-'))
      ++i;
    ok = digits() > 0;
  }
  if (!ok || i != v.size())
    fail(n, fmt::format("{} must be a plain decimal number (like 0.95 or 1e-5), got '{}'", what,
                        message_excerpt(v)));
  double out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || !std::isfinite(out))
    fail(n, fmt::format("{} is out of range: {}", what, message_excerpt(v)));
  return out;
}

bool as_bool(const node &n, std::string_view what) {
  if (n.k == node::kind::scalar && n.style == scalar_style::plain) {
    if (n.value == "true")
      return true;
    if (n.value == "false")
      return false;
  }
  fail(n, fmt::format("{} must be true or false (plain, lowercase), got {}", what,
                      strict_yaml::describe(n)));
}

template <typename E, typename Values>
E as_enum_of(const node &n, std::string_view what, const Values &values) {
  const std::string s = n.k == node::kind::scalar ? n.value : std::string();
  for (const auto &[name, value] : values)
    if (n.k == node::kind::scalar && s == name)
      return value;
  std::string allowed;
  for (const auto &[name, value] : values)
    allowed += (allowed.empty() ? "" : " | ") + std::string(name);
  fail(n, fmt::format("{} must be one of {}, got {}", what, allowed, strict_yaml::describe(n)));
}

template <typename E>
E as_enum(const node &n, std::string_view what,
          std::initializer_list<std::pair<std::string_view, E>> values) {
  return as_enum_of<E>(n, what, values);
}

pass_kind as_pass(const node &n, std::string_view what) {
  return as_enum<pass_kind>(n, what, {{"fwd", pass_kind::fwd}, {"fwd+bwd", pass_kind::fwd_bwd}});
}

const std::vector<node> &as_list(const node &n, std::string_view what, std::size_t max_items) {
  if (n.k != node::kind::sequence)
    fail(n, fmt::format("{} must be a list, got {}", what, strict_yaml::describe(n)));
  if (n.items.empty())
    fail(n, fmt::format("{} must not be empty", what));
  if (n.items.size() > max_items)
    fail(n, fmt::format("{} has {} items, more than the limit of {}", what, n.items.size(),
                        max_items));
  return n.items;
}

// A mapping whose keys are all in `allowed`; gives access to required and optional keys.
class fields {
public:
  fields(const node &map, std::string_view what, std::initializer_list<std::string_view> allowed)
      : fields(map, what, std::vector<std::string_view>(allowed)) {}
  fields(const node &map, std::string_view what, const std::vector<std::string_view> &allowed)
      : m_map(map), m_what(what) {
    if (map.k != node::kind::mapping)
      fail(map, fmt::format("{} must be a mapping, got {}", what, strict_yaml::describe(map)));
    for (const auto &[key, value] : map.entries) {
      if (std::find(allowed.begin(), allowed.end(), key.value) != allowed.end())
        continue;
      std::string names;
      for (auto a : allowed)
        names += (names.empty() ? "" : ", ") + std::string(a);
      fail(key, fmt::format("unknown key '{}' in {} (allowed: {})", key.value, what, names));
    }
  }
  [[nodiscard]] const node *optional(std::string_view key) const { return m_map.find(key); }
  [[nodiscard]] const node &required(std::string_view key) const {
    if (const node *n = m_map.find(key))
      return *n;
    fail(m_map, fmt::format("missing required key '{}' in {}", key, m_what));
  }
  [[nodiscard]] std::string path(std::string_view key) const {
    return m_what == "the protocol" ? std::string(key) : fmt::format("{}.{}", m_what, key);
  }

private:
  const node &m_map;
  std::string m_what;
};

bool id_char(char c, bool upper_and_dot) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         (upper_and_dot && ((c >= 'A' && c <= 'Z') || c == '.'));
}

// [a-z0-9][a-z0-9_-]{0,63}
std::string as_id(const node &n, std::string_view what) {
  const std::string s = n.k == node::kind::scalar ? n.value : std::string();
  const bool ok = n.k == node::kind::scalar && !s.empty() && s.size() <= 64 && s[0] != '_' &&
                  s[0] != '-' &&
                  std::all_of(s.begin(), s.end(), [](char c) { return id_char(c, false); });
  if (!ok)
    fail(n, fmt::format("{} must match [a-z0-9][a-z0-9_-]{{0,63}}, got {}", what,
                        strict_yaml::describe(n)));
  return as_string(n, what);
}

// [A-Za-z0-9_.-]{1,64}
std::string as_prediction_id(const node &n, std::string_view what) {
  const std::string s = n.k == node::kind::scalar ? n.value : std::string();
  const bool ok = n.k == node::kind::scalar && !s.empty() && s.size() <= 64 &&
                  std::all_of(s.begin(), s.end(), [](char c) { return id_char(c, true); });
  if (!ok)
    fail(n, fmt::format("{} must match [A-Za-z0-9_.-]{{1,64}}, got {}", what,
                        strict_yaml::describe(n)));
  return as_string(n, what);
}

std::vector<std::int64_t> as_extents(const node &n, std::string_view what) {
  std::vector<std::int64_t> out;
  for (const node &item : as_list(n, what, strict_yaml::max_list_items)) {
    const auto v = as_int(item, what, 1, max_extent);
    if (std::find(out.begin(), out.end(), v) != out.end())
      fail(item, fmt::format("{} lists {} twice", what, v));
    out.push_back(v);
  }
  return out;
}

// One `at` dimension: a scalar or a list of values that must exist in `all`; normalised to
// the protocol's order. A missing key selects every value.
template <typename T, typename Parse>
std::vector<T> select(const node *n, const std::vector<T> &all, std::string_view what,
                      Parse parse_value, const std::function<std::string(const T &)> &show) {
  if (n == nullptr)
    return all;
  std::vector<const node *> values;
  if (n->k == node::kind::sequence) {
    for (const node &item : as_list(*n, what, strict_yaml::max_list_items))
      values.push_back(&item);
  } else {
    values.push_back(n);
  }
  std::vector<T> chosen;
  for (const node *v : values) {
    const T value = parse_value(*v);
    if (std::find(all.begin(), all.end(), value) == all.end()) {
      std::string listed;
      for (const auto &a : all)
        listed += (listed.empty() ? "" : ", ") + show(a);
      fail(*v, fmt::format("{} selects {}, which the protocol does not have (it has {})", what,
                           show(value), listed));
    }
    if (std::find(chosen.begin(), chosen.end(), value) != chosen.end())
      fail(*v, fmt::format("{} lists {} twice", what, show(value)));
    chosen.push_back(value);
  }
  std::vector<T> ordered;
  for (const auto &a : all)
    if (std::find(chosen.begin(), chosen.end(), a) != chosen.end())
      ordered.push_back(a);
  return ordered;
}

bool is_number_literal(const std::string &s) {
  // digits ['.' digits] [e [+-] digits], as the expression tokeniser reads numbers.
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      ++i;
    return i > start;
  };
  if (!digits())
    return false;
  if (i < s.size() && s[i] == '.' && (++i, !digits()))
    return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
      ++i;
    if (!digits())
      return false;
  }
  return i == s.size();
}

std::string show_int(const std::int64_t &v) { return std::to_string(v); }
std::string show_pass(const pass_kind &p) { return std::string(to_string(p)); }

std::string joined(const std::vector<std::string> &names, std::string_view separator = ", ") {
  std::string out;
  for (const auto &n : names)
    out += (out.empty() ? "" : std::string(separator)) + n;
  return out;
}

// The key node of `key` in a mapping (for messages about the key itself), or null.
const node *key_node(const node &map, std::string_view key) {
  if (map.k != node::kind::mapping)
    return nullptr;
  for (const auto &[k, v] : map.entries)
    if (k.value == key)
      return &k;
  return nullptr;
}

// The operations prereg: 1 knows (its schema is frozen: a later operation needs prereg: 2).
const std::vector<std::string> schema1_operations{"layernorm", "rmsnorm"};

std::vector<std::string_view> top_keys(std::int64_t schema) {
  std::vector<std::string_view> keys{"prereg",     "id",
                                     "title",      "hypothesis",
                                     "device",     "operation",
                                     "dtype",      schema == 1 ? "shapes" : "axes",
                                     "passes",     "operating_point",
                                     "arms",       "measurement",
                                     "analysis",   "correctness",
                                     "predictions"};
  if (schema >= 2) {
    keys.push_back("revision");
    keys.push_back("replication");
  }
  return keys;
}

const operation_desc &as_operation(const node &n, std::int64_t schema) {
  std::vector<std::string> known;
  for (const auto &op : all_operations())
    known.push_back(op.name);
  const operation_desc *op = n.k == node::kind::scalar ? find_operation(n.value) : nullptr;
  if (op == nullptr)
    fail(n, fmt::format("operation must be one of {}, got {}", joined(known, " | "),
                        strict_yaml::describe(n)));
  if (schema == 1 && std::find(schema1_operations.begin(), schema1_operations.end(), op->name) ==
                         schema1_operations.end())
    fail(n, fmt::format("operation {} needs prereg: 2 (prereg: 1 knows {})", op->name,
                        joined(schema1_operations, " | ")));
  // The in-memory protocol holds the two axes every operation has today.
  if (op->axes != std::vector<std::string>{"rows", "cols"})
    fail(n, fmt::format("operation {} has axes {}; this build's protocols hold rows and cols only",
                        op->name, joined(op->axes)));
  return *op;
}

// prereg: 2 `arms[].options`: numbers by name, checked against what the arm declares. The
// result lists every declared option in declaration order, with its value or its default.
std::vector<std::pair<std::string, double>> as_options(const node *n, const arm_info &arm,
                                                       const std::string &what) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto &decl : arm.options)
    out.emplace_back(decl.name, decl.default_value);
  if (n == nullptr)
    return out;
  if (n->k != node::kind::mapping)
    fail(*n, fmt::format("{} must be a mapping of option names to numbers, got {}", what,
                         strict_yaml::describe(*n)));
  std::vector<std::string> declared;
  for (const auto &decl : arm.options)
    declared.push_back(decl.name);
  for (const auto &[key, value] : n->entries) {
    const auto it = std::find(declared.begin(), declared.end(), key.value);
    if (it == declared.end()) {
      if (declared.empty())
        fail(key, fmt::format("unknown option '{}' in {}: kernel '{}' takes no options",
                              message_excerpt(key.value), what, arm.name));
      fail(key, fmt::format("unknown option '{}' in {}: kernel '{}' declares {}",
                            message_excerpt(key.value), what, arm.name, joined(declared)));
    }
    out[static_cast<std::size_t>(it - declared.begin())].second =
        as_float(value, fmt::format("{}.{}", what, key.value));
  }
  return out;
}

// An outside arm declares no options to prereg: any numbers by name, in name order, passed on.
std::vector<std::pair<std::string, double>> as_free_options(const node *n,
                                                            const std::string &what) {
  std::vector<std::pair<std::string, double>> out;
  if (n == nullptr)
    return out;
  if (n->k != node::kind::mapping)
    fail(*n, fmt::format("{} must be a mapping of option names to numbers, got {}", what,
                         strict_yaml::describe(*n)));
  if (n->entries.size() > 64)
    fail(*n, fmt::format("{} has {} options, more than 64", what, n->entries.size()));
  for (const auto &[key, value] : n->entries) {
    if (key.value.empty() || key.value.size() > 64)
      fail(key, fmt::format("option names in {} must be 1 to 64 characters", what));
    out.emplace_back(key.value, as_float(value, fmt::format("{}.{}", what, key.value)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// prereg: 2 `replication: {devices: N, rule: all | majority | "at least K"}`.
replication_spec as_replication(const node &n) {
  const fields r(n, "replication", {"devices", "rule"});
  replication_spec out;
  out.devices = as_int(r.required("devices"), "replication.devices", 2, 1000);
  const node &rule = r.required("rule");
  const std::string text = as_string(rule, "replication.rule");
  if (text == "all") {
    out.threshold = out.devices;
  } else if (text == "majority") {
    out.threshold = out.devices / 2 + 1;
  } else if (text.starts_with("at least ") && text.size() > 9 && text.size() <= 13 &&
             std::all_of(text.begin() + 9, text.end(),
                         [](char c) { return c >= '0' && c <= '9'; }) &&
             text[9] != '0') {
    out.threshold = std::stoll(text.substr(9));
    if (out.threshold > out.devices)
      fail(rule, fmt::format("replication.rule {} asks more devices than replication.devices {}",
                             message_excerpt(text), out.devices));
  } else {
    fail(rule, fmt::format("replication.rule must be all | majority | \"at least K\" (K from 1 "
                           "to devices), got {}",
                           strict_yaml::describe(rule)));
  }
  out.rule = text;
  return out;
}

protocol validate(const node &root, const kernel_lookup &lookup) {
  // The version decides which keys are allowed, so it is read first.
  std::int64_t schema = 1; // a missing prereg is reported below, as a missing required key
  if (const node *version = root.k == node::kind::mapping ? root.find("prereg") : nullptr) {
    schema = as_int(*version, "prereg", std::numeric_limits<std::int64_t>::min(),
                    std::numeric_limits<std::int64_t>::max());
    if (schema != 1 && schema != 2)
      fail(*version, fmt::format("unsupported schema version prereg: {} (this tool reads "
                                 "prereg: 1 and prereg: 2)",
                                 schema));
  }
  if (const node *k = schema == 1 ? key_node(root, "axes") : nullptr)
    fail(*k, "axes needs prereg: 2 (prereg: 1 names its shapes as shapes: {rows: [...], cols: "
             "[...]})");
  if (const node *k = schema == 1 ? key_node(root, "revision") : nullptr)
    fail(*k, "revision needs prereg: 2 (a prereg: 1 file becomes prereg: 2 by renaming shapes: "
             "to axes:)");
  if (const node *k = schema == 1 ? key_node(root, "replication") : nullptr)
    fail(*k, "replication needs prereg: 2");
  if (const node *k = schema == 2 ? key_node(root, "shapes") : nullptr)
    fail(*k, "shapes is prereg: 1; prereg: 2 names the operation's axes: use axes: {rows: [...], "
             "cols: [...]}");
  const fields top(root, "the protocol", top_keys(schema));
  protocol p;
  p.schema = as_int(top.required("prereg"), "prereg", 1, 2);
  p.id = as_id(top.required("id"), "id");
  if (const node *r = top.optional("revision"))
    p.revision = as_int(*r, "revision", 1, max_revision);
  p.title = as_text(top.required("title"), "title", max_title_bytes);
  p.hypothesis = as_text(top.required("hypothesis"), "hypothesis", max_hypothesis_bytes);
  p.device =
      as_enum<std::string>(top.required("device"), "device", {{"cuda", "cuda"}, {"cpu", "cpu"}});
  const operation_desc &op = as_operation(top.required("operation"), p.schema);
  p.op = op.name;
  p.type = as_enum<dtype>(top.required("dtype"), "dtype",
                          {{"fp32", dtype::fp32}, {"fp16", dtype::fp16}, {"bf16", dtype::bf16}});

  // prereg: 1 `shapes: {rows, cols}`; prereg: 2 `axes:` with every axis of the operation.
  const std::string extents = p.schema == 1 ? "shapes" : "axes";
  std::vector<std::string_view> axis_keys(op.axes.begin(), op.axes.end());
  const node &shapes_node = top.required(extents);
  {
    if (p.schema == 2 && shapes_node.k == node::kind::mapping) {
      for (const auto &[key, value] : shapes_node.entries)
        if (std::find(op.axes.begin(), op.axes.end(), key.value) == op.axes.end())
          fail(key, fmt::format("unknown axis '{}' in axes: operation {} has axes {}",
                                message_excerpt(key.value), op.name, joined(op.axes)));
      for (const auto &axis : op.axes)
        if (shapes_node.find(axis) == nullptr)
          fail(shapes_node, fmt::format("missing axis '{}' in axes: operation {} has axes {}", axis,
                                        op.name, joined(op.axes)));
    }
    const fields shapes(shapes_node, extents, axis_keys);
    p.rows = as_extents(shapes.required("rows"), extents + ".rows");
    p.cols = as_extents(shapes.required("cols"), extents + ".cols");
  }

  for (const node &item : as_list(top.required("passes"), "passes", 2)) {
    const auto pass = as_pass(item, "passes");
    if (std::find(p.passes.begin(), p.passes.end(), pass) != p.passes.end())
      fail(item, fmt::format("passes lists {} twice", to_string(pass)));
    if (std::find(op.passes.begin(), op.passes.end(), pass) == op.passes.end())
      fail(item, fmt::format("passes lists {}, which operation {} does not have", to_string(pass),
                             op.name));
    p.passes.push_back(pass);
  }

  if (const node *op_node = top.optional("operating_point");
      op_node && op_node->k != node::kind::null) {
    const fields point(*op_node, "operating_point", axis_keys);
    const node &r = point.required("rows");
    const node &c = point.required("cols");
    const auto rows = as_int(r, "operating_point.rows", 1, max_extent);
    const auto cols = as_int(c, "operating_point.cols", 1, max_extent);
    if (std::find(p.rows.begin(), p.rows.end(), rows) == p.rows.end())
      fail(r, fmt::format("operating_point.rows {} is not in {}.rows", rows, extents));
    if (std::find(p.cols.begin(), p.cols.end(), cols) == p.cols.end())
      fail(c, fmt::format("operating_point.cols {} is not in {}.cols", cols, extents));
    p.operating_point = std::make_pair(rows, cols);
  }

  const auto &arm_nodes = as_list(top.required("arms"), "arms", max_arms);
  for (std::size_t i = 0; i < arm_nodes.size(); ++i) {
    const node &item = arm_nodes[i];
    const std::string arm_what = fmt::format("arms[{}]", i);
    if (const node *k = p.schema == 1 ? key_node(item, "options") : nullptr)
      fail(*k, fmt::format("{}.options needs prereg: 2", arm_what));
    std::vector<std::string_view> arm_keys{"id", "kernel", "launch", "repeat"};
    if (p.schema == 2)
      for (const std::string_view k : {"options", "plugin", "name", "python", "function"})
        arm_keys.push_back(k);
    const fields arm(item, arm_what, arm_keys);
    arm_spec a;
    const node &id_node = arm.required("id");
    a.id = as_id(id_node, arm.path("id"));
    if (is_expression_keyword(a.id))
      fail(id_node,
           fmt::format("arm id '{}' is a word of the expect language; choose another", a.id));
    if (is_number_literal(a.id))
      fail(id_node, fmt::format("arm id '{}' reads as a number in expect; choose another", a.id));
    for (const auto &other : p.arms)
      if (other.id == a.id)
        fail(id_node, fmt::format("duplicate arm id '{}'", a.id));
    const node *kernel_node = arm.optional("kernel");
    const node *plugin_node = arm.optional("plugin");
    const node *python_node = arm.optional("python");
    const int sources =
        (kernel_node != nullptr) + (plugin_node != nullptr) + (python_node != nullptr);
    if (sources == 0)
      fail(item, p.schema == 1
                     ? fmt::format("missing required key 'kernel' in {}", arm_what)
                     : fmt::format("{} needs one of 'kernel', 'plugin' or 'python'", arm_what));
    if (sources > 1)
      fail(item,
           fmt::format("{} names more than one of 'kernel', 'plugin' and 'python'", arm_what));
    // The key an outside arm's second field must have, and the one it must not.
    const auto outside_entry = [&](std::string_view needed, std::string_view other) {
      if (const node *wrong = arm.optional(other))
        fail(*wrong, fmt::format("{}.{} belongs to a{} arm", arm_what, other,
                                 other == "name" ? " plugin" : " python"));
      const node &n = arm.required(needed);
      std::string v = as_string(n, arm.path(needed));
      if (v.empty() || v.size() > 256)
        fail(n, fmt::format("{} must be 1 to 256 characters", arm.path(needed)));
      return v;
    };
    const auto outside_file = [&](const node &n, std::string_view key) {
      std::string v = as_string(n, arm.path(key));
      if (v.empty() || v.size() > 1024 || v.find('\0') != std::string::npos)
        fail(n, fmt::format("{} must be a file path of 1 to 1024 characters", arm.path(key)));
      return v;
    };
    const arm_info *info = nullptr;
    if (kernel_node != nullptr) {
      for (const std::string_view k : {"name", "function"})
        if (const node *wrong = arm.optional(k))
          fail(*wrong, fmt::format("{}.{} belongs to a{} arm, not a kernel arm", arm_what, k,
                                   k == "name" ? " plugin" : " python"));
      a.kernel = as_string(*kernel_node, arm.path("kernel"));
      info = lookup(p.device, a.kernel);
      if (info == nullptr)
        fail(*kernel_node, fmt::format("unknown kernel '{}' for device {} (see `prereg arms`)",
                                       message_excerpt(a.kernel), p.device));
      if (info->op != p.op)
        fail(*kernel_node,
             fmt::format("kernel '{}' computes {}, but the protocol's operation is {}", a.kernel,
                         info->op, p.op));
      if (std::find(info->dtypes.begin(), info->dtypes.end(), p.type) == info->dtypes.end())
        fail(*kernel_node, fmt::format("kernel '{}' ({}) does not support dtype {}", a.kernel,
                                       p.device, to_string(p.type)));
      for (const auto pass : p.passes)
        if (std::find(info->passes.begin(), info->passes.end(), pass) == info->passes.end())
          fail(*kernel_node,
               pass == pass_kind::fwd_bwd
                   ? fmt::format("kernel '{}' has no backward pass, but passes lists fwd+bwd",
                                 a.kernel)
                   : fmt::format("kernel '{}' does not run pass {}, but passes lists it", a.kernel,
                                 to_string(pass)));
    } else if (plugin_node != nullptr) {
      a.source = arm_source::plugin;
      a.file = outside_file(*plugin_node, "plugin");
      a.entry = outside_entry("name", "function");
    } else {
      a.source = arm_source::python;
      a.file = outside_file(*python_node, "python");
      a.entry = outside_entry("function", "name");
    }
    if (const node *launch = arm.optional("launch"))
      a.launch =
          as_enum<launch_mode>(*launch, arm.path("launch"),
                               {{"stream", launch_mode::stream}, {"graph", launch_mode::graph}});
    if (const node *repeat = arm.optional("repeat"))
      a.repeat = as_int(*repeat, arm.path("repeat"), 1, 4096);
    if (info != nullptr)
      a.options = as_options(arm.optional("options"), *info, arm.path("options"));
    else
      a.options = as_free_options(arm.optional("options"), arm.path("options"));
    p.arms.push_back(std::move(a));
  }

  const auto cells =
      static_cast<std::int64_t>(p.arms.size() * p.passes.size() * p.rows.size() * p.cols.size());
  if (cells > max_cells)
    fail(shapes_node, fmt::format("too many cells: {} arms x {} passes x {} rows x {} cols = {}, "
                                  "more than the limit of {}",
                                  p.arms.size(), p.passes.size(), p.rows.size(), p.cols.size(),
                                  cells, max_cells));

  const node &measurement_node = top.required("measurement");
  {
    const fields m(measurement_node, "measurement",
                   {"repetitions", "warmup", "l2_flush", "order", "kernel_clock"});
    const node &reps = m.required("repetitions");
    p.measurement.repetitions = as_int(reps, "measurement.repetitions", 3, max_repetitions);
    if (const node *n = m.optional("warmup"))
      p.measurement.warmup = as_int(*n, "measurement.warmup", 0, 100000);
    if (const node *n = m.optional("l2_flush"))
      p.measurement.l2_flush = as_bool(*n, "measurement.l2_flush");
    if (const node *n = m.optional("kernel_clock")) {
      if (p.schema == 1)
        fail(*n, "measurement.kernel_clock needs prereg: 2");
      p.measurement.kernel_clock = as_bool(*n, "measurement.kernel_clock");
    }
    if (const node *n = m.optional("order"))
      p.measurement.order = as_enum<order_mode>(
          *n, "measurement.order",
          {{"interleaved", order_mode::interleaved}, {"sequential", order_mode::sequential}});
    std::int64_t invocations = 0;
    const auto per_arm_cells =
        static_cast<std::int64_t>(p.passes.size() * p.rows.size() * p.cols.size());
    std::int64_t repeat_sum = 0;
    for (const auto &a : p.arms)
      repeat_sum += a.repeat;
    invocations = per_arm_cells * (p.measurement.repetitions + p.measurement.warmup) * repeat_sum;
    if (invocations > max_invocations)
      fail(reps, fmt::format("too many timed invocations: {} cells per arm x ({} repetitions + {} "
                             "warmup) x {} summed repeat over arms = {}, more than the limit of "
                             "{}; it would take {}",
                             per_arm_cells, p.measurement.repetitions, p.measurement.warmup,
                             repeat_sum, invocations, max_invocations, estimate_text(p)));
    if (estimated_seconds(p) > max_estimated_s)
      fail(reps, fmt::format("measuring would take {}, more than the limit of {} days: lower "
                             "the repetitions or the shapes",
                             estimate_text(p), max_estimated_s / 86400));
  }

  if (const node *analysis_node = top.optional("analysis")) {
    const fields a(*analysis_node, "analysis",
                   {"statistic", "confidence", "bootstrap_resamples", "unstable_iqr_ratio"});
    if (const node *n = a.optional("statistic"))
      p.analysis.statistic = as_enum<statistic_kind>(*n, "analysis.statistic",
                                                     {{"median", statistic_kind::median},
                                                      {"mean", statistic_kind::mean},
                                                      {"min", statistic_kind::min}});
    if (const node *n = a.optional("confidence")) {
      p.analysis.confidence = as_float(*n, "analysis.confidence");
      if (!(p.analysis.confidence > 0.5 && p.analysis.confidence < 1))
        fail(*n, fmt::format("analysis.confidence must be above 0.5 and below 1, got {}",
                             message_excerpt(n->value)));
    }
    if (const node *n = a.optional("bootstrap_resamples"))
      p.analysis.bootstrap_resamples =
          as_int(*n, "analysis.bootstrap_resamples", 100, max_bootstrap_resamples);
    if (const node *n = a.optional("unstable_iqr_ratio")) {
      p.analysis.unstable_iqr_ratio = as_float(*n, "analysis.unstable_iqr_ratio");
      if (!(p.analysis.unstable_iqr_ratio > 0))
        fail(*n, fmt::format("analysis.unstable_iqr_ratio must be above 0, got {}",
                             message_excerpt(n->value)));
    }
  }

  p.correctness = default_tolerance(p.type);
  if (const node *correctness_node = top.optional("correctness")) {
    const fields c(*correctness_node, "correctness", {"rtol", "atol"});
    for (auto [key, target] :
         {std::pair{"rtol", &p.correctness.rtol}, std::pair{"atol", &p.correctness.atol}}) {
      if (const node *n = c.optional(key)) {
        *target = as_float(*n, c.path(key));
        if (*target < 0)
          fail(*n,
               fmt::format("{} must be 0 or more, got {}", c.path(key), message_excerpt(n->value)));
      }
    }
  }

  std::vector<std::string> arm_ids;
  for (const auto &a : p.arms)
    arm_ids.push_back(a.id);
  const auto &prediction_nodes =
      as_list(top.required("predictions"), "predictions", max_predictions);
  double analysis_s = 0; // a lower bound on the bootstrap's time [s]
  for (std::size_t i = 0; i < prediction_nodes.size(); ++i) {
    const node &item = prediction_nodes[i];
    const fields pred(item, fmt::format("predictions[{}]", i), {"id", "claim", "at", "expect"});
    prediction_spec s;
    const node &id_node = pred.required("id");
    s.id = as_prediction_id(id_node, pred.path("id"));
    for (const auto &other : p.predictions)
      if (other.id == s.id)
        fail(id_node, fmt::format("duplicate prediction id '{}'", s.id));
    s.claim = as_text(pred.required("claim"), pred.path("claim"), max_claim_bytes);
    s.at.rows = p.rows;
    s.at.cols = p.cols;
    s.at.passes = p.passes;
    if (const node *at_node = pred.optional("at")) {
      std::vector<std::string_view> at_keys = axis_keys;
      at_keys.push_back("pass");
      const fields at(*at_node, pred.path("at"), at_keys);
      s.at.rows = select<std::int64_t>(
          at.optional("rows"), p.rows, at.path("rows"),
          [&](const node &n) { return as_int(n, at.path("rows"), 1, max_extent); }, show_int);
      s.at.cols = select<std::int64_t>(
          at.optional("cols"), p.cols, at.path("cols"),
          [&](const node &n) { return as_int(n, at.path("cols"), 1, max_extent); }, show_int);
      s.at.passes = select<pass_kind>(
          at.optional("pass"), p.passes, at.path("pass"),
          [&](const node &n) { return as_pass(n, at.path("pass")); }, show_pass);
    }
    const node &expect_node = pred.required("expect");
    s.expect = as_text(expect_node, pred.path("expect"), max_expect_bytes);
    std::size_t involved = 1;
    try {
      const expectation parsed = expectation::parse(s.expect, arm_ids, expect_node.where);
      involved = std::max<std::size_t>(1, parsed.arms().size());
      if (p.schema == 1)
        for (const auto &ref : parsed.references())
          if (is_kernel_metric(ref.what) && ref.what != metric::kernel_share)
            throw invalid_input(
                fmt::format("{}() reads the kernel clock and needs prereg: 2", to_string(ref.what)),
                expect_node.where);
      if (!p.measurement.kernel_clock)
        for (const auto &ref : parsed.references())
          if (is_kernel_metric(ref.what))
            throw invalid_input(fmt::format("{}() reads the kernel clock, which "
                                            "measurement.kernel_clock: false switches off",
                                            to_string(ref.what)),
                                expect_node.where);
      if (p.schema == 1)
        for (const auto &r : parsed.references())
          if (r.what == metric::share || r.what == metric::kernel_share)
            throw invalid_input(
                fmt::format("{}(arm, \"label\") needs prereg: 2", to_string(r.what)),
                expect_node.where);
    } catch (const error &e) {
      throw invalid_input(fmt::format("prediction {}: expect: {}", s.id, e.what()), e.where());
    }
    analysis_s +=
        static_cast<double>(s.at.passes.size() * s.at.rows.size() * s.at.cols.size() * involved) *
        static_cast<double>(p.analysis.bootstrap_resamples) *
        static_cast<double>(p.measurement.repetitions) * assumed_resample_s;
    p.predictions.push_back(std::move(s));
  }
  if (const node *r = top.optional("replication"))
    p.replication = as_replication(*r);
  if (analysis_s > max_estimated_s)
    fail(top.required("predictions"),
         fmt::format("the analysis alone would take {} (bootstrap: {} resamples of {} samples "
                     "per involved arm and selected cell, at 1 ns a sample), more than the "
                     "limit of {} days: lower bootstrap_resamples, the repetitions or the cells "
                     "the predictions select",
                     human_duration(analysis_s), p.analysis.bootstrap_resamples,
                     p.measurement.repetitions, max_estimated_s / 86400));
  return p;
}

std::string_view name_of(launch_mode m) { return m == launch_mode::stream ? "stream" : "graph"; }
std::string_view name_of(order_mode m) {
  return m == order_mode::interleaved ? "interleaved" : "sequential";
}

json passes_json(const std::vector<pass_kind> &passes) {
  json out = json::array();
  for (const auto pass : passes)
    out.push_back(std::string(to_string(pass)));
  return out;
}

} // namespace

std::string arm_spec::label() const {
  switch (source) {
  case arm_source::plugin:
    return fmt::format("plugin {}:{}", file, entry);
  case arm_source::python:
    return fmt::format("python {}:{}", file, entry);
  case arm_source::kernel:
    break;
  }
  return fmt::format("kernel {}", kernel);
}

const arm_spec *find_arm_spec(const protocol &p, std::string_view id) {
  for (const auto &a : p.arms)
    if (a.id == id)
      return &a;
  return nullptr;
}

correctness_spec default_tolerance(dtype d) {
  switch (d) {
  case dtype::fp32:
    return {1e-5, 1e-5};
  case dtype::fp16:
    return {1e-3, 1e-3};
  case dtype::bf16:
    return {1.6e-2, 1e-2};
  }
  return {};
}

protocol parse_protocol(std::string_view yaml_text, const std::string &file,
                        const kernel_lookup &arms) {
  return validate(strict_yaml::parse(yaml_text, file), arms);
}

json to_json(const protocol &p) {
  json arms = json::array();
  for (const auto &a : p.arms) {
    json arm = {{"id", a.id}, {"launch", std::string(name_of(a.launch))}, {"repeat", a.repeat}};
    switch (a.source) {
    case arm_source::kernel:
      arm["kernel"] = a.kernel;
      break;
    case arm_source::plugin:
      arm["plugin"] = a.file;
      arm["name"] = a.entry;
      break;
    case arm_source::python:
      arm["python"] = a.file;
      arm["function"] = a.entry;
      break;
    }
    if (p.schema >= 2) { // prereg: 1 has no options: its JSON (and hash) stays as it was
      json options = json::object();
      for (const auto &[name, value] : a.options)
        options[name] = value;
      arm["options"] = std::move(options);
    }
    arms.push_back(std::move(arm));
  }
  json predictions = json::array();
  for (const auto &s : p.predictions)
    predictions.push_back(
        {{"id", s.id},
         {"claim", s.claim},
         {"at", {{"rows", s.at.rows}, {"cols", s.at.cols}, {"pass", passes_json(s.at.passes)}}},
         {"expect", s.expect}});
  json operating_point = nullptr;
  if (p.operating_point)
    operating_point = {{"rows", p.operating_point->first}, {"cols", p.operating_point->second}};
  json out = {
      {"prereg", p.schema},
      {"id", p.id},
      {"title", p.title},
      {"hypothesis", p.hypothesis},
      {"device", p.device},
      {"operation", p.op},
      {"dtype", std::string(to_string(p.type))},
      {"shapes", {{"rows", p.rows}, {"cols", p.cols}}},
      {"passes", passes_json(p.passes)},
      {"operating_point", operating_point},
      {"arms", arms},
      {"measurement",
       {{"repetitions", p.measurement.repetitions},
        {"warmup", p.measurement.warmup},
        {"l2_flush", p.measurement.l2_flush},
        {"order", std::string(name_of(p.measurement.order))}}},
      {"analysis",
       {{"statistic", std::string(statistic_name(p.analysis.statistic))},
        {"confidence", p.analysis.confidence},
        {"bootstrap_resamples", p.analysis.bootstrap_resamples},
        {"unstable_iqr_ratio", p.analysis.unstable_iqr_ratio}}},
      {"correctness", {{"rtol", p.correctness.rtol}, {"atol", p.correctness.atol}}},
      {"predictions", predictions},
  };
  if (p.schema >= 2) { // the same extents under the operation's axis names
    out["axes"] = std::move(out["shapes"]);
    out.erase("shapes");
  }
  if (!p.measurement.kernel_clock) // the default (on) is absent: every earlier hash stays
    out["measurement"]["kernel_clock"] = false;
  if (p.revision > 1) // revision 1 is the first version: absent, so earlier hashes stay
    out["revision"] = p.revision;
  if (p.replication) // absent when not declared: every earlier hash stays
    out["replication"] = {{"devices", p.replication->devices}, {"rule", p.replication->rule}};
  return out;
}

protocol protocol_from_json(const json &body, const std::string &where, const kernel_lookup &arms) {
  return validate(strict_yaml::from_json(body, where), arms);
}

} // namespace prereg
