// Building a C source submission: the arm ABI's header written beside the output, the compiler
// run in the measuring process's sandbox inside the grading's walls, the library and the list
// of files it read brought back and checked (compile.hpp).
#include "grade/compile.hpp"

#include "base/fs.hpp"
#include "prereg/arm_abi_text.hpp"
#include "prereg/error.hpp"
#include "run/parent_bound.hpp"
#include "run/sandboxed_commands.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

// In the sandbox's private scratch (its /tmp, a tmpfs that vanishes with it).
const fs::path scratch_library = "/tmp/prereg-libsubmission.so";
const fs::path scratch_deps = "/tmp/prereg-submission.d";
const fs::path scratch_search = "/tmp/prereg-search.log";

/// The compiler: $PREREG_CC, else the first `cc` on PATH (execv needs a path).
std::string compiler() {
  if (const char *cc = std::getenv("PREREG_CC"); cc != nullptr && *cc != '\0')
    return cc;
  if (const char *path = std::getenv("PATH"); path != nullptr) {
    std::string p = path;
    std::size_t start = 0;
    while (start <= p.size()) {
      const std::size_t end = p.find(':', start);
      const std::string dir = p.substr(start, end == std::string::npos ? end : end - start);
      const fs::path cand = fs::path(dir.empty() ? "." : dir) / "cc";
      if (::access(cand.c_str(), X_OK) == 0)
        return cand.string();
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
  return "/usr/bin/cc";
}

/// The compiler's system include folders from its `-v` output (the lines between "search
/// starts here:" and "End of search list.").
std::vector<fs::path> search_dirs(const std::string &log) {
  std::vector<fs::path> out;
  std::istringstream in(log);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.find("search starts here:") != std::string::npos)
      inside = true;
    else if (line.starts_with("End of search list."))
      inside = false;
    else if (inside && line.starts_with(" "))
      out.push_back(fs::path(line.substr(1)).lexically_normal());
  }
  return out;
}

/// The files a make rule of `-MD` names after its target (backslash escapes undone).
std::vector<std::string> dep_files(const std::string &rule) {
  std::vector<std::string> out;
  std::string cur;
  bool target = true;
  const auto flush = [&] {
    if (!cur.empty()) {
      if (target && cur.back() == ':')
        target = false;
      else if (!target)
        out.push_back(cur);
    }
    cur.clear();
  };
  for (std::size_t i = 0; i < rule.size(); ++i) {
    const char c = rule[i];
    if (c == '\\' && i + 1 < rule.size() && rule[i + 1] == '\n') {
      ++i;
      flush();
    } else if (c == '\\' && i + 1 < rule.size() && (rule[i + 1] == ' ' || rule[i + 1] == '#')) {
      cur += rule[++i];
    } else if (c == '$' && i + 1 < rule.size() && rule[i + 1] == '$') {
      cur += rule[++i];
    } else if (c == ' ' || c == '\t' || c == '\n') {
      flush();
    } else {
      cur += c;
    }
  }
  flush();
  return out;
}

bool inside(const fs::path &folder, const fs::path &p) {
  const auto rel = p.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != "..";
}

/// The first file the compiler read that is neither in the submission's folder, nor the ABI's
/// header, nor below one of its system include folders; "" when there is none.
std::string outside_read(const std::vector<std::string> &deps, const std::vector<fs::path> &ok) {
  for (const auto &d : deps) {
    const fs::path p = fs::absolute(fs::path(d)).lexically_normal();
    if (std::none_of(ok.begin(), ok.end(), [&](const fs::path &f) { return inside(f, p); }))
      return p.string();
  }
  return "";
}

/// The sandbox's message: written by it to an open file of the build's folder.
sandbox_commands_result sandbox_message(const fs::path &file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    return {};
  const sandbox_commands_result m = read_sandbox_commands(read_file(file));
  fs::remove(file, ec);
  return m;
}

std::string file_of(const sandbox_commands_result &m, const fs::path &name) {
  for (const auto &[path, bytes] : m.files)
    if (path == name.string())
      return bytes;
  return "";
}

