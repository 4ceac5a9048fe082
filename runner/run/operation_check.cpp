// Loading an operation file in a child process (operation_check.hpp).
#include "run/operation_check.hpp"

#include "arms/outside_common.hpp"
#include "arms/python_operation.hpp"
#include "base/process.hpp"
#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "run/loader_channel.hpp"
#include "run/measuring_child.hpp"
#include "run/sandbox.hpp"
#include "run/scratch.hpp"
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
  // Before the file is imported: the walls, and what their probes found, first (the first
  // message names the channel's sender: nothing the file starts can take its place).
  const json isolation =
      detail::enter_sandbox(detail::sandbox_paths_for(walls.key, walls.store, {}), {fd}, prereg)
          .to_json();
  if (!detail::send_all(fd, json{{"isolation", isolation}}.dump() + "\n"))
    std::_Exit(1);
  detail::forget_key_variable();
  outside::set_crash_channel(fd); // a crash while importing: one error message up
  json msg;
  if (const std::string why = detail::scratch_refusal(); !why.empty()) {
    (void)detail::send_all(fd, detail::error_message(io_error(why)).dump() + "\n");
    std::_Exit(0);
  }
  try {
    const watched_call watch(-1, -1, static_cast<int>(call_phase::load));
    msg = {{"descriptor", describe_python_operation(file, name)}};
  } catch (const std::exception &e) {
    msg = detail::error_message(e);
  }
  (void)detail::send_all(fd, msg.dump() + "\n");
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
  const pid_t prereg = ::getpid();
  detail::loader_channel loader(p, [&](int fd) { child(file, p.op, walls, prereg, fd); });
  // The file's code cannot read this process (docs/engine.md).
  const bool not_dumpable = ::prctl(PR_SET_DUMPABLE, 0) == 0;
  const std::vector<std::string> lines = loader.read_all_lines([&](const watched_call_state &) {
    return fmt::format("operation {}: the watchdog: importing its file {} did not return within "
                       "{:g} s (measurement.call_timeout_s); the process that read it was killed",
                       p.op, file.filename().string(), p.measurement.call_timeout());
  });
  const wait_status &st = loader.status();
  json first, msg;
  try {
    if (lines.size() != 2)
      throw std::runtime_error("not two lines");
    first = json::parse(lines[0]);
    msg = json::parse(lines[1]);
    if (!first.is_object() || !first.contains("isolation") || !msg.is_object())
      throw std::runtime_error("not the messages expected");
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
      detail::read_isolation_message(json_node(first.at("isolation"), "isolation", fault));
  detail::finish_isolation(isolation, not_dumpable);
  return {register_outside_operation(
              operation_from_json(msg.at("descriptor"), file.string(), file.string())),
          std::move(isolation)};
}

} // namespace prereg
