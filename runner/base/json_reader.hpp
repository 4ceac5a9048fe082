// The one strict reader of parsed JSON: a value at a named path, with typed accessors that fail
// naming the path. What a failure is (an invalid_input, an audit FAIL, an I/O error of the
// measuring process) is the caller's: it passes a json_fault, which gets the path and the
// problem ("is missing", "is not a string", ...) and throws. docs/layout.md.
#pragma once

#include "base/json.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// How a reader's failure is reported: `fail` throws (it must not return).
class json_fault {
public:
  virtual ~json_fault() = default;
  /// `path` is the dotted path of the value ("" for the root), `problem` what is wrong with it.
  [[noreturn]] virtual void fail(const std::string &path, std::string_view problem) const = 0;
};

/// A JSON value at a path; the value and the fault must outlive the node.
class json_node {
public:
  json_node(const json &j, std::string path, const json_fault &fault)
      : m_j(&j), m_path(std::move(path)), m_fault(&fault) {}

  [[nodiscard]] const json &value() const { return *m_j; }
  [[nodiscard]] const std::string &path() const { return m_path; }
  /// Reports `problem` at this node's path through its fault (never returns).
  [[noreturn]] void fail(std::string_view problem) const;

  /// "a.b" for member b of the node at "a"; "b" at the root.
  [[nodiscard]] std::string child_path(std::string_view key) const;
  /// The member `key` of this object; "<path>.<key> is missing" when absent.
  [[nodiscard]] json_node operator[](std::string_view key) const;
  [[nodiscard]] bool has(std::string_view key) const;
  /// Element i of this array ("<path>[i]"); i must be below array_size().
  [[nodiscard]] json_node at(std::size_t i) const;

  const json_node &object() const;
  /// This object, which must hold only `allowed` keys; another key fails at its own path with
  /// `problem` (e.g. "is not a member of the report format").
  const json_node &only(std::initializer_list<std::string_view> allowed,
                        std::string_view problem) const;
  [[nodiscard]] std::size_t array_size() const;
  [[nodiscard]] std::string str() const;
  [[nodiscard]] bool boolean() const;
  [[nodiscard]] double number() const;
  /// A number, or NaN for null (reports write non-finite numbers as null).
  [[nodiscard]] double number_or_null() const;
  /// An integer; a float with an integral value below 9.2e18 in magnitude counts.
  [[nodiscard]] std::int64_t integer() const;
  /// A non-negative integer; a float with an integral value counts.
  [[nodiscard]] std::uint64_t count() const;
  /// An array of finite numbers.
  [[nodiscard]] std::vector<double> numbers() const;
  [[nodiscard]] std::vector<std::string> strings() const;

private:
  [[noreturn]] void fail_at(const std::string &path, std::string_view problem) const;

  const json *m_j;
  std::string m_path;
  const json_fault *m_fault;
};

} // namespace prereg
