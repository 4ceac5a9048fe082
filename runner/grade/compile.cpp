// Building a C source submission: the arm ABI's header written beside the output, the compiler
// run confined (compile.hpp).
#include "grade/compile.hpp"

#include "base/fs.hpp"
#include "prereg/arm_abi_text.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <unistd.h>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

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

} // namespace

build_result build_c_submission(const fs::path &sources, const std::vector<std::string> &files,
                                const fs::path &out, confine_plan plan) {
  build_result r;
  fs::create_directories(out / "include" / "prereg");
  write_file_atomic(out / "include" / "prereg" / "arm_abi.h", arm_abi_source);
  r.library = out / "libsubmission.so";
  r.command = {
      compiler(), "-std=c11",        "-O2", "-fPIC", "-shared", "-I", (out / "include").string(),
      "-o",       r.library.string()};
  for (const auto &f : files)
    if (fs::path(f).extension() == ".c")
      r.command.push_back((sources / f).string());
  r.command.push_back("-lm");
  plan.keep.push_back(out);
  const fs::path log = out / "compile.log";
  const confined_result c = run_confined(r.command, plan, log, log.string() + ".err");
  if (c.facts.half_built())
    throw io_error(
        fmt::format("the walls around the compiler could not be put up: {}", c.facts.reason));
  r.facts = c.facts;
  std::string text = read_file(log) + read_file(log.string() + ".err");
  if (text.size() > 4096)
    text = text.substr(text.size() - 4096);
  r.log = text;
  std::error_code ec;
  r.ok = c.exit_code == 0 && fs::is_regular_file(r.library, ec);
  if (!r.ok && r.log.empty())
    r.log = fmt::format("the compiler {} ended with status {}", r.command.front(), c.exit_code);
  return r;
}

} // namespace prereg::grade
