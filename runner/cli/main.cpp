// prereg's entry point: parse the command line, run one command, map errors to exit codes.
#include "cli/commands.hpp"

#include "base/process.hpp"
#include "prereg/error.hpp"

#include <unistd.h>

#include <csignal>
#include <exception>
#include <string>

namespace {

/// The one error line, best effort: stderr may be a full disk or a closed pipe, and failing
/// to say why must not turn exit 1 into an abort (docs/hardening.md, "Faults").
int fail_with(const std::string &line, int code) noexcept {
  try {
    (void)prereg::write_best_effort(STDERR_FILENO, "prereg: error: " + line + "\n");
  } catch (...) {
  }
  return code;
}

} // namespace

int main(int argc, char **argv) {
  // A closed pipe on stdout or stderr is a failed write (EPIPE, exit 1), not a death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return prereg::cli::run_command_line(argc, argv);
  } catch (const prereg::error &e) {
    return fail_with(prereg::escape_control(e.line()), static_cast<int>(e.code()));
  } catch (const std::exception &e) {
    return fail_with("internal: " + prereg::escape_control(e.what()), 1);
  } catch (...) {
    return fail_with("internal: an unknown exception", 1);
  }
}
