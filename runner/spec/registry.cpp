// The arm registry: the descriptors generated from kernels/*/*.arm, parsed once.
#include "spec/registry.hpp"

#include "prereg/arm_table.hpp"
#include "prereg/error.hpp"
#include "spec/operation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace prereg {
namespace {

std::vector<std::string> words(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

std::int64_t integer(std::string_view text, std::string_view what) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw invalid_input(fmt::format("{}: '{}' is not an integer", what, text));
  return v;
}

arm_info parse_record(const generated::arm_record &r) {
  const std::string where = fmt::format("arm descriptor {}", r.descriptor);
  arm_info a;
  a.name = r.name;
  a.device = r.device;
  a.op = r.operation;
  a.summary = r.summary;
  a.abi = r.abi;
  a.descriptor = r.descriptor;
  a.source_sha256 = r.sha256;
  a.sources = words(r.sources);
  if (find_operation(a.op) == nullptr)
    throw std::logic_error(fmt::format("{}: unknown operation '{}'", where, a.op));
  for (const auto &w : words(r.dtypes)) {
    if (w == "fp32")
      a.dtypes.push_back(dtype::fp32);
    else if (w == "fp16")
      a.dtypes.push_back(dtype::fp16);
    else if (w == "bf16")
      a.dtypes.push_back(dtype::bf16);
    else
      throw std::logic_error(fmt::format("{}: unknown dtype '{}'", where, w));
  }
  for (const auto &w : words(r.passes)) {
    if (w == "fwd")
      a.passes.push_back(pass_kind::fwd);
    else if (w == "fwd+bwd")
      a.passes.push_back(pass_kind::fwd_bwd);
    else
      throw std::logic_error(fmt::format("{}: unknown pass '{}'", where, w));
  }
  a.has_backward =
      std::find(a.passes.begin(), a.passes.end(), pass_kind::fwd_bwd) != a.passes.end();
  for (const auto &w : words(r.allocates)) {
    if (w == "fwd")
      a.allocates_fwd = true;
    else if (w == "bwd")
      a.allocates_bwd = true;
    else if (w != "none")
      throw std::logic_error(fmt::format("{}: allocates takes none|fwd|bwd, got '{}'", where, w));
  }
  a.max_cols = integer(r.max_cols, where + " max_cols");
  a.cols_multiple = integer(r.cols_multiple, where + " cols_multiple");
  if (a.max_cols < 1 || a.cols_multiple < 1)
    throw std::logic_error(fmt::format("{}: max_cols and cols_multiple must be >= 1", where));
  try {
    a.scratch_fwd = parse_scratch(r.scratch_fwd, where + " scratch_fwd");
    a.scratch_bwd = parse_scratch(r.scratch_bwd, where + " scratch_bwd");
  } catch (const error &e) {
    throw std::logic_error(e.what());
  }
  std::istringstream opts{std::string(r.options)};
  for (std::string item; std::getline(opts, item, ',');) {
    const auto eq = item.find('=');
    arm_option_decl o;
    o.name = item.substr(0, eq);
    o.default_value = std::stod(item.substr(eq + 1));
    a.options.push_back(std::move(o));
  }
  std::istringstream docs{std::string(r.option_docs)};
  for (std::string item; std::getline(docs, item, '\n');) {
    const auto eq = item.find('=');
    for (auto &o : a.options)
      if (o.name == item.substr(0, eq))
        o.doc = item.substr(eq + 1);
  }
  return a;
}

std::vector<arm_info> build_registry() {
  std::vector<arm_info> arms;
  for (const auto *r = generated::arm_records; r->name != nullptr; ++r)
    arms.push_back(parse_record(*r));
  return arms;
}

} // namespace

std::vector<scratch_term> parse_scratch(std::string_view text, std::string_view what) {
  std::vector<scratch_term> terms;
  std::string s;
  for (const char c : text)
    if (c != ' ' && c != '\t')
      s.push_back(c);
  if (s.empty())
    throw invalid_input(fmt::format("{}: empty scratch estimate", what));
  std::istringstream sum(s);
  for (std::string term; std::getline(sum, term, '+');) {
    scratch_term t;
    t.coefficient = 1;
    std::istringstream product(term);
    bool any = false;
    for (std::string f; std::getline(product, f, '*');) {
      any = true;
      if (f == "rows" && !t.rows)
        t.rows = true;
      else if (f == "cols" && !t.cols)
        t.cols = true;
      else if (f == "sms" && !t.sms)
        t.sms = true;
      else {
        const auto v = static_cast<std::uint64_t>(integer(f, what));
        if (v > std::numeric_limits<std::uint32_t>::max())
          throw invalid_input(fmt::format("{}: coefficient {} is too large", what, f));
        t.coefficient *= v;
      }
    }
    if (!any)
      throw invalid_input(fmt::format("{}: an empty term in '{}'", what, text));
    terms.push_back(t);
  }
  return terms;
}

std::span<const arm_info> all_arms() {
  static const std::vector<arm_info> arms = build_registry();
  return arms;
}

const arm_info *find_arm(std::string_view device, std::string_view name) {
  for (const auto &a : all_arms())
    if (a.device == device && a.name == name)
      return &a;
  return nullptr;
}

std::optional<std::string> cannot_run(const arm_info &arm, pass_kind pass, std::int64_t rows,
                                      std::int64_t cols, dtype type) {
  if (std::find(arm.passes.begin(), arm.passes.end(), pass) == arm.passes.end())
    return pass == pass_kind::fwd_bwd ? fmt::format("{} has no backward pass", arm.name)
                                      : fmt::format("{} has no {} pass", arm.name, to_string(pass));
  if (std::find(arm.dtypes.begin(), arm.dtypes.end(), type) == arm.dtypes.end())
    return fmt::format("{} ({}) does not support dtype {}", arm.name, arm.device, to_string(type));
  if (rows < 1)
    return fmt::format("rows must be at least 1, got {}", rows);
  if (cols < 1 || cols > arm.max_cols)
    return fmt::format("{} ({}) takes cols from 1 to {}, got {}", arm.name, arm.device,
                       arm.max_cols, cols);
  if (cols % arm.cols_multiple != 0)
    return fmt::format("{} ({}) needs cols to be a multiple of {}, got {}", arm.name, arm.device,
                       arm.cols_multiple, cols);
  return std::nullopt;
}

std::uint64_t scratch_bytes(const arm_info &arm, pass_kind pass, std::int64_t rows,
                            std::int64_t cols, std::int64_t sms) {
  const auto eval = [&](const std::vector<scratch_term> &terms) {
    long double total = 0; // an estimate: saturate rather than overflow
    for (const auto &t : terms) {
      long double v = static_cast<long double>(t.coefficient);
      if (t.rows)
        v *= static_cast<long double>(rows);
      if (t.cols)
        v *= static_cast<long double>(cols);
      if (t.sms)
        v *= static_cast<long double>(sms);
      total += v;
    }
    const auto cap = static_cast<long double>(std::numeric_limits<std::uint64_t>::max());
    return total >= cap ? std::numeric_limits<std::uint64_t>::max()
                        : static_cast<std::uint64_t>(total);
  };
  const std::uint64_t fwd = eval(arm.scratch_fwd);
  return pass == pass_kind::fwd_bwd ? std::max(fwd, eval(arm.scratch_bwd)) : fwd;
}

} // namespace prereg
