// C source submissions, built at grading time (docs/grading.md, "C source"): the system's C
// compiler run in the measuring process's sandbox (seccomp, Landlock, no capability, the key
// masked) inside the same walls as a submission's run (the other submissions hidden); the
// library it wrote in its private scratch comes back into the grading's build folder, and a
// build that read a file outside the submission and the system's headers is refused.
#pragma once

#include "base/json.hpp"
#include "grade/confine.hpp"
#include "spec/protocol.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg::grade {

/// What building one C source submission gave.
struct build_result {
  bool ok = false;
  std::filesystem::path library; ///< OUT/libsubmission.so when ok
  std::string log;               ///< the compiler's output (its last 4 KiB)
  std::vector<std::string> command;
  confine_facts facts;
  json sandbox = nullptr; ///< the sandbox's {layers, reason}; null when it sent nothing
};

/// What the compiler's sandbox protects: the signing key (masked) and the store (read-only).
struct sandbox_walls {
  std::filesystem::path key;
  std::filesystem::path store;
};

/// The longest a build may take [s]: the silence limit of task `p` (run/parent_bound.hpp:
/// the larger of its call limit and 60 s, or PREREG_SILENCE_S).
[[nodiscard]] double build_limit_s(const protocol &p);

/// Compiles the .c files of `sources` (a submission's folder) into `out`/libsubmission.so with
/// `$PREREG_CC` (else `cc`): C11, -O2, -fPIC, -shared, the arm ABI's header (compiled into
/// prereg) on the include path, -MD, -lm; confined by `plan`, then in the measuring process's
/// sandbox protecting `sandbox`, writing only in its private scratch. Not ok (with the reason
/// first in the log) when it fails, when it has not finished after `limit_s` seconds (the
/// task's silence limit: killed, with everything it started), or when the files it read (its
/// -MD list) include one outside `sources`, the ABI's header and the compiler's system include
/// folders.
[[nodiscard]] build_result build_c_submission(const std::filesystem::path &sources,
                                              const std::vector<std::string> &files,
                                              const std::filesystem::path &out, confine_plan plan,
                                              const sandbox_walls &sandbox, double limit_s);

} // namespace prereg::grade
