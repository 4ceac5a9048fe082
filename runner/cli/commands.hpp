// The command table of the CLI.
#pragma once

namespace prereg::cli {

/// Parses argv, dispatches to the command, returns the process exit code.
int run_command_line(int argc, char **argv);

} // namespace prereg::cli
