// Loading a protocol's outside arms in a child process (arm_check.hpp).
#include "run/arm_check.hpp"

#include "arms/outside_arm.hpp"
#include "arms/outside_common.hpp"
#include "base/process.hpp"
#include "crypto/keyring.hpp"
#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "run/loader_channel.hpp"
#include "run/measuring_child.hpp"
#include "run/sandbox.hpp"
#include "run/scratch.hpp"
#include "spec/outside_file.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <sys/prctl.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>

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
  if (!detail::send_all(fd, j.dump() + "\n"))
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
  if (const std::string why = detail::scratch_refusal(); !why.empty()) {
    send(fd, detail::error_message(io_error(why)));
    std::_Exit(0);
  }
  outside::set_crash_channel(fd); // a crash while loading: one error message up
  try {
    const std::string no_device = device_missing(p, make_device);
    if (!no_device.empty())
      send(fd, {{"device", no_device}});
    std::map<std::string, std::string> not_loaded; // the environment's: not called by the dry run
    for (const auto &a : p.arms)
      if (a.outside()) {
        const watched_call watch(static_cast<int>(&a - p.arms.data()), -1,
                                 static_cast<int>(call_phase::load));
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

/// The line of a call of outside code that did not return while loading or in the dry run.
std::string stuck_line(const protocol &p, const watched_call_state &call) {
  const auto phase = static_cast<call_phase>(call.what);
  const bool has_arm = call.who >= 0 && static_cast<std::size_t>(call.who) < p.arms.size();
  const std::string what = has_arm ? fmt::format("a {} of arm {}", to_string(phase),
                                                 p.arms[static_cast<std::size_t>(call.who)].id)
                           : phase == call_phase::reference
                               ? std::string("the operation's reference")
                               : fmt::format("a {} of the dry run", to_string(phase));
  return fmt::format("the watchdog: {} did not return within {:g} s (measurement.call_timeout_s); "
                     "the process that loads the arms was killed",
                     what, p.measurement.call_timeout());
}

} // namespace

arm_load_result load_arms_here(const protocol &p, const fs::path &protocol_dir,
                               const device_factory &make_device, const loading_paths &walls,
                               const dry_run_request *dry) {
  arm_load_result out;
  if (dry == nullptr &&
      std::none_of(p.arms.begin(), p.arms.end(), [](const arm_spec &a) { return a.outside(); }))
    return out;
  const pid_t prereg = ::getpid();
  detail::loader_channel loader(
      p, [&](int fd) { child(p, protocol_dir, make_device, walls, dry, prereg, fd); });
  const pid_t pid = loader.pid();
  // The arms' code cannot read this process (docs/engine.md).
  const bool not_dumpable = ::prctl(PR_SET_DUMPABLE, 0) == 0;
  const std::vector<std::string> lines =
      loader.read_all_lines([&](const watched_call_state &call) { return stuck_line(p, call); });
  const wait_status st = loader.status();
  std::size_t expected = 0;
  bool dry_done = false;
  for (const auto &a : p.arms)
    expected += a.outside() ? 1 : 0;
  for (const std::string &line : lines) {
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