/// What the compiler read (its -MD list): its own files, the ABI's header and the system's
/// headers only, else `r` is refused with the first other file.
void refuse_outside_reads(const sandbox_commands_result &m, const fs::path &sources,
                          const fs::path &out, build_result &r) {
  std::vector<fs::path> allowed = search_dirs(file_of(m, scratch_search));
  allowed.push_back(fs::absolute(sources).lexically_normal());
  allowed.push_back(fs::absolute(out / "include").lexically_normal());
  const std::string deps = file_of(m, scratch_deps);
  const std::string bad = deps.empty() ? std::string("(the compiler listed no files it read)")
                                       : outside_read(dep_files(deps), allowed);
  if (!bad.empty()) {
    r.ok = false;
    r.log = fmt::format("refused: the C source made the compiler read {}, which is neither in "
                        "the submission nor among the compiler's system headers\n{}",
                        bad, r.log);
  }
}

} // namespace

double build_limit_s(const protocol &p) {
  return detail::silence_limit_s(p.measurement.call_timeout());
}

build_result build_c_submission(const fs::path &sources, const std::vector<std::string> &files,
                                const fs::path &out, confine_plan plan,
                                const sandbox_walls &sandbox, double limit_s) {
  build_result r;
  fs::create_directories(out / "include" / "prereg");
  write_file_atomic(out / "include" / "prereg" / "arm_abi.h", arm_abi_source);
  r.library = out / "libsubmission.so";
  const std::string cc = compiler();
  r.command = {cc,
               "-std=c11",
               "-O2",
               "-fPIC",
               "-shared",
               "-I",
               (out / "include").string(),
               "-MD",
               "-MF",
               scratch_deps.string(),
               "-o",
               scratch_library.string()};
  for (const auto &f : files)
    if (fs::path(f).extension() == ".c")
      r.command.push_back((sources / f).string());
  r.command.push_back("-lm");
  sandbox_commands_request req;
  req.commands = {{{cc, "-E", "-v", "-x", "c", "/dev/null", "-o", "/dev/null"}, scratch_search},
                  {r.command, {}}};
  req.fetch = {scratch_library, scratch_deps, scratch_search};
  req.key = sandbox.key;
  req.store = sandbox.store;
  plan.keep.push_back(out);
  const fs::path log = out / "compile.log";
  const fs::path message = out / ".sandbox-message";
  const int fd = ::open(message.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    throw io_error("cannot create the compiler's message file", message.string());
  const int prereg = ::getpid();
  const confined_result c = run_confined_body([&] { run_commands_in_sandbox(req, fd, prereg); },
                                              plan, log, log.string() + ".err", limit_s);
  ::close(fd);
  if (c.facts.half_built())
    throw io_error(
        fmt::format("the walls around the compiler could not be put up: {}", c.facts.reason));
  r.facts = c.facts;
  const sandbox_commands_result m = sandbox_message(message);
  if (!m.head.is_null())
    r.sandbox = {{"layers", m.head.at("isolation").at("layers")},
                 {"reason", m.head.at("isolation").at("reason")}};
  std::string text = read_file(log) + read_file(log.string() + ".err");
  if (text.size() > 4096)
    text = text.substr(text.size() - 4096);
  r.log = text;
  if (c.timed_out) { // an include of a terminal or a pipe, a file that never ends
    r.log = fmt::format("refused: the compiler did not finish within {:g} s (the task's silence "
                        "limit, docs/engine.md \"The parent's bounds\"); it was killed\n{}",
                        limit_s, r.log);
    return r;
  }
  const std::string library = file_of(m, scratch_library);
  r.ok =
      c.exit_code == 0 && !m.head.is_null() && m.head.value("status", 1) == 0 && !library.empty();
  if (r.ok)
    refuse_outside_reads(m, sources, out, r);
  if (r.ok)
    write_file_atomic(r.library, library, 0555);
  if (!r.ok && r.log.empty())
    r.log =
        m.head.is_null()
            ? fmt::format("the compiler's sandbox sent no result (status {})", c.exit_code)
            : fmt::format("the compiler {} ended with status {}", r.command.front(), c.exit_code);
  return r;
}

} // namespace prereg::grade
