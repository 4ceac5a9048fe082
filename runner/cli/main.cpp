// prereg's entry point: parse the command line, run one command, map errors to exit codes.
#include "cli/commands.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>

int main(int argc, char **argv) {
  try {
    return prereg::cli::run_command_line(argc, argv);
  } catch (const prereg::error &e) {
    fmt::print(stderr, "prereg: error: {}\n", prereg::escape_control(e.line()));
    return static_cast<int>(e.code());
  } catch (const std::exception &e) {
    fmt::print(stderr, "prereg: error: internal: {}\n", prereg::escape_control(e.what()));
    return 1;
  }
}
