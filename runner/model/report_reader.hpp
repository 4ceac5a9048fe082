// The report model's strict reader (internal): a report's JSON value at a path, whose every
// failure is an invalid_input naming the path (base/json_reader.hpp).
#pragma once

#include "base/json_reader.hpp"
#include "model/report_model.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace prereg::model_detail {

/// A report's reading failure: invalid_input naming the path ("report" for the root).
class report_fault final : public json_fault {
public:
  explicit report_fault(const std::string &where) : m_where(where) {}
  [[noreturn]] void fail(const std::string &path, std::string_view problem) const override;

private:
  const std::string &m_where;
};

/// A JSON value at a path of the report, read strictly.
class node : public json_node {
public:
  node(const json_node &n) : json_node(n) {} // NOLINT: every child of a node is a node
  node(const json &j, std::string path, const report_fault &fault)
      : json_node(j, std::move(path), fault) {}

  [[nodiscard]] node operator[](std::string_view key) const { return json_node::operator[](key); }
  [[nodiscard]] node at(std::size_t i) const { return json_node::at(i); }
  const node &object() const {
    json_node::object();
    return *this;
  }
  /// This object, which must hold only `allowed` keys.
  const node &only(std::initializer_list<std::string_view> allowed) const {
    json_node::only(allowed, "is not a member of the report format");
    return *this;
  }
  /// only() over the keys of a list made at compile time (e.g. a schema version's members).
  template <std::size_t N>
  const node &only_of(const std::array<std::string_view, N> &allowed) const {
    return [&]<std::size_t... I>(std::index_sequence<I...>)->const node & {
      return only({allowed[I]...});
    }
    (std::make_index_sequence<N>{});
  }
  /// "fwd" | "fwd+bwd".
  [[nodiscard]] pass_kind pass() const;
};

/// The keys of `a`, then those of `b`: a later version's members.
template <std::size_t A, std::size_t B>
constexpr std::array<std::string_view, A + B> joined(const std::array<std::string_view, A> &a,
                                                     const std::array<std::string_view, B> &b) {
  std::array<std::string_view, A + B> out{};
  std::copy(a.begin(), a.end(), out.begin());
  std::copy(b.begin(), b.end(), out.begin() + A);
  return out;
}

/// {arm, pass, rows, cols} of the object at `n`.
[[nodiscard]] cell_key read_key(const node &n);

/// One cells[] entry of a report of schema `version` (report_cell_read.cpp).
[[nodiscard]] report_cell read_cell(const node &n, int version);

} // namespace prereg::model_detail
