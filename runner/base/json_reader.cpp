#include "base/json_reader.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace prereg {

void json_node::fail(std::string_view problem) const { fail_at(m_path, problem); }

void json_node::fail_at(const std::string &path, std::string_view problem) const {
  m_fault->fail(path, problem);
  std::abort(); // a json_fault throws; reaching here is a bug in the fault
}

std::string json_node::child_path(std::string_view key) const {
  return m_path.empty() ? std::string(key) : m_path + "." + std::string(key);
}

json_node json_node::operator[](std::string_view key) const {
  object();
  const auto it = m_j->find(std::string(key));
  if (it == m_j->end())
    fail_at(child_path(key), "is missing");
  return {*it, child_path(key), *m_fault};
}

bool json_node::has(std::string_view key) const {
  return m_j->is_object() && m_j->contains(std::string(key));
}

json_node json_node::at(std::size_t i) const {
  return {(*m_j)[i], fmt::format("{}[{}]", m_path, i), *m_fault};
}

const json_node &json_node::object() const {
  if (!m_j->is_object())
    fail("is not an object");
  return *this;
}

const json_node &json_node::only(std::initializer_list<std::string_view> allowed,
                                 std::string_view problem) const {
  object();
  for (const auto &[k, v] : m_j->items())
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      fail_at(child_path(message_excerpt(k)), problem);
  return *this;
}

std::size_t json_node::array_size() const {
  if (!m_j->is_array())
    fail("is not an array");
  return m_j->size();
}

std::string json_node::str() const {
  if (!m_j->is_string())
    fail("is not a string");
  return m_j->get<std::string>();
}

bool json_node::boolean() const {
  if (!m_j->is_boolean())
    fail("is not a boolean");
  return m_j->get<bool>();
}

double json_node::number() const {
  if (!m_j->is_number())
    fail("is not a number");
  return m_j->get<double>();
}

double json_node::number_or_null() const {
  if (m_j->is_null())
    return std::numeric_limits<double>::quiet_NaN();
  if (!m_j->is_number())
    fail("is not a number or null");
  return m_j->get<double>();
}

std::int64_t json_node::integer() const {
  if (m_j->is_number_unsigned() && m_j->get<std::uint64_t>() <= 9'000'000'000'000'000'000ULL)
    return static_cast<std::int64_t>(m_j->get<std::uint64_t>());
  if (m_j->is_number_integer() && !m_j->is_number_unsigned())
    return m_j->get<std::int64_t>();
  if (m_j->is_number_float()) {
    const double d = m_j->get<double>();
    if (std::nearbyint(d) == d && std::fabs(d) < 9.2e18)
      return static_cast<std::int64_t>(d);
  }
  fail("is not an integer");
}

std::uint64_t json_node::count() const {
  if (m_j->is_number_unsigned())
    return m_j->get<std::uint64_t>();
  if (m_j->is_number_integer() && m_j->get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(m_j->get<std::int64_t>());
  if (m_j->is_number_float()) {
    const double d = m_j->get<double>();
    if (d >= 0 && std::nearbyint(d) == d && d < 1.8e19)
      return static_cast<std::uint64_t>(d);
  }
  fail("is not a non-negative integer");
}

std::vector<double> json_node::numbers() const {
  std::vector<double> out(array_size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = at(i).number();
    if (!std::isfinite(out[i]))
      at(i).fail("is not finite");
  }
  return out;
}

std::vector<std::string> json_node::strings() const {
  std::vector<std::string> out(array_size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = at(i).str();
  return out;
}

} // namespace prereg
