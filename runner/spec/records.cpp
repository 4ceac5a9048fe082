// A cell's two names: as JSON members and as a label in messages.
#include "spec/records.hpp"

#include <fmt/format.h>

namespace prereg {

json to_json(const cell_key &k) {
  return {
      {"arm", k.arm}, {"pass", std::string(to_string(k.pass))}, {"rows", k.rows}, {"cols", k.cols}};
}

std::string cell_label(const cell_key &k) {
  return fmt::format("{} {} {}x{}", k.arm, to_string(k.pass), k.rows, k.cols);
}

} // namespace prereg
