// The held-out secret: sealing a declaration, reading a sealed secret, its commitment, and the
// grading's axes it extends (docs/grading.md, "Held-out shapes").
#include "grade/heldout.hpp"

#include "base/fs.hpp"
#include "base/json_reader.hpp"
#include "base/yaml_strict.hpp"
#include "crypto/crypto.hpp"
#include "prereg/error.hpp"
#include "spec/protocol_read.hpp"

#include <fmt/format.h>

#include <sys/random.h>

#include <algorithm>
#include <cerrno>

namespace prereg::grade {
namespace {

using strict_yaml::node;

constexpr std::int64_t max_extent = std::int64_t{1} << 31;

/// A failure of the secret's JSON: exit 2 at `where`, naming the member.
class secret_fault : public json_fault {
public:
  explicit secret_fault(std::string where) : m_where(std::move(where)) {}
  [[noreturn]] void fail(const std::string &path, std::string_view problem) const override {
    throw invalid_input(fmt::format("held-out secret: {} {}", path.empty() ? "it" : path, problem),
                        m_where);
  }

private:
  std::string m_where;
};

bool lower_hex(const std::string &s, std::size_t digits) {
  return s.size() == digits && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

/// One axis' held-out extents: distinct integers 1 .. 2^31.
std::vector<std::int64_t> extents_of(const json_node &n) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < n.array_size(); ++i) {
    const std::int64_t v = n.at(i).integer();
    if (v < 1 || v > max_extent)
      n.at(i).fail(fmt::format("is {}, not an extent from 1 to 2^31", v));
    if (std::find(out.begin(), out.end(), v) != out.end())
      n.at(i).fail(fmt::format("lists {} twice", v));
    out.push_back(v);
  }
  if (out.empty())
    n.fail("is empty");
  return out;
}

} // namespace

json heldout_secret::to_json() const {
  json a = json::object();
  for (const auto &[name, extents] : axes)
    a[name] = extents;
  return {{"prereg_heldout", 1}, {"axes", a}, {"salt", salt}, {"seed", seed}};
}

std::string random_hex(std::size_t n) {
  std::string bytes(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(bytes.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      throw io_error("cannot read the system's random source (getrandom)");
    got += static_cast<std::size_t>(r);
  }
  std::string out;
  for (unsigned char c : bytes)
    out += fmt::format("{:02x}", c);
  return out;
}

heldout_secret seal_heldout(std::string_view yaml, const std::string &file) {
  using namespace protocol_detail;
  const node root = strict_yaml::parse(yaml, file);
  const fields top(root, "the held-out declaration", {"axes"});
  const node &axes = top.required("axes");
  if (axes.k != node::kind::mapping || axes.entries.empty())
    fail(axes, fmt::format("axes must be a mapping of axis names to lists of extents, got {}",
                           strict_yaml::describe(axes)));
  heldout_secret s;
  for (const auto &[key, value] : axes.entries) {
    std::vector<std::int64_t> extents;
    for (const node &item : as_list(value, "axes." + key.value, strict_yaml::max_list_items)) {
      const auto v = as_int(item, "axes." + key.value, 1, max_extent);
      if (std::find(extents.begin(), extents.end(), v) != extents.end())
        fail(item, fmt::format("axes.{} lists {} twice", key.value, v));
      extents.push_back(v);
    }
    s.axes.emplace_back(key.value, std::move(extents));
  }
  std::sort(s.axes.begin(), s.axes.end());
  s.salt = random_hex(32);
  s.seed = random_hex(8);
  return s;
}

heldout_secret secret_from_json(const json &j, const std::string &where) {
  const secret_fault fault(where);
  const json_node root(j, "", fault);
  root.only({"prereg_heldout", "axes", "salt", "seed"}, "is not a member of a held-out secret");
  if (root["prereg_heldout"].integer() != 1)
    root["prereg_heldout"].fail("is not 1 (this build reads version 1)");
  heldout_secret s;
  const json_node axes = root["axes"].object();
  if (axes.value().empty())
    axes.fail("is empty");
  for (const auto &[name, value] : axes.value().items())
    s.axes.emplace_back(name, extents_of(json_node(value, axes.child_path(name), fault)));
  s.salt = root["salt"].str();
  if (!lower_hex(s.salt, 64))
    root["salt"].fail("is not 64 lowercase hex digits");
  s.seed = root["seed"].str();
  if (!lower_hex(s.seed, 16))
    root["seed"].fail("is not 16 lowercase hex digits");
  return s;
}

heldout_secret read_secret(const std::filesystem::path &file) {
  return secret_from_json(parse_json_strict(read_file(file, 1 << 20), file.string()),
                          file.string());
}

std::string commitment_of(const heldout_secret &s) {
  return sha256_hex(canonical_json(s.to_json()));
}

json grading_axes(const protocol &task, const heldout_secret *secret) {
  const std::vector<std::string> names = axis_names(task);
  json out = json::object();
  for (std::size_t i = 0; i < names.size(); ++i)
    out[names[i]] = axis_extents(task, i);
  if (secret == nullptr)
    return out;
  for (const auto &[name, extents] : secret->axes) {
    if (!out.contains(name))
      throw invalid_input(fmt::format("the held-out secret extends axis '{}', which the task's "
                                      "operation does not have (axes: {})",
                                      name, protocol_detail::joined(names)));
    for (const std::int64_t v : extents) {
      auto &list = out[name];
      if (std::find(list.begin(), list.end(), json(v)) != list.end())
        throw invalid_input(fmt::format(
            "the held-out secret's axes.{} lists {}, which is already one of the task's", name, v));
      list.push_back(v);
    }
  }
  return out;
}

} // namespace prereg::grade
