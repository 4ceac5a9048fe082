// The protocol's arms: ids, one source each (a built-in kernel checked against the registry,
// a plugin or a Python function), launch, repeat and options.
#include "spec/protocol_sections.hpp"

#include "base/expr.hpp"

#include <algorithm>
#include <string>

namespace prereg::protocol_detail {
namespace {

constexpr std::size_t max_arms = 64;

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

// The id, which is no word or number of the expect language and no other arm's id.
std::string read_arm_id(const fields &arm, const std::vector<arm_spec> &earlier) {
  const node &id_node = arm.required("id");
  std::string id = as_id(id_node, arm.path("id"));
  if (is_expression_keyword(id))
    fail(id_node, fmt::format("arm id '{}' is a word of the expect language; choose another", id));
  if (is_number_literal(id))
    fail(id_node, fmt::format("arm id '{}' reads as a number in expect; choose another", id));
  for (const auto &other : earlier)
    if (other.id == id)
      fail(id_node, fmt::format("duplicate arm id '{}'", id));
  return id;
}

// The key an outside arm's second field must have (`needed`), and the one it must not.
std::string outside_entry(const fields &arm, const std::string &arm_what, std::string_view needed,
                          std::string_view other) {
  if (const node *wrong = arm.optional(other))
    fail(*wrong, fmt::format("{}.{} belongs to a{} arm", arm_what, other,
                             other == "name" ? " plugin" : " python"));
  const node &n = arm.required(needed);
  std::string v = as_string(n, arm.path(needed));
  if (v.empty() || v.size() > 256)
    fail(n, fmt::format("{} must be 1 to 256 characters", arm.path(needed)));
  return v;
}

// An outside arm's file as written (`plugin:` or `python:`).
std::string outside_file(const fields &arm, const node &n, std::string_view key) {
  std::string v = as_string(n, arm.path(key));
  if (v.empty() || v.size() > 1024 || v.find('\0') != std::string::npos)
    fail(n, fmt::format("{} must be a file path of 1 to 1024 characters", arm.path(key)));
  return v;
}

// A built-in kernel: registered for the device, computing the operation, supporting the dtype
// and every pass. Returns its registry entry.
const arm_info &read_kernel(const fields &arm, const std::string &arm_what, const node &kernel_node,
                            const protocol &p, const kernel_lookup &lookup, arm_spec &a) {
  for (const std::string_view k : {"name", "function"})
    if (const node *wrong = arm.optional(k))
      fail(*wrong, fmt::format("{}.{} belongs to a{} arm, not a kernel arm", arm_what, k,
                               k == "name" ? " plugin" : " python"));
  a.kernel = as_string(kernel_node, arm.path("kernel"));
  const arm_info *info = lookup(p.device, a.kernel);
  if (info == nullptr)
    fail(kernel_node, fmt::format("unknown kernel '{}' for device {} (see `prereg arms`)",
                                  message_excerpt(a.kernel), p.device));
  if (info->op != p.op)
    fail(kernel_node, fmt::format("kernel '{}' computes {}, but the protocol's operation is {}",
                                  a.kernel, info->op, p.op));
  if (std::find(info->dtypes.begin(), info->dtypes.end(), p.type) == info->dtypes.end())
    fail(kernel_node, fmt::format("kernel '{}' ({}) does not support dtype {}", a.kernel, p.device,
                                  to_string(p.type)));
  for (const auto pass : p.passes)
    if (std::find(info->passes.begin(), info->passes.end(), pass) == info->passes.end())
      fail(kernel_node,
           pass == pass_kind::fwd_bwd
               ? fmt::format("kernel '{}' has no backward pass, but passes lists fwd+bwd", a.kernel)
               : fmt::format("kernel '{}' does not run pass {}, but passes lists it", a.kernel,
                             to_string(pass)));
  return *info;
}

// Exactly one of kernel, plugin and python; returns the kernel's registry entry, or null for an
// outside arm.
const arm_info *read_source(const fields &arm, const node &item, const std::string &arm_what,
                            const protocol &p, const kernel_lookup &lookup, arm_spec &a) {
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
    fail(item, fmt::format("{} names more than one of 'kernel', 'plugin' and 'python'", arm_what));
  if (kernel_node != nullptr)
    return &read_kernel(arm, arm_what, *kernel_node, p, lookup, a);
  if (plugin_node != nullptr) {
    a.source = arm_source::plugin;
    a.file = outside_file(arm, *plugin_node, "plugin");
    a.entry = outside_entry(arm, arm_what, "name", "function");
  } else {
    a.source = arm_source::python;
    a.file = outside_file(arm, *python_node, "python");
    a.entry = outside_entry(arm, arm_what, "function", "name");
  }
  return nullptr;
}

arm_spec read_arm(const node &item, std::size_t i, const protocol &p,
                  const std::vector<arm_spec> &earlier, const kernel_lookup &lookup) {
  const std::string arm_what = fmt::format("arms[{}]", i);
  if (const node *k = p.schema == 1 ? key_node(item, "options") : nullptr)
    fail(*k, fmt::format("{}.options needs prereg: 2", arm_what));
  std::vector<std::string_view> arm_keys{"id", "kernel", "launch", "repeat"};
  if (p.schema == 2)
    for (const std::string_view k : {"options", "plugin", "name", "python", "function"})
      arm_keys.push_back(k);
  const fields arm(item, arm_what, arm_keys);
  arm_spec a;
  a.id = read_arm_id(arm, earlier);
  const arm_info *info = read_source(arm, item, arm_what, p, lookup, a);
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
  return a;
}

} // namespace

std::vector<arm_spec> read_arms(const fields &top, const protocol &p, const kernel_lookup &lookup) {
  const auto &arm_nodes = as_list(top.required("arms"), "arms", max_arms);
  std::vector<arm_spec> arms;
  for (std::size_t i = 0; i < arm_nodes.size(); ++i)
    arms.push_back(read_arm(arm_nodes[i], i, p, arms, lookup));
  return arms;
}

} // namespace prereg::protocol_detail
