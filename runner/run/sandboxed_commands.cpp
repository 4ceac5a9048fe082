// System commands in the measuring process's sandbox (sandboxed_commands.hpp).
#include "run/sandboxed_commands.hpp"

#include "base/fs.hpp"
#include "base/process.hpp"
#include "run/sandbox.hpp"
#include "run/scratch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace prereg {
namespace fs = std::filesystem;
namespace {

/// One command, forked and exec'd; its exit status (128 + N for a signal, 127: no exec).
int run_one(const sandbox_command &c) {
  if (c.argv.empty())
    return 127;
  const pid_t pid = fork_child([&] {
    if (!c.stderr_file.empty()) {
      const int e = ::open(c.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (e < 0 || ::dup2(e, 2) < 0)
        std::_Exit(127);
    }
    std::vector<char *> args;
    for (const auto &a : c.argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::_Exit(127);
  });
  const wait_status s = wait_for(pid);
  return s.exited() ? s.exit_code() : s.signalled() ? 128 + s.signal() : 127;
}

/// Where a scratch file named under /tmp is made: there when the sandbox's scratch space covers
/// /tmp, else in the first folder it covers (with something mounted below /tmp, as under the
/// grading's walls when the store lies in /tmp, the sandbox leaves /tmp read-only: scratch.hpp).
fs::path placed(const fs::path &p) {
  const auto &folders = detail::scratch_of_this_process().folders;
  if (folders.empty() || std::find(folders.begin(), folders.end(), "/tmp") != folders.end() ||
      p.parent_path() != "/tmp")
    return p;
  return fs::path(folders.front()) / p.filename();
}

/// The commands with each scratch file (a path of `fetch`) placed.
std::vector<sandbox_command> placed_commands(const sandbox_commands_request &r) {
  std::vector<sandbox_command> out = r.commands;
  const auto scratch_file = [&](const fs::path &p) {
    return std::find(r.fetch.begin(), r.fetch.end(), p) != r.fetch.end();
  };
  for (auto &c : out) {
    for (auto &a : c.argv)
      if (scratch_file(a))
        a = placed(a).string();
    if (scratch_file(c.stderr_file))
      c.stderr_file = placed(c.stderr_file);
  }
  return out;
}

} // namespace

void run_commands_in_sandbox(const sandbox_commands_request &r, int fd, int prereg_pid) {
  const detail::isolation_facts facts =
      detail::enter_sandbox(detail::sandbox_paths_for(r.key, r.store, {}), {fd}, prereg_pid);
  detail::forget_key_variable();
  int status = 0;
  for (const auto &c : placed_commands(r))
    if ((status = run_one(c)) != 0)
      break;
  std::string out = json{{"isolation", facts.to_json()}, {"status", status}}.dump() + "\n";
  for (const auto &f : r.fetch) {
    std::error_code ec;
    if (status != 0 || !fs::is_regular_file(placed(f), ec))
      continue;
    try { // sent under the name the caller asked for
      const std::string bytes = read_file(placed(f), std::uintmax_t{256} << 20);
      out += json{{"file", f.string()}, {"bytes", bytes.size()}}.dump() + "\n" + bytes;
    } catch (const std::exception &) {
      continue;
    }
  }
  (void)write_all(fd, out);
  std::_Exit(status);
}

sandbox_commands_result read_sandbox_commands(const std::string &message) {
  sandbox_commands_result r;
  std::size_t at = message.find('\n');
  if (at == std::string::npos)
    return r;
  try {
    r.head = json::parse(message.substr(0, at));
    ++at;
    while (at < message.size()) {
      const std::size_t nl = message.find('\n', at);
      if (nl == std::string::npos)
        break;
      const json h = json::parse(message.substr(at, nl - at));
      const std::size_t n = h.at("bytes").get<std::size_t>();
      if (nl + 1 + n > message.size())
        break;
      r.files.emplace_back(h.at("file").get<std::string>(), message.substr(nl + 1, n));
      at = nl + 1 + n;
    }
  } catch (const std::exception &) {
    r.head = nullptr;
    r.files.clear();
  }
  return r;
}

} // namespace prereg
