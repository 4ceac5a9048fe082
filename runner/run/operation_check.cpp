// Loading an operation file in a child process (operation_check.hpp).
#include "run/operation_check.hpp"

#include "arms/outside_common.hpp"
#include "arms/python_operation.hpp"
#include "base/process.hpp"
#include "prereg/error.hpp"
#include "run/measuring_child.hpp"
#include "run/sandbox.hpp"
#include "spec/operation_file.hpp"
#include "spec/outside_file.hpp"

#include <fmt/format.h>

#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

namespace prereg {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void child(const fs::path &file, const std::string &name, const loading_paths &walls,
                        pid_t prereg, int fd) {
  // Before the file is imported: the walls, and what their probes found, first.
  const json isolation =
      detail::enter_sandbox(detail::sandbox_paths_for(walls.key, walls.store, {}), {fd}, prereg)
          .to_json();
  detail::forget_key_variable();
  outside::set_crash_channel(fd); // a crash while importing: one error message up
  json msg;
  try {
    msg = {{"descriptor", describe_python_operation(file, name)}};
  } catch (const std::exception &e) {
    msg = detail::error_message(e);
  }
  msg["isolation"] = isolation;
  (void)write_all(fd, msg.dump() + "\n");
  std::_Exit(0);
}

/// The isolation the child reports, read strictly ("the process that read the operation file
/// sent a malformed message: PATH PROBLEM", exit 1).
class reader_fault final : public json_fault {
public:
  [[noreturn]] void fail(const std::string &path, std::string_view problem) const override {
    throw io_error(fmt::format(
        "the process that read the operation file sent a malformed message: {} {}", path, problem));
  }
};

} // namespace

operation_load load_operation_here(const protocol &p, const fs::path &protocol_dir,
                                   const loading_paths &walls) {
  const fs::path file = outside_file(protocol_dir, p.op_file);
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw invalid_input(
        fmt::format("operation {}: its file {} does not exist", p.op, file.filename().string()),
        file.string());
  pipe_ends up = open_pipe(on_exec::close);
  const pid_t prereg = ::getpid();
  const pid_t pid = fork_child([&] {
    up.read.reset();
    child(file, p.op, walls, prereg, up.write.get());
  });
  up.write.reset();
  // The file's code cannot read this process (docs/engine.md).
  const bool not_dumpable = ::prctl(PR_SET_DUMPABLE, 0) == 0;
  const std::string text = read_all(up.read.get());
  const wait_status st = wait_for(pid);
  json msg;
  try {
    msg = json::parse(text);
  } catch (const std::exception &) {
    throw invalid_input(
        fmt::format("operation {}: the process that read the operation file {}", p.op,
                    st.signalled() ? fmt::format("was killed by signal {}", st.signal())
                                   : std::string("sent a malformed message")),
        file.string());
  }
  if (msg.contains("error"))
    detail::rethrow_error_message(msg);
  static const reader_fault fault;
  report_isolation isolation =
      detail::read_isolation_message(json_node(msg.at("isolation"), "isolation", fault));
  detail::finish_isolation(isolation, not_dumpable);
  return {register_outside_operation(
              operation_from_json(msg.at("descriptor"), file.string(), file.string())),
          std::move(isolation)};
}

} // namespace prereg
