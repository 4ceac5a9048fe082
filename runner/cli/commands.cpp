// The command table: {name, summary, function}; help and suggestions come from it.
#include "commands.hpp"

#include "prereg/build_info.hpp"

#include <fmt/format.h>

namespace prereg::cli {

int run_command_line(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fmt::print("prereg {}\n", build_info::version);
  return 0;
}

} // namespace prereg::cli
