// Loading a protocol's outside arms in a child process (arm_check.hpp).
#include "run/arm_check.hpp"

#include "arms/outside_arm.hpp"
#include "arms/outside_common.hpp"
#include "base/process.hpp"
#include "crypto/keyring.hpp"
#include "prereg/error.hpp"
#include "run/measuring_child.hpp"
#include "run/sandbox.hpp"
#include "spec/outside_file.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <sys/prctl.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace prereg {
namespace fs = std::filesystem;
namespace {

/// A loader's message read through a fault of its own: "the process that loads the arms sent a
/// malformed message: PATH PROBLEM" (exit 1).
class loader_fault final : public json_fault {
public:
  [[noreturn]] void fail(const std::string &path, std::string_view problem) const override {
    throw io_error(fmt::format("the process that loads the arms sent a malformed message: {} {}",
                               path, problem));
  }
};

json_node loader_node(const json &j) {
  static const loader_fault fault;
  return json_node(j, "isolation", fault);
}

void send(int fd, const json &j) {
  if (!write_all(fd, j.dump() + "\n"))
    std::_Exit(1); // the parent is gone
}

/// Why the protocol's device cannot be made here, or "" when it can (or is the CPU).
std::string device_missing(const protocol &p, const device_factory &make_device) {
  if (p.device == "cpu")
    return {};
  try {
    (void)make_device(p.device, 0);
  } catch (const error &e) {
    if (e.code() == exit_code::environment)
      return fmt::format("no usable {} device here: {}", p.device, e.what());
    throw;
  }
  return {};
}

/// One arm loaded: its report as a message, or (its own failure) throws.
json load_one(const protocol &p, const arm_spec &a, const fs::path &dir,
              const std::string &no_device) {
  json msg = {{"arm", a.id}};
  const fs::path file = outside_file(dir, a.file);
  try {
    if (a.source == arm_source::plugin) {
      (void)load_plugin_arm(file, a.entry, p, a.id);
    } else {
      (void)load_python_arm(file, a.entry, p, a.id, no_device);
      msg["loaded"] = python_interpreter();
    }
  } catch (const error &e) {
    if (e.code() != exit_code::environment)
      throw;
    msg["notice"] = e.line();
  }
  return msg;
}

[[noreturn]] void child(const protocol &p, const fs::path &dir, const device_factory &make_device,
                        const loading_paths &walls, const dry_run_request *dry, pid_t prereg,
                        int fd) {
  // Before the arms' code is imported: the walls, and what their probes found, first.
  send(fd, {{"isolation", detail::enter_sandbox(
                              detail::sandbox_paths_for(walls.key, walls.store, {}), {fd}, prereg)
                              .to_json()}});
  detail::forget_key_variable();
  outside::set_crash_channel(fd); // a crash while loading: one error message up
  try {
    const std::string no_device = device_missing(p, make_device);
    if (!no_device.empty())
      send(fd, {{"device", no_device}});
    std::map<std::string, std::string> not_loaded; // the environment's: not called by the dry run
    for (const auto &a : p.arms)
      if (a.outside()) {
        const json msg = load_one(p, a, dir, no_device);
        if (msg.contains("notice"))
          not_loaded[a.id] = msg.value("notice", "");
        send(fd, msg);
      }
    if (dry != nullptr) // the arms' and the reference's first calls (run/dry_run.cpp)
      send(fd,
           {{"dry_run",
             dry_run_here(p, dir, make_device, dry->resolve, no_device, not_loaded).to_json()}});
  } catch (const std::exception &e) {
    send(fd, detail::error_message(e));
  }
  std::_Exit(0);
}

/// One message of the loading child, parsed (a malformed one: exit 1).
json parse_line(const std::string &line) {
  try {
    return json::parse(line);
  } catch (const std::exception &) {
    throw io_error("the process that loads the arms sent a malformed message");
  }
}

} // namespace

arm_load_result load_arms_here(const protocol &p, const fs::path &protocol_dir,
                               const device_factory &make_device, const loading_paths &walls,
                               const dry_run_request *dry) {
  arm_load_result out;
  if (dry == nullptr &&
      std::none_of(p.arms.begin(), p.arms.end(), [](const arm_spec &a) { return a.outside(); }))
    return out;
  pipe_ends up = open_pipe(on_exec::close);
  const pid_t prereg = ::getpid();
  const pid_t pid = fork_child([&] {
    up.read.reset();
    child(p, protocol_dir, make_device, walls, dry, prereg, up.write.get());
  });
  up.write.reset();
  // The arms' code cannot read this process (docs/engine.md).
  const bool not_dumpable = ::prctl(PR_SET_DUMPABLE, 0) == 0;
  const std::string text = read_all(up.read.get());
  const wait_status st = wait_for(pid);
  std::istringstream lines(text);
  std::size_t expected = 0;
  bool dry_done = false;
  for (const auto &a : p.arms)
    expected += a.outside() ? 1 : 0;
  for (std::string line; std::getline(lines, line);) {
    const json msg = parse_line(line);
    if (msg.contains("error"))
      detail::rethrow_error_message(msg);
    if (msg.contains("isolation") && !out.isolation) {
      out.isolation = detail::read_isolation_message(loader_node(msg.at("isolation")));
      detail::finish_isolation(*out.isolation, not_dumpable);
      continue;
    }
    if (msg.contains("device")) {
      out.device_notice = msg.value("device", "");
      continue;
    }
    if (msg.contains("dry_run")) {
      out.dry_run = dry_run_report::from_json(msg.at("dry_run"));
      dry_done = true;
      continue;
    }
    out.arms.push_back({msg.value("arm", ""), msg.value("loaded", ""), msg.value("notice", "")});
  }
  if (out.arms.size() != expected || (dry != nullptr && !dry_done))
    throw io_error(fmt::format("the process that loads the arms (pid {}) {} before it had loaded "
                               "them all",
                               pid,
                               st.signalled() ? fmt::format("was killed by signal {}", st.signal())
                                              : std::string("ended")));
  return out;
}

} // namespace prereg
